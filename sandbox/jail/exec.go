//go:build linux

// Package jail runs one step (a command, its limits and what it sees) and
// returns its result: a fresh directory, a scrubbed environment, a process
// group, resource limits, a user of its own, new namespaces and a
// filesystem view, a cgroup, as far as the host allows; the time it waited
// for a CPU given back (starve.go). It needs Linux.
package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/verl-score/verl-score/sandbox/cgroup"
	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// Spec is one process to run.
type Spec struct {
	Argv    []string // argv[0] is an absolute path
	Dir     string   // working directory (HOME and TMPDIR too)
	Env     []string
	Stdin   []byte
	Timeout time.Duration
	Lim     Limits
	AsRoot  bool   // keep our own user even where a per-run user is available
	Owned   string // directory handed to the per-run user for the step
	// OwnTree: hand over everything under Owned, not just the directory
	// (a build directory, where the compiler overwrites its outputs).
	OwnTree bool
	// ExtraFiles are passed to the process as fds 3, 4, ... (steps
	// without a view of their own only)
	ExtraFiles []*os.File
	// View is what a contained step adds to the common view; Dir, Argv
	// and Env are then paths inside it.
	View ViewStep
	// Fetch (steps without a view) names files under Dir read back.
	Fetch []string
	// Forkable: a Python run the fork server may start (sandbox/forkserver).
	Forkable bool
	// MaxOutput, if set, is what the step keeps of each stream and
	// fetched file instead of the Runner's (a repository's test log).
	MaxOutput int
	// Image, if set, is the step's root: a container image's instead of
	// the view (a contained Runner only; see ImageRoot).
	Image *ImageRoot
	// MergeStderr sends stderr to the stdout pipe (a test binary, whose
	// output `go test` prints as one stream).
	MergeStderr bool
}

func (s *Spec) chownOwned(uid int) error {
	if s.OwnTree {
		return ChownTree(s.Owned, uid, uid)
	}
	return os.Lchown(s.Owned, uid, uid)
}

// Isolation is what the host allows, probed once (Probe).
type Isolation struct {
	PerRunUser bool // root: each step runs as a user of its own
	NetNS      bool // each step gets an empty network namespace
	UserNS     bool // the namespaces need a user namespace (not root)
	// contained: each step runs under an init of its own in new mount,
	// PID, IPC and UTS namespaces too, and sees only its view.
	Contained bool
	SelfExe   string // the executable that becomes the init
	NprocFlag string // the wrapper shell's ulimit flag for processes ("" if none)
	StackHard int64  // hard stack limit in bytes (-1 = unlimited)
	Notes     []string
}

// WrapperShell sets a step's limits and then execs its program.
const WrapperShell = "/bin/sh"

// Probe finds what the host allows: none turns the namespace and user
// protections off, basic keeps the per-run user and the network
// namespace but no filesystem view.
func Probe(none, basic bool) Isolation {
	iso := Isolation{StackHard: -1}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err == nil && rl.Max != ^uint64(0) {
		iso.StackHard = int64(rl.Max)
	}
	// dash calls the process limit -p, bash -u.
	for _, f := range []string{"-u", "-p"} {
		if exec.Command(WrapperShell, "-c", "ulimit "+f).Run() == nil {
			iso.NprocFlag = f
			break
		}
	}
	if none {
		iso.Notes = append(iso.Notes, "isolation off: runs share this user and its network")
		return iso
	}
	if os.Geteuid() == 0 {
		iso.PerRunUser = true
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		iso.NetNS = c.Run() == nil
	} else {
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		}
		if c.Run() == nil {
			iso.NetNS, iso.UserNS = true, true
		}
		iso.Notes = append(iso.Notes, "running without per-run user protection (not root): no fork-bomb limit, "+
			"processes that leave their process group may outlive a run, files may be written wherever this user can write")
	}
	if !iso.NetNS {
		iso.Notes = append(iso.Notes, "running without network protection: the kernel refused a new network namespace")
	} else if basic {
		iso.Notes = append(iso.Notes, "isolation basic: runs have no filesystem view, PID or IPC namespace of their own")
	} else {
		// New derives the view and proves it works; here only whether the
		// init can be started at all.
		if exe, err := os.Executable(); err == nil {
			iso.Contained, iso.SelfExe = true, exe
		} else {
			iso.Notes = append(iso.Notes, "running without a filesystem view of its own per run: cannot find this executable: "+
				""+err.Error())
		}
	}
	if iso.NprocFlag == "" && iso.PerRunUser {
		iso.Notes = append(iso.Notes, "running without a process-count limit: "+WrapperShell+" has no ulimit flag for it")
	}
	return iso
}

