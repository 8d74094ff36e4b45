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
	OpTmpfs    = 't' // path, size in MiB, inodes: the root of the view
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
	OpRunSpace = 's' // path, size in MiB, inodes: a tmpfs inside the view
	OpJoin     = 'j' // fds of cgroup.procs files: the init joins each group (its program then starts inside)
	OpServe    = 'v' // fd of the fork server's control socket: the init manages the server's runs (see serve)
	// OpOverlay: path, lower, size in MiB, inodes, the upper's owner
	// (uid, gid): a tmpfs at path of that size holds an overlay's upper
	// and work directories over lower (an image's root, read-only), and
	// the overlay, at path/root, is the root of the view. The tmpfs lives
	// in the step's mount namespace alone: when the step ends, its
	// writes are gone with it.
	OpOverlay = 'o'
	// OpLockdown: the program starts with no capability it could ever
	// gain, no_new_privs, and the seccomp filter given (sock_filter
	// records; "" for none). Not for a serving init, whose server
	// installs it in each of its programs.
	OpLockdown = 'z'
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
	// ReportSetup (a fork-server program, once set up): its CPU time (ns)
	// and minor page faults from the fork to the end of its set-up.
	ReportSetup = 'C'
	// ReportCost (fork server, before ReportExit): the server's CPU time
	// (ns) on the run's start and of that the fork; its init's on the
	// spawn of the run's PID 1; the program's CPU time in all and the
	// PID 1's. (The server does nothing else for a run: its init does,
	// see serve.)
	ReportCost = 'T'
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
