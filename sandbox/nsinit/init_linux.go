//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"
)

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
	st := &step{uid: -1, gid: -1, files: []uintptr{0, 1, 2}, ctl: -1, proc: -1}
	for _, op := range ops {
		st.serving = st.serving || op.Op == OpServe
	}
	for _, op := range ops {
		known, err := st.apply(op)
		if !known {
			return fail(ReportError, "unknown operation "+string(op.Op), nil)
		}
		if err != nil {
			return fail(ReportError, describe(op), err)
		}
	}
	if len(st.argv) == 0 {
		return fail(ReportError, "no program to run", nil)
	}
	pid, srv, t0, code := st.start()
	if code != 0 {
		return code
	}
	ws, code := st.wait(pid, srv)
	if code != 0 {
		return code
	}
	return st.report(ws, monotonic()-t0)
}

// step is what the init's script says: the view as it is built, and the
// program to start in it.
type step struct {
	root             string // the view's root until it is pivoted to
	argv, env, fetch []string
	dir              string
	uid, gid         int // -1: the init's own
	maxFetch         int
	files            []uintptr // the program's fds 0, 1, 2, ...
	ctl, proc        int       // the fork server's control socket and the view's /proc (serving)
	serving          bool
	lockdown         bool
	filter           string
}

// apply carries out one operation of the script; known is false for an
// operation this init does not know.
func (st *step) apply(op Record) (known bool, err error) {
	a := op.Args
	root := st.root
	switch op.Op {
	case OpTmpfs:
		st.root = a[0]
		err = syscall.Mount("tmpfs", st.root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, tmpfsOptions(a))
	case OpOverlay:
		st.root, err = overlayRoot(a)
	case OpRunSpace:
		if err = mkdirAll(root+a[0], 0o755, -1, -1); err == nil {
			err = syscall.Mount("tmpfs", root+a[0], "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, tmpfsOptions(a))
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
		if err == nil && st.serving && st.proc < 0 {
			// A serving init reads its runs' network namespaces
			// through it after the server has unmounted it.
			st.proc, err = syscall.Open(root+a[0], oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		}
	case OpPivot:
		err = pivot(root)
		st.root = ""
	case OpExec:
		st.dir = a[0]
		st.uid, _ = Atoi(a[1])
		st.gid, _ = Atoi(a[2])
		st.argv = a[3:]
	case OpEnv:
		st.env = a
	case OpFetch:
		st.maxFetch, _ = Atoi(a[0])
		st.fetch = a[1:]
	case OpJoin:
		err = join(a)
	case OpServe:
		var ok bool
		if st.ctl, ok = Atoi(a[0]); !ok || st.ctl < 3 {
			err = syscall.EINVAL
		}
	case OpLockdown:
		if st.serving || len(a) != 1 {
			return true, syscall.EINVAL // a server's programs lock themselves down
		}
		st.lockdown, st.filter = true, a[0]
	case OpKeepFds:
		for _, f := range a {
			if fd, ok := Atoi(f); ok && fd > 2 {
				st.files = append(st.files, uintptr(fd))
			}
		}
	default:
		return false, nil
	}
	return true, err
}

// join joins the run's cgroups through their cgroup.procs files' fds.
func join(fds []string) error {
	for _, f := range fds {
		fd, ok := Atoi(f)
		if !ok {
			return syscall.EINVAL
		}
		if err := writeAll(fd, []byte("0")); err != nil {
			return err
		}
		syscall.Close(fd)
	}
	return nil
}

// start starts the program (and, for the fork server, the socket to it),
// locked down where the script says, and returns its pid, the server
// end of a serving init, and when it started; code is the init's exit
// code where it could not.
func (st *step) start() (pid int, srv *server, t0 int64, code int) {
	attr := &syscall.ProcAttr{Dir: st.dir, Env: st.env, Files: st.files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if st.uid >= 0 {
		attr.Sys.Credential = &syscall.Credential{Uid: uint32(st.uid), Gid: uint32(st.gid), Groups: []uint32{}}
	}
	// This process's real user becomes the program's before the program
	// starts (see wait): a program that kills its parent at once must
	// find it already its own. The effective user stays root, so the
	// start below can still take the program's user and groups.
	// (Before the signal handlers go: Go changes the user on every thread
	// through a signal of its own.)
	if st.uid >= 0 {
		syscall.Setresuid(st.uid, -1, -1)
	}
	if st.ctl >= 0 {
		// The server's fd 3 is its end of a socket to this process, which
		// passes it the runs that ctl brings and sees them to their end.
		var err error
		if srv, err = newServer(st.ctl, st.proc); err != nil {
			return 0, nil, 0, fail(ReportError, "the fork server's socket", err)
		}
		attr.Files = append(attr.Files, uintptr(srv.theirs))
	}
	if st.lockdown {
		// On this thread, which starts the program (package
		// initialisation runs locked to the main thread): the program
		// inherits it all. This process is bound by the filter too from
		// here on; it only waits and reads back.
		if err := lockDown(st.filter); err != nil {
			return 0, nil, 0, fail(ReportError, "lock the program down", err)
		}
	}
	// Nothing the program does may end this process, which supervises it:
	// as the namespace's init it gets no signal from inside for which it
	// has no handler, so its handlers go (the Go runtime's own included:
	// this process only starts the program and waits from here on). They
	// go before the start, not after it: a program that signals its parent
	// at once (a C++ one can before this process runs again) would find
	// the Go runtime's handler, and the runtime exits 2 on a SIGTERM,
	// which left the step without a report. Its real user is the
	// program's (set above), so that a program that kills its parent
	// succeeds and goes on, as on SandboxFusion, where that parent is a
	// shell of its own user; not being dumpable, it can still be neither
	// traced nor read through /proc.
	defaultSignals()
	var started Script
	started.Op(ReportStarted)
	writeAll(ReportFd, started.Bytes())
	t0 = monotonic()
	pid, err := syscall.ForkExec(st.argv[0], st.argv, attr)
	if err != nil {
		return 0, nil, 0, fail(ReportNoStart, "exception on running command", err)
	}
	return pid, srv, t0, 0
}

// wait waits for the program's end (a serving init's server: the end of
// the server's runs too); code is the init's exit code where it failed.
func (st *step) wait(pid int, srv *server) (ws syscall.WaitStatus, code int) {
	// The program's ends of the pipes are the only ones left open.
	syscall.Close(0)
	syscall.Close(1)
	syscall.Close(2)
	// The signal handlers went before the start (see start).
	if srv != nil {
		return srv.serve(pid), 0
	}
	for {
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return ws, fail(ReportError, "wait for the program", err)
		}
		if wpid == pid {
			return ws, 0
		}
	}
}

// report writes the program's end: its wait status, how long it ran, and
// the files the script asked to read back.
func (st *step) report(ws syscall.WaitStatus, elapsed int64) int {
	rep := []string{Itoa(int(ws)), Itoa(int(elapsed))}
	for _, name := range st.fetch {
		if name == "" {
			continue
		}
		p := name
		if p[0] != '/' {
			p = st.dir + "/" + name
		}
		if data, ok := readBounded(p, st.maxFetch); ok {
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

// overlayRoot mounts an image's root with a writable layer of its own (see
// OpOverlay) and returns where.
func overlayRoot(a []string) (string, error) {
	if len(a) != 6 {
		return "", syscall.EINVAL
	}
	space, lower := a[0], a[1]
	uid, _ := Atoi(a[4])
	gid, _ := Atoi(a[5])
	if err := syscall.Mount("tmpfs", space, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		tmpfsOptions([]string{space, a[2], a[3]})); err != nil {
		return "", err
	}
	// The upper holds the root directory's own owner and mode: the
	// merged root's come from it.
	for _, d := range []string{"/upper", "/work", "/root", "/lower"} {
		if err := syscall.Mkdir(space+d, 0o755); err != nil {
			return "", err
		}
	}
	// The image's root given as "fd:N", a detached mount of it, is
	// attached here first (move_mount): it reaches a tree whose parent
	// directories the image's root user could not pass.
	if len(lower) > 3 && lower[:3] == "fd:" {
		fd, ok := Atoi(lower[3:])
		if !ok {
			return "", syscall.EINVAL
		}
		if err := moveMount(fd, space+"/lower"); err != nil {
			return "", err
		}
		lower = space + "/lower"
	}
	if err := syscall.Chown(space+"/upper", uid, gid); err != nil {
		return "", err
	}
	opts := "lowerdir=" + lower + ",upperdir=" + space + "/upper,workdir=" + space + "/work"
	if err := syscall.Mount("overlay", space+"/root", "overlay", syscall.MS_NOSUID, opts); err != nil {
		return "", err
	}
	return space + "/root", nil
}

// moveMount attaches the detached mount fd at path (move_mount with
// MOVE_MOUNT_F_EMPTY_PATH).
func moveMount(fd int, path string) error {
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	to, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	const sysMoveMount, emptyPath = 429, 0x4 // the unified table's number, x86-64 and aarch64 alike
	cwd := -100                              // AT_FDCWD
	_, _, errno := syscall.Syscall6(sysMoveMount, uintptr(fd), uintptr(unsafe.Pointer(empty)), uintptr(cwd),
		uintptr(unsafe.Pointer(to)), emptyPath, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// tmpfsOptions are a tmpfs's mount options: its size and, where the
// script gives one, its bound on inodes (files, directories, links).
func tmpfsOptions(a []string) string {
	o := "size=" + a[1] + "m,mode=0755"
	if len(a) > 2 {
		o += ",nr_inodes=" + a[2]
	}
	return o
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
	_, _, errno := syscall.Syscall(
		syscall.SYS_IOCTL,
		uintptr(fd),
		syscall.SIOCSIFFLAGS,
		uintptr(unsafe.Pointer(&ifreq[0])),
	)
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
	name := map[byte]string{OpTmpfs: "mount tmpfs", OpRunSpace: "mount tmpfs", OpBind: "bind", OpMkdir: "mkdir",
		OpFile: "write", OpSymlink: "symlink", OpProc: "mount proc", OpPivot: "pivot_root",
		OpJoin: "join the run's cgroup", OpOverlay: "mount the image's root with its writable layer over"}[op.Op]
	if len(op.Args) > 0 && op.Op != OpPivot {
		arg := op.Args[0]
		if op.Op == OpOverlay && len(op.Args) > 1 {
			arg = op.Args[1]
		}
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
const mountFlagsKept = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC |
	syscall.MS_NOATIME | syscall.MS_NODIRATIME | syscall.MS_RELATIME

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

// defaultSignals sets every signal's disposition to SIG_DFL. A zeroed
// kernel sigaction is SIG_DFL with no flags and an empty mask, whatever
// the architecture's layout, so one buffer serves every signal.
func defaultSignals() {
	var act [4]uint64
	for sig := 1; sig <= 64; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
	}
}