// uidPool hands out user ids for steps. It is process-wide because user ids
// are: two Locals in one process must never share one, since everything a
// step's user owns is killed or removed when the step ends. The pid is part
// of the id so that other verl-score processes on the host use other ids.
type uidPool struct {
	mu   sync.Mutex
	free []uint32
	cond *sync.Cond
}

const UIDSlots = 256

var stepUIDs = newUIDPool()

func newUIDPool() *uidPool {
	p := &uidPool{}
	p.cond = sync.NewCond(&p.mu)
	base := uint32(0x40000000) | uint32(os.Getpid()&0x3FFFFF)<<8
	for i := UIDSlots - 1; i >= 0; i-- {
		p.free = append(p.free, base|uint32(i))
	}
	return p
}

func (p *uidPool) get() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) == 0 {
		p.cond.Wait()
	}
	// The user freed longest ago: what a step left behind as it ended (a
	// namespace of many processes dies over a while) is gone by the time
	// its user comes round again, and never counts as a later step's.
	u := p.free[0]
	p.free = p.free[1:]
	return u
}

func (p *uidPool) put(u uint32) {
	p.mu.Lock()
	p.free = append(p.free, u)
	p.mu.Unlock()
	p.cond.Signal()
}

// Rlimits are a step's limits in the kernel's units (bytes, seconds,
// counts; 0: not set), in the order of rlimitNames.
func (r *Runner) Rlimits(lim Limits) [7]int64 {
	stack := int64(lim.StackMB) << 20
	if r.Iso.StackHard >= 0 && stack > r.Iso.StackHard {
		stack = r.Iso.StackHard
	}
	var nproc int64
	if r.Iso.NprocFlag != "" && r.Iso.PerRunUser {
		nproc = int64(lim.Nproc)
	}
	return [7]int64{int64(lim.CPUSec), int64(lim.FsizeMB) << 20, int64(lim.Nofile),
		int64(lim.AddressMB) << 20, int64(lim.DataMB) << 20, stack, nproc}
}

// Wrap prefixes argv with the shell that sets the limits and then execs it.
// Where join names fds, the shell first joins the run's group through them
// (writing "0" to each) and closes them.
func (r *Runner) Wrap(argv []string, lim Limits, join []int) []string {
	var b strings.Builder
	for _, fd := range join {
		fmt.Fprintf(&b, "echo 0 >&%d && exec %d>&- && ", fd, fd)
	}
	b.WriteString("umask 022 && ulimit -c 0")
	// The shell's units: seconds, 512-byte blocks, count, KiB, KiB, KiB, count.
	flags := [7]string{"-t", "-f", "-n", "-v", "-d", "-s", r.Iso.NprocFlag}
	units := [7]int64{1, 512, 1, 1024, 1024, 1024, 1}
	for i, v := range r.Rlimits(lim) {
		if v > 0 {
			fmt.Fprintf(&b, " && ulimit %s %d", flags[i], v/units[i])
		}
	}
	b.WriteString(` && exec "$@"`)
	return append([]string{WrapperShell, "-c", b.String(), "sh"}, argv...)
}

// Attr is how a step's first process is started: in a group of its
// own, killed with us, and in new namespaces as far as the host allows (a
// contained step's init in all of them).
func (r *Runner) Attr(uid int) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	contained := r.Iso.Contained
	if !contained && uid >= 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	if r.Iso.NetNS || contained {
		attr.Cloneflags = syscall.CLONE_NEWNET
		if contained {
			attr.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
		}
		if r.Iso.UserNS {
			// One user: ours, root inside, so that the init may mount.
			inner := os.Getuid()
			if contained {
				inner = 0
			}
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: inner, HostID: os.Getuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: inner, HostID: os.Getgid(), Size: 1}}
		}
	}
	return attr
}

