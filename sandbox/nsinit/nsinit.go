// Package nsinit is the first process of a contained sandbox step. The
// sandbox starts its own executable with EnvMarker set, in new mount, PID,
// IPC, UTS and network namespaces; this package's init function sees the
// marker, builds the step's filesystem view from a script read on fd 3,
// starts the program, reaps every process of the namespace (it is PID 1
// there), and reports on fd 4. When it exits the kernel kills whatever the
// program left behind, so nothing of a step outlives it.
//
// The init function runs before the packages of a large program are
// initialised, so a step pays little more than the exec: this package
// imports nothing but syscall and unsafe, which keeps it early in Go's
// initialisation order.
package nsinit

import (
	"syscall"
	"unsafe"
)

// EnvMarker is the environment variable that turns a process into a step's
// init. Its value must be "1".
const EnvMarker = "VERL_SCORE_SANDBOX_INIT"

// Fds of the init: the script it reads and the report it writes.
const (
	ScriptFd = 3
	ReportFd = 4
)

// Script operations. Each is one byte, an argument count and the arguments.
const (
	OpTmpfs    = 't' // path, size in MiB: the root of the view
	OpBind     = 'b' // source, target, flags (BindWritable, BindDevice, BindFile)
	OpMkdir    = 'd' // path, mode, uid, gid
	OpFile     = 'f' // path, mode, uid, gid, content
	OpSymlink  = 'l' // target, path
	OpProc     = 'p' // path: a procfs of the step's PID namespace
	OpPivot    = 'r' // path: make it / and drop the host's tree
	OpExec     = 'x' // dir, uid, gid (-1 keeps ours), argv...
	OpEnv      = 'e' // the program's environment, one argument each
	OpFetch    = 'g' // max bytes, then paths to read back after the run
	OpKeepFds  = 'k' // fds of the init handed to the program as its fds 3, 4, ...
	OpRunSpace = 's' // path, size in MiB: a tmpfs inside the view
	OpJoin     = 'j' // fds of cgroup.procs files: the init joins each group (its program then starts inside)
)

// Bind flags.
const (
	BindWritable = 1 << iota
	BindDevice
	BindFile
	BindInView // the source is a path inside the view
)

// Report records. The init writes ReportStarted just before the program
// starts, then one of ReportExit or ReportError.
const (
	ReportStarted = 'S'
	ReportExit    = 'R' // wait status, nanoseconds from start to exit, then name/content pairs
	ReportError   = 'E' // the view could not be built: message
	ReportNoStart = 'X' // the program could not be started: message
	ReportFaults  = 'F' // (fork server, before ReportExit) the program's minor page faults
)

// Script builds the bytes of an init script.
type Script struct{ b []byte }

// Op appends one operation.
func (s *Script) Op(op byte, args ...string) {
	s.b = append(s.b, op)
	s.b = appendUvarint(s.b, uint64(len(args)))
	for _, a := range args {
		s.b = appendUvarint(s.b, uint64(len(a)))
		s.b = append(s.b, a...)
	}
}

// Bytes returns the script.
func (s *Script) Bytes() []byte { return s.b }

// Itoa formats an integer argument.
func Itoa(v int) string {
	if v < 0 {
		return "-" + Itoa(-v)
	}
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(buf[i:])
}