// Runner runs steps. Its fields are set once, before the first Run.
type Runner struct {
	Iso       Isolation
	View      *View           // what contained steps see; nil without the view
	Cgroups   *cgroup.Manager // a group per run; nil without
	MaxOutput int             // bytes kept per stream, and per fetched file
	TempDir   string          // where per-run users may have left files
	Warn      func(key, msg string)
	Now       func() time.Time
	// Starter, if set, may start a Spec marked Forkable instead of an
	// exec (the Python fork server).
	Starter Starter
	// Filter is the seccomp filter (sock_filter records) every contained
	// step's program starts under, with no capability and no_new_privs;
	// nil: those alone (--seccomp=off).
	Filter []byte

	// CPUs is how many CPUs steps may run on (NewRunner: GOMAXPROCS, which
	// follows the affinity mask and a cgroup's CPU limit); the starvation
	// rule asks whether a step had them all (starve.go).
	CPUs int

	StarveGrants atomic.Int64 // times a step was given back its wait (starve.go)
	StartCosts   StartCosts   // what starters' runs cost (CPU, page faults), as they report it

	sem chan struct{}
}

// NewRunner is a Runner that runs at most concurrency steps at once.
func NewRunner(iso Isolation, concurrency, maxOutput int, tempDir string, warn func(key, msg string)) *Runner {
	return &Runner{
		Iso:       iso,
		MaxOutput: maxOutput,
		TempDir:   tempDir,
		Warn:      warn,
		Now:       time.Now,
		CPUs:      runtime.GOMAXPROCS(0),
		sem:       make(chan struct{}, concurrency),
	}
}

// Slots is how many steps the Runner runs at once.
func (r *Runner) Slots() int { return cap(r.sem) }

// Starter starts a step's first process another way than by exec (the
// Python fork server): declared here, where it is used.
type Starter interface {
	// Start starts s as uid with this stdio; its first process writes
	// "0" to each of join. An error means nothing started: the step
	// goes the plain way.
	Start(s *Spec, uid int, stdin, stdout, stderr *os.File, join []*os.File) (*Proc, error)
	// Lost says that a step Start started never ran its program; the
	// step then runs again the plain way.
	Lost(why string)
}

// Proc is a started step.
type Proc struct {
	Done       <-chan struct{}  // closed when every process of the step has ended
	Kill       func()           // ends the step now; may be called again
	Report     *InitReport      // a contained step's init reports here
	ViaStarter bool             // started by the Python fork server
	state      *os.ProcessState // exec'd steps, once done
	waitErr    error
	pid        int // an exec'd step's first process; 0 when forked
}

// ErrNotStarted: a Starter could not start the step's program, so the
// step runs again the plain way.
var ErrNotStarted = errors.New("the starter could not start the program")

// Run runs one process to completion or timeout under the Runner's
// concurrency limit. An error means the sandbox failed, not the program.
func (r *Runner) Run(ctx context.Context, s Spec) (*Result, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.sem }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	uid := -1
	if s.Image != nil && !r.Iso.Contained {
		return nil, errors.New("a step in an image's root needs the contained sandbox (namespaces and a filesystem view)")
	}
	if r.Iso.PerRunUser && !s.AsRoot && s.Image == nil {
		u := stepUIDs.get()
		defer stepUIDs.put(u)
		uid = int(u)
		if s.Owned != "" {
			if err := s.chownOwned(uid); err != nil {
				return nil, fmt.Errorf("hand directory to step user: %w", err)
			}
		}
	}
	grp := r.group(s.Lim)
	if grp != nil {
		defer r.Cgroups.Put(grp)
	}
	res, err := r.runAs(ctx, &s, uid, s.Forkable, grp)
	if errors.Is(err, ErrNotStarted) {
		res, err = r.runAs(ctx, &s, uid, false, grp)
	}
	return res, err
}

// start starts the step's first process: through the fork server
// where it may, else this executable as the contained step's init, else
// the wrapped program itself.
func (r *Runner) start(s *Spec, uid int, fork bool, grp *cgroup.Run, stdin, stdout, stderr *os.File) (*Proc, error) {
	var join []*os.File // the first process writes "0" to each: it joins the run's group
	if grp != nil {
		join = grp.JoinFiles()
	}
	if fork && uid >= 0 && r.Starter != nil {
		if p, err := r.Starter.Start(s, uid, stdin, stdout, stderr, join); err == nil {
			return p, nil
		}
	}
	attr := r.Attr(uid)
	if s.Image != nil {
		attr = s.Image.attr()
	}
	var cmd *exec.Cmd
	var report *InitReport
	if r.Iso.Contained {
		argv := r.Wrap(s.Argv, s.Lim, nil)
		var sc nsinit.Script
		if len(join) > 0 {
			fds := make([]string, len(join))
			for i := range join {
				fds[i] = nsinit.Itoa(5 + i) // after the script and report
			}
			sc.Op(nsinit.OpJoin, fds...)
		}
		view := r.View.Script
		extra := join
		if s.Image != nil {
			view = r.View.ImageScript
			// The image's root goes to the init as an fd: it reaches the
			// unpacked tree through it (/proc/self/fd/N) however closed the
			// store's parent directories are to the image's root user.
			lower, err := openTree(s.Image.Lower)
			if err != nil {
				return nil, fmt.Errorf("the image's root %s: %w", s.Image.Lower, err)
			}
			defer lower.Close()
			s.Image.lowerFD = 5 + len(join)
			extra = append(join[:len(join):len(join)], lower)
		}
		script := append(sc.Bytes(), view(s, uid, argv, r.maxOutput(s))...)
		script = append(script, r.LockdownOp()...)
		var err error
		if cmd, report, err = r.InitCommand(script, attr, extra...); err != nil {
			return nil, err
		}
		if s.Image != nil {
			// The init starts as the image's root, a host user that may not
			// reach this executable by its path: the link reaches it.
			cmd.Path = "/proc/self/exe"
		}
	} else {
		fds := make([]int, len(join))
		for i := range join {
			fds[i] = 3 + len(s.ExtraFiles) + i
		}
		argv := r.Wrap(s.Argv, s.Lim, fds)
		extra := append(s.ExtraFiles[:len(s.ExtraFiles):len(s.ExtraFiles)], join...)
		cmd = &exec.Cmd{Path: argv[0], Args: argv, Dir: s.Dir, Env: s.Env, SysProcAttr: attr, ExtraFiles: extra}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Start()
	if report != nil {
		report.Started(err == nil)
	}
	if err != nil {
		if report != nil {
			report.Close()
		}
		return nil, err
	}
	done := make(chan struct{})
	p := &Proc{Done: done, Report: report, pid: cmd.Process.Pid}
	pgid := cmd.Process.Pid
	p.Kill = func() { syscall.Kill(-pgid, syscall.SIGKILL) }
	go func() {
		p.state, p.waitErr = cmd.Process.Wait()
		close(done)
	}()
	return p, nil
}

func (r *Runner) maxOutput(s *Spec) int {
	if s.MaxOutput > 0 {
		return s.MaxOutput
	}
	return r.MaxOutput
}

// LockdownOp is the script record that starts a contained step's program
// locked down: no capability, no_new_privs, the Runner's filter.
func (r *Runner) LockdownOp() []byte {
	var sc nsinit.Script
	sc.Op(nsinit.OpLockdown, string(r.Filter))
	return sc.Bytes()
}

// group is a cgroup for one step, bounded for its limits; nil where the
// sandbox has none (a failure to make one is said once, and the step runs
// under its per-process limits alone).
func (r *Runner) group(lim Limits) *cgroup.Run {
	if r.Cgroups == nil {
		return nil
	}
	grp, err := r.Cgroups.Get(cgroup.Limits{MemoryBytes: RunMemoryBytes(lim), Pids: lim.Nproc + runGroupExtraPids})
	if err != nil {
		r.Warn("cgroup", "a run went without a cgroup of its own: "+err.Error())
		return nil
	}
	return grp
}

// RunMemoryBytes bounds the memory of all a run's processes together:
// four processes at the per-process limit, and never below 4 GiB, so that
// a normal program (one process, or a few threads) is bounded by the
// per-process rule alone, as on SandboxFusion.
func RunMemoryBytes(lim Limits) int64 {
	if lim.GroupMB > 0 {
		return int64(lim.GroupMB) << 20
	}
	return max(4*int64(lim.AddressMB)<<20, 4<<30)
}

// runGroupExtraPids is room in a run's process bound for what starts the
// program (the init, the wrapper shell) beside the per-user limit.
const runGroupExtraPids = 8

// procs are the /proc directories of a step's live processes: its
// group's where it has one, else found by user or PID namespace.
func (r *Runner) procs(grp *cgroup.Run, uid, pid int, age time.Duration) []string {
	if grp == nil {
		return stepTasks(uid, pid, age)
	}
	var out []string
	for _, p := range grp.Pids() {
		out = append(out, "/proc/"+strconv.Itoa(p))
	}
	return out
}

// OpenPipes opens n pipes and returns their ends, the read end first for
// each; on an error none is left open.
func OpenPipes(n int) ([]*os.File, error) {
	ends := make([]*os.File, 0, 2*n)
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range ends {
				f.Close()
			}
			return nil, fmt.Errorf("create pipe: %w", err)
		}
		ends = append(ends, r, w)
	}
	return ends, nil
}