// Atoi parses an integer argument.
func Atoi(s string) (int, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// Record is one operation read back from a script or a report.
type Record struct {
	Op   byte
	Args []string
}

// Parse splits a script or a report into its records.
func Parse(b []byte) ([]Record, bool) {
	var out []Record
	for len(b) > 0 {
		r := Record{Op: b[0]}
		b = b[1:]
		n, rest, ok := uvarint(b)
		if !ok || n > uint64(len(rest)) {
			return nil, false
		}
		b = rest
		for i := uint64(0); i < n; i++ {
			l, rest, ok := uvarint(b)
			if !ok || l > uint64(len(rest)) {
				return nil, false
			}
			r.Args = append(r.Args, string(rest[:l]))
			b = rest[l:]
		}
		out = append(out, r)
	}
	return out, true
}

func uvarint(b []byte) (uint64, []byte, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * uint(i))
		if b[i] < 0x80 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

func init() {
	if v, ok := syscall.Getenv(EnvMarker); ok && v == "1" {
		syscall.Exit(run())
	}
}

// fail reports why the step could not be set up.
func fail(op byte, msg string, err error) int {
	if err != nil {
		msg += ": " + err.Error()
	}
	var s Script
	s.Op(op, msg)
	writeAll(ReportFd, s.Bytes())
	return 111
}

func run() int {
	// Nothing in the namespace may read this process's memory or fds
	// through /proc, even where the program runs as the same user.
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	// No fd of ours, nor any our parent left open, reaches the program:
	// it gets 0, 1, 2 and the ones the script names.
	closeOnExecFrom(3)
	script, err := readAll(ScriptFd)
	syscall.Close(ScriptFd)
	if err != nil {
		return fail(ReportError, "read script", err)
	}
	ops, ok := Parse(script)
	if !ok {
		return fail(ReportError, "malformed script", nil)
	}
	// The step's network namespace is new and empty: its loopback comes
	// up, as in SandboxFusion's, so that a program can talk to itself.
	// Nothing leads out of it. Where this fails it stays down.
	loopbackUp()
	// Nothing we mount may reach the host's tree.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fail(ReportError, "make mounts private", err)
	}
	var (
		root             string
		argv, env, fetch []string
		dir              string
		uid, gid         = -1, -1
		maxFetch         int
		files            = []uintptr{0, 1, 2}
	)
	for _, op := range ops {
		a := op.Args
		var err error
		switch op.Op {
		case OpTmpfs:
			root = a[0]
			err = syscall.Mount("tmpfs", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+a[1]+"m,mode=0755")
		case OpRunSpace:
			if err = mkdirAll(root+a[0], 0o755, -1, -1); err == nil {
				err = syscall.Mount("tmpfs", root+a[0], "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+a[1]+"m,mode=0755")
			}
		case OpBind:
			flags, _ := Atoi(a[2])
			src := a[0]
			if flags&BindInView != 0 {
				src = root + src
			}
			err = bind(src, root+a[1], flags)
		case OpMkdir:
			mode, _ := Atoi(a[1])
			u, _ := Atoi(a[2])
			g, _ := Atoi(a[3])
			err = mkdirAll(root+a[0], uint32(mode), u, g)
		case OpFile:
			mode, _ := Atoi(a[1])
			u, _ := Atoi(a[2])
			g, _ := Atoi(a[3])
			err = writeFile(root+a[0], uint32(mode), u, g, a[4])
		case OpSymlink:
			if err = mkdirAll(parent(root+a[1]), 0o755, -1, -1); err == nil {
				err = syscall.Symlink(a[0], root+a[1])
			}
		case OpProc:
			if err = mkdirAll(root+a[0], 0o555, -1, -1); err == nil {
				err = syscall.Mount("proc", root+a[0], "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
			}
		case OpPivot:
			err = pivot(root)
			root = ""
		case OpExec:
			dir = a[0]
			uid, _ = Atoi(a[1])
			gid, _ = Atoi(a[2])
			argv = a[3:]
		case OpEnv:
			env = a
		case OpFetch:
			maxFetch, _ = Atoi(a[0])
			fetch = a[1:]
		case OpJoin:
			for _, f := range a {
				fd, ok := Atoi(f)
				if !ok {
					err = syscall.EINVAL
					break
				}
				if err = writeAll(fd, []byte("0")); err != nil {
					break
				}
				syscall.Close(fd)
			}
		case OpKeepFds:
			for _, f := range a {
				if fd, ok := Atoi(f); ok && fd > 2 {
					files = append(files, uintptr(fd))
				}
			}
		default:
			return fail(ReportError, "unknown operation "+string(op.Op), nil)
		}
		if err != nil {
			return fail(ReportError, describe(op), err)
		}
	}
	if len(argv) == 0 {
		return fail(ReportError, "no program to run", nil)
	}

	attr := &syscall.ProcAttr{Dir: dir, Env: env, Files: files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if uid >= 0 {
		attr.Sys.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	var started Script
	started.Op(ReportStarted)
	writeAll(ReportFd, started.Bytes())
	t0 := monotonic()
	pid, err := syscall.ForkExec(argv[0], argv, attr)
	if err != nil {
		return fail(ReportNoStart, "exception on running command", err)
	}
	// The program's ends of the pipes are the only ones left open.
	syscall.Close(0)
	syscall.Close(1)
	syscall.Close(2)
	var ws syscall.WaitStatus
	for {
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fail(ReportError, "wait for the program", err)
		}
		if wpid == pid {
			break
		}
	}
	elapsed := monotonic() - t0
	rep := []string{Itoa(int(ws)), Itoa(int(elapsed))}
	for _, name := range fetch {
		if name == "" {
			continue
		}
		p := name
		if p[0] != '/' {
			p = dir + "/" + name
		}
		if data, ok := readBounded(p, maxFetch); ok {
			rep = append(rep, name, data)
		}
	}
	var s Script
	s.Op(ReportExit, rep...)
	if writeAll(ReportFd, s.Bytes()) != nil {
		return 112
	}
	return 0
}

// loopbackUp sets the flags of the namespace's "lo" to up and running.
func loopbackUp() bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var ifreq [40]byte // struct ifreq: the name, then the flags as a short
	copy(ifreq[:], "lo")
	*(*uint16)(unsafe.Pointer(&ifreq[syscall.IFNAMSIZ])) = syscall.IFF_UP | syscall.IFF_RUNNING
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifreq[0])))
	return errno == 0
}