func (r *Runner) runAs(ctx context.Context, s *Spec, uid int, fork bool, grp *cgroup.Run) (*Result, error) {
	sio, err := openStepIO(s, uid)
	if err != nil {
		return nil, err
	}
	start := r.Now()
	p, err := r.start(s, uid, fork, grp, sio.progIn, sio.progOut, sio.progErr)
	sio.closeProgramEnds()
	if err != nil {
		sio.closeOurs()
		if r.Iso.Contained {
			return nil, fmt.Errorf("start the step's init: %w", err)
		}
		// The server reports a step it could not start as status Error.
		return &Result{Outcome: NotStarted, Stderr: "exception on running command: " + err.Error()}, nil
	}
	if p.Report != nil {
		defer p.Report.Close()
	}
	sio.pump(s.Stdin, r.maxOutput(s))
	// A contained step's clock starts when its init starts the program,
	// not while it builds the view.
	if p.Report != nil {
		select {
		case <-p.Report.startedC:
			start = r.Now()
		case <-p.Done:
		case <-ctx.Done():
		case <-time.After(initSetupTimeout):
		}
	}
	end := r.wait(ctx, s, p, grp, uid, start)
	cpu := r.endStep(p, grp, uid)
	sio.finish()
	if end.cancelled {
		return nil, ctx.Err()
	}
	if p.waitErr != nil {
		return nil, fmt.Errorf("wait for step: %w", p.waitErr)
	}
	return r.collect(s, p, end, cpu, sio)
}

// stepIO is a step's three pipes: the program's ends, and ours, with what
// is read from them.
type stepIO struct {
	progIn, progOut, progErr *os.File // the program's (its stderr may be its stdout's pipe)
	progErrPipe              *os.File // the stderr pipe's write end, closed with the others
	inW, outR, errR          *os.File
	stdout, stderr           *CappedBuffer
	wg                       sync.WaitGroup
}

func openStepIO(s *Spec, uid int) (*stepIO, error) {
	pipes, err := OpenPipes(3) // stdin, stdout, stderr
	if err != nil {
		return nil, err
	}
	if uid >= 0 {
		// The program's ends belong to its user, so that it can open
		// them again by name (/dev/stdin, /proc/self/fd/1) as a program
		// of the pipes' owner can, which SandboxFusion's always is.
		for _, f := range []*os.File{pipes[0], pipes[3], pipes[5]} {
			_ = f.Chown(uid, uid)
		}
	}
	sio := &stepIO{progIn: pipes[0], progOut: pipes[3], progErr: pipes[5], progErrPipe: pipes[5],
		inW: pipes[1], outR: pipes[2], errR: pipes[4]}
	if s.MergeStderr {
		sio.progErr = pipes[3]
	}
	return sio, nil
}

// closeProgramEnds closes this process's copies of the program's ends.
func (sio *stepIO) closeProgramEnds() {
	sio.progIn.Close()
	sio.progOut.Close()
	sio.progErrPipe.Close()
}

func (sio *stepIO) closeOurs() {
	sio.outR.Close()
	sio.errR.Close()
	sio.inW.Close()
}

// pump writes stdin to the program and reads its output, max bytes of
// each stream kept.
func (sio *stepIO) pump(stdin []byte, max int) {
	sio.stdout, sio.stderr = &CappedBuffer{max: max}, &CappedBuffer{max: max}
	sio.wg.Add(3)
	go func() { defer sio.wg.Done(); sio.stdout.Drain(sio.outR) }()
	go func() { defer sio.wg.Done(); sio.stderr.Drain(sio.errR) }()
	go func() {
		defer sio.wg.Done()
		sio.inW.Write(stdin) // a program that does not read its input is no error
		sio.inW.Close()
	}()
}

// finish waits for the pumps, once the step has ended. Output and input
// pipes end when the last holder dies; a holder that escaped (possible
// only without a user of its own) cannot stall us.
func (sio *stepIO) finish() {
	deadline := time.Now().Add(500 * time.Millisecond)
	sio.outR.SetReadDeadline(deadline)
	sio.errR.SetReadDeadline(deadline)
	sio.inW.SetWriteDeadline(deadline)
	sio.wg.Wait()
	sio.outR.Close()
	sio.errR.Close()
}

// stepEnd is how a step's wait ended.
type stepEnd struct {
	timedOut, cancelled, starved bool
	waited                       time.Duration // the busiest thread's wait at the last limit
	elapsed                      time.Duration
}

// wait waits for the step to end, for its time limit (with the time it
// waited for a CPU given back, starve.go) or for ctx.
func (r *Runner) wait(ctx context.Context, s *Spec, p *Proc, grp *cgroup.Run, uid int, start time.Time) stepEnd {
	timer := time.NewTimer(s.Timeout)
	defer timer.Stop()
	var end stepEnd
	var granted time.Duration // time given back for waiting (starve.go)
	ending := false           // the program had ended at a limit (starve.go)
	for {
		select {
		case <-p.Done:
		case <-timer.C:
			if r.Iso.Contained || uid >= 0 || grp != nil {
				elapsed := r.Now().Sub(start)
				procs := programs(r.procs(grp, uid, p.pid, elapsed))
				c := readStepCPU(procs)
				group := r.groupCPU(grp)
				if !ending && over(procs, c, group, s.Timeout) {
					// The program is over, or all but (starve.go); its end
					// is on its way.
					ending = true
					timer.Reset(endedGrace)
					continue
				}
				if group != nil {
					// The group counts the CPU of processes that ended too.
					c.run = max(c.run, *group)
				}
				end.waited = c.busiestWait
				extra, st := starvation(s.Timeout, elapsed, granted, r.CPUs, c)
				if live := programs(procs); extra == 0 && !st && !ending &&
					over(live, readStepCPU(live), r.groupCPU(grp), s.Timeout) {
					// It ended while it was read (the exit of a process
					// with many threads takes a while on a loaded machine).
					ending = true
					timer.Reset(endedGrace)
					continue
				}
				if extra > 0 {
					granted += extra
					r.StarveGrants.Add(1)
					timer.Reset(extra)
					continue
				}
				end.starved = st
			}
			end.timedOut = true
		case <-ctx.Done():
			end.cancelled = true
		}
		end.elapsed = r.Now().Sub(start)
		return end
	}
}

// groupCPU is the CPU time grp counted, nil without a group.
func (r *Runner) groupCPU(grp *cgroup.Run) *time.Duration {
	if grp == nil {
		return nil
	}
	d := grp.CPU()
	return &d
}

// endStep leaves nothing of the step alive: the group first, then (as a
// user of its own) everything that user still runs. A contained step's
// namespace dies with its init. It returns the CPU time the group counted.
func (r *Runner) endStep(p *Proc, grp *cgroup.Run, uid int) time.Duration {
	p.Kill()
	<-p.Done
	p.Kill()
	var cpu time.Duration
	if grp != nil {
		grp.Kill() // what left the step's process group (isolation basic)
		cpu = grp.CPU()
	}
	if uid >= 0 && !r.Iso.Contained {
		killUser(uint32(uid))
		removeUserFiles(uint32(uid), r.TempDir)
	}
	return cpu
}