// closeOnExecFrom marks every fd from lo up close-on-exec.
func closeOnExecFrom(lo int) {
	const sysCloseRange, closeRangeCloexec = 436, 4 // the same on every architecture
	if _, _, e := syscall.RawSyscall(sysCloseRange, uintptr(lo), ^uintptr(0), closeRangeCloexec); e == 0 {
		return
	}
	var rl syscall.Rlimit
	n := uint64(1024)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<20 {
		n = rl.Cur
	}
	for fd := uintptr(lo); fd < uintptr(n); fd++ {
		syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_SETFD, syscall.FD_CLOEXEC)
	}
}

func describe(op Record) string {
	name := map[byte]string{OpTmpfs: "mount tmpfs", OpRunSpace: "mount tmpfs", OpBind: "bind", OpMkdir: "mkdir", OpFile: "write",
		OpSymlink: "symlink", OpProc: "mount proc", OpPivot: "pivot_root", OpJoin: "join the run's cgroup"}[op.Op]
	if len(op.Args) > 0 && op.Op != OpPivot {
		arg := op.Args[0]
		if op.Op == OpBind && len(op.Args) > 1 {
			arg += " on " + op.Args[1]
		}
		name += " " + arg
	}
	return name
}

// mountFlagsKept are the flags of a mount that a read-only remount of a
// bind of it must repeat (the kernel refuses to drop them where they are
// locked, as in a user namespace).
const mountFlagsKept = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC | syscall.MS_NOATIME | syscall.MS_NODIRATIME | syscall.MS_RELATIME

func bind(src, dst string, flags int) error {
	if flags&BindFile != 0 {
		if err := mkdirAll(parent(dst), 0o755, -1, -1); err != nil {
			return err
		}
		fd, err := syscall.Open(dst, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		syscall.Close(fd)
	} else if err := mkdirAll(dst, 0o755, -1, -1); err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(src, &st); err != nil {
		return err
	}
	mf := uintptr(st.Flags) & mountFlagsKept
	// statfs says relatime with its own bit (ST_RELATIME), not MS_RELATIME.
	const stRelatime = 0x1000
	if st.Flags&stRelatime != 0 {
		mf |= syscall.MS_RELATIME
	}
	mf |= syscall.MS_NOSUID
	if flags&BindDevice == 0 {
		mf |= syscall.MS_NODEV
	} else {
		mf |= syscall.MS_NOEXEC
	}
	if flags&BindWritable == 0 {
		mf |= syscall.MS_RDONLY
	}
	return syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|mf, "")
}

func pivot(root string) error {
	if err := syscall.Chdir(root); err != nil {
		return err
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return err
	}
	// The old root is stacked under the new one: detach it.
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return err
	}
	return syscall.Chdir("/")
}

func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func mkdirAll(p string, mode uint32, uid, gid int) error {
	var st syscall.Stat_t
	if syscall.Stat(p, &st) == nil {
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return syscall.ENOTDIR
		}
		return nil
	}
	if pp := parent(p); pp != p && pp != "/" {
		if err := mkdirAll(pp, 0o755, -1, -1); err != nil {
			return err
		}
	}
	if err := syscall.Mkdir(p, mode); err != nil && err != syscall.EEXIST {
		return err
	}
	// Mkdir honours the umask; the mode (sticky bit too) is meant as given.
	if err := syscall.Chmod(p, mode); err != nil {
		return err
	}
	if uid >= 0 {
		return syscall.Lchown(p, uid, gid)
	}
	return nil
}

func writeFile(p string, mode uint32, uid, gid int, data string) error {
	if err := mkdirAll(parent(p), 0o755, uid, gid); err != nil {
		return err
	}
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_TRUNC|syscall.O_WRONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := writeAll(fd, []byte(data)); err != nil {
		return err
	}
	if err := syscall.Fchmod(fd, mode); err != nil {
		return err
	}
	if uid >= 0 {
		return syscall.Fchown(fd, uid, gid)
	}
	return nil
}

// readBounded reads a regular file of at most max bytes, not following a
// symbolic link at its last component.
func readBounded(p string, max int) (string, bool) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > int64(max) {
		return "", false
	}
	b, err := readAllMax(fd, max)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func readAll(fd int) ([]byte, error) { return readAllMax(fd, 1<<40) }

func readAllMax(fd, max int) ([]byte, error) {
	b := make([]byte, 0, 64<<10)
	for {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), 2*cap(b))
			copy(nb, b)
			b = nb
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if len(b) > max {
			return nil, syscall.EFBIG
		}
	}
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// monotonic is CLOCK_MONOTONIC in nanoseconds.
func monotonic() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