// collect is the step's result: its output, how it ended and its exit
// code (from its init's report where it has one) and the files read back.
func (r *Runner) collect(s *Spec, p *Proc, end stepEnd, cpu time.Duration, sio *stepIO) (*Result, error) {
	res := &Result{
		Elapsed: end.elapsed,
		Stdout:  sio.stdout.String("stdout"),
		Stderr:  sio.stderr.String("stderr"),
		CPU:     cpu,
		Waited:  end.waited,
	}
	if sio.stdout.dropped > 0 {
		res.Stderr += sio.stdout.note("stdout")
	}
	if sio.stderr.dropped > 0 {
		res.Stderr += sio.stderr.note("stderr")
	}
	if end.timedOut {
		res.Outcome, res.Starved = TimedOut, end.starved
		return res, nil
	}
	var ws syscall.WaitStatus
	if p.Report != nil {
		ir, err := p.Report.result(p.state)
		if err != nil {
			if p.ViaStarter && !p.Report.hasStarted() {
				// The program never started: it runs again the plain way.
				r.Starter.Lost(err.Error())
				return nil, ErrNotStarted
			}
			return nil, err
		}
		if ir.noStart != "" {
			return &Result{Outcome: NotStarted, Stderr: ir.noStart}, nil
		}
		ws, res.Files = ir.status, ir.files
		res.Elapsed = ir.elapsed
		if ir.cost != nil {
			r.StartCosts.add(ir.cost)
		}
	} else {
		ws, _ = p.state.Sys().(syscall.WaitStatus)
		res.Files = fetchFiles(s.Dir, s.Fetch, r.maxOutput(s))
	}
	rc := ws.ExitStatus()
	if ws.Signaled() {
		rc = -int(ws.Signal())
	}
	res.ExitCode = &rc
	return res, nil
}

// CappedBuffer keeps the first max bytes written and counts the rest.
type CappedBuffer struct {
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *CappedBuffer) Drain(f *os.File) {
	chunk := make([]byte, 64<<10)
	for {
		n, err := f.Read(chunk)
		if n > 0 {
			keep := n
			if room := c.max - c.buf.Len(); keep > room {
				keep = room
			}
			c.buf.Write(chunk[:keep])
			c.dropped += int64(n - keep)
		}
		if err != nil {
			return
		}
	}
}

func (c *CappedBuffer) String(string) string { return strings.ToValidUTF8(c.buf.String(), "\uFFFD") }

func (c *CappedBuffer) note(stream string) string {
	return fmt.Sprintf(
		"\n[verl-score sandbox: %s cut: kept the first %d bytes, discarded %d more]\n",
		stream,
		c.buf.Len(),
		c.dropped,
	)
}

// ChownTree gives a directory tree to uid:gid.
func ChownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// killUser kills every process of uid, again until none is left (a fork
// loop may add some while we look). Zombies are skipped: they are dead and
// wait for their reaper.
func killUser(uid uint32) {
	for pass := 0; pass < 200; pass++ {
		d, err := os.Open("/proc")
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		alive := 0
		for _, name := range names {
			if name[0] < '0' || name[0] > '9' {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+name, &st) != nil || st.Uid != uid {
				continue
			}
			pid, err := strconv.Atoi(name)
			if err != nil {
				continue
			}
			if isZombie(name) {
				continue
			}
			alive++
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if alive == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func isZombie(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true // gone
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// sharedWritable are the host's world-writable directories: a step user
// could leave files there, so they are removed after each step.
var sharedWritable = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock"}

func removeUserFiles(uid uint32, tempDir string) {
	dirs := sharedWritable
	if tempDir != "" && !slices.Contains(dirs, filepath.Clean(tempDir)) {
		dirs = append(dirs[:len(dirs):len(dirs)], tempDir)
	}
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			p := filepath.Join(d, n)
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil && st.Uid == uid {
				os.RemoveAll(p)
			}
		}
	}
}

// NewCappedBuffer keeps the first max bytes written to it.
func NewCappedBuffer(max int) *CappedBuffer { return &CappedBuffer{max: max} }

// HoldAllButOne takes every slot but one, as the steps in progress end,
// so that the steps run next go alone; release gives them back.
func (r *Runner) HoldAllButOne(ctx context.Context) (release func(), err error) {
	held := 0
	release = func() {
		for range held {
			<-r.sem
		}
	}
	for held < cap(r.sem)-1 {
		select {
		case r.sem <- struct{}{}:
			held++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}
