//go:build linux

package forkserver

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// The Python fork server. A contained Python run costs a new interpreter
// (about 15 ms of start-up) on top of its namespaces and view. The fork
// server is one interpreter started once, the way every run starts it:
// `python3 /sandbox/solution.py` in a contained step's view, with the run's
// environment, as root of that view. Its user site's usercustomize runs
// forkserver.py, which stops the start-up at its very end, unmounts the
// server's own space and forks for each run. The server's init (nsinit's
// serve) gives each run a PID 1 of its own (a 129-byte program that
// pauses) in a new PID namespace and a network namespace, and is the
// parent of its program (the server forks it with CLONE_PARENT), which it
// reaps and reports on: the server's one thread only forks. The program
// is a fork that takes new mount, IPC and UTS namespaces and the network one,
// mounts the run's space from the same script an init would get, takes
// the run's limits, user, directory and pipes, drops what the server
// imported, and lets the interpreter finish its start-up, which opens the
// run's /sandbox/solution.py and runs it as __main__. What the program
// sees is what a plain start shows it; the tests compare the two
// (TestForkServerLooksLikeAPlainStart, TestForkServerFastExit). A program
// whose exit nothing can observe ends without the interpreter's
// finalization, which would copy most of the pages it shares with the
// server.
//
// It runs where the full containment does (root, the filesystem view);
// elsewhere, with Options.NoFastPaths, or when it fails, runs start the
// plain way.

//go:embed forkserver.py
var forkServerSource string

// forkServerStart is the server's usercustomize.py. It notes the address
// space a plain start has at this point before it compiles the server,
// whose compilation grows the heap, and runs the server in its own
// namespace, as the usercustomize module.
const forkServerStart = `import os as _verl_os
_verl_fd = _verl_os.open("/proc/self/statm", _verl_os.O_RDONLY)
_verl_plain_vsize = int(_verl_os.read(_verl_fd, 64).split()[0]) * _verl_os.sysconf("SC_PAGE_SIZE")
_verl_os.close(_verl_fd)
with open(_verl_os.path.join(_verl_os.path.dirname(__file__), "verl_score_forkserver.py"), "rb") as _verl_f:
    _verl_code = compile(_verl_f.read(), _verl_f.name, "exec")
exec(_verl_code)
`

// opRlimits is the fork server's extra script record: the program's limits
// in the kernel's units, in the order of Local.rlimits.
const opRlimits = 'u'

// forkServer is one running server. A Local has forkSlots of them per
// stack limit, since the stack limit at exec shapes the address space: a
// server handles one event at a time (a fork, a program's end), so with
// one the runs of several cores queue behind each other's.
type forkServer struct {
	ctl      int      // our end of the SOCK_SEQPACKET control socket
	env      []string // the environment it started with, and its runs get
	pgid     int
	dead     atomic.Bool
	inFlight atomic.Int32 // runs started and not yet ended
	exited   chan struct{}
	stderr   *jail.CappedBuffer
}

// forkKey names a server: its stack limit, whether it has run the
// Local's PythonPrelude, and its slot.
type forkKey struct {
	stackMB int
	prelude bool
	slot    int
}

// Pool is the fork servers of one sandbox: it starts the Python runs the
// jail's Runner marks Forkable, as a jail.Starter.
type Pool struct {
	Jail        *jail.Runner
	Python      string   // python3's path ("" without)
	Env         []string // the runs' environment, and the servers'
	Argv        []string // how a plain run starts: python3 /sandbox/solution.py
	Source      string   // the program's file name in the run directory
	Prelude     string   // statements many programs begin with, run once by a server of their own
	Concurrency int      // steps the sandbox runs at once
	Off         string   // why the fork server is not used ("" where it may be)

	Forked      atomic.Int64 // runs it started
	PreludeRuns atomic.Int64 // of those, runs whose server had run the prelude

	mu       sync.Mutex
	servers  map[forkKey]*forkServer
	failed   string // why the server could not be used; "" if it could
	lost     int    // runs it failed to start and servers that died
	userSite string
}

var _ jail.Starter = (*Pool)(nil)

var errOff = errors.New("the fork server is not used")

// slots is how many servers a Pool runs per stack limit: one per core it
// runs programs on. Server i is pinned to the i-th CPU this process may
// use (its programs are not): its forks and the page faults that follow
// them then stay on one CPU, whose TLB alone is flushed.
func (p *Pool) slots() int {
	return max(1, min(p.Concurrency, runtime.NumCPU()))
}

// State says whether Python runs go through the fork server here, and
// why not where they do not. A server that cannot start shows only once
// one was tried (doctor runs a probe).
func (p *Pool) State() (using bool, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if why := p.off(); why != "" {
		return false, why
	}
	return true, "runs fork from a pre-started " + p.Python
}

// off says why runs cannot use the fork server, or "" where they can.
// The caller holds p.mu.
func (p *Pool) off() string {
	switch {
	case p.Off != "":
		return p.Off
	case p.Python == "":
		return "no python3"
	}
	return p.failed
}

// Start starts a Forkable step's program from a server (jail.Starter).
func (p *Pool) Start(s *jail.Spec, uid int, stdin, stdout, stderr *os.File, join []*os.File) (*jail.Proc, error) {
	prelude := p.hasPrelude(s)
	fs := p.server(s.Lim, prelude)
	if fs == nil {
		return nil, errOff
	}
	proc, err := fs.start(s, p.script(s, uid), stdin, stdout, stderr, join...)
	if err != nil {
		return nil, err
	}
	p.Forked.Add(1)
	if prelude {
		p.PreludeRuns.Add(1)
	}
	return proc, nil
}

// server returns the server for steps with these limits, starting it on
// first use; nil where runs start the plain way. prelude: the program
// begins with the Pool's Prelude.
func (p *Pool) server(lim jail.Limits, prelude bool) *forkServer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off() != "" {
		return nil
	}
	// The slot with the fewest runs in flight; a slot without a server
	// gets one when the others are busy.
	var key, empty forkKey
	best, hasEmpty := int32(-1), false
	for slot := range p.slots() {
		k := forkKey{lim.StackMB, prelude, slot}
		if fs := p.servers[k]; fs != nil && !fs.dead.Load() {
			if n := fs.inFlight.Load(); best < 0 || n < best {
				key, best = k, n
			}
		} else if !hasEmpty {
			empty, hasEmpty = k, true
		}
	}
	if best != 0 && hasEmpty {
		key = empty
	}
	if fs := p.servers[key]; fs != nil {
		if !fs.dead.Load() {
			return fs
		}
		delete(p.servers, key)
		why := "the Python fork server ended (" + strings.TrimSpace(fs.stderr.String("")) + ")"
		if p.lost++; p.lost >= maxForkLost*p.slots() {
			p.failed = why
			p.Jail.Warn("forkserver", "Python runs start the plain way from now on: "+why)
			return nil
		}
		p.Jail.Warn("forkserver-died", why+"; starting another")
	}
	fs, err := p.startServer(lim, prelude, key.slot)
	if err != nil {
		p.failed = err.Error()
		p.Jail.Warn("forkserver", "Python runs start the plain way: the fork server could not start: "+p.failed)
		return nil
	}
	if p.servers == nil {
		p.servers = map[forkKey]*forkServer{}
	}
	p.servers[key] = fs
	return fs
}

// maxForkLost is how many failures (runs the server could not start,
// servers that died) a Pool takes per server slot before it starts
// Python runs plainly for good.
const maxForkLost = 3

// Lost counts a run the server could not start (jail.Starter).
func (p *Pool) Lost(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost++; p.lost >= maxForkLost*p.slots() && p.failed == "" {
		p.failed = "the fork server could not start runs: " + why
		p.Jail.Warn("forkserver", "Python runs start the plain way from now on: "+p.failed)
	}
}

// startServer starts a server under the stack limit of lim, which runs
// the Pool's Prelude first if prelude is set, pinned to the slot-th CPU.
func (p *Pool) startServer(lim jail.Limits, prelude bool, slot int) (*forkServer, error) {
	if p.userSite == "" {
		// Where site looks for usercustomize with the runs' HOME.
		c := exec.Command(p.Python, "-c", "import site; print(site.getusersitepackages())")
		c.Env = []string{"HOME=" + jail.RunDir}
		out, err := c.Output()
		site, ok := strings.CutPrefix(strings.TrimSpace(string(out)), jail.RunDir+"/")
		if err != nil || !ok {
			return nil, fmt.Errorf("ask python3 for its user site: %v %q", err, out)
		}
		p.userSite = site
	}
	s := jail.Spec{Dir: jail.RunDir, Env: p.Env, Argv: p.Argv}
	// The server unmounts its own space (the mounts of this script) before
	// it serves: runs mount theirs in its view.
	var own nsinit.Script
	p.Jail.View.RunSpace(&own, &s, -1)
	s.View.Files = map[string][]byte{
		p.userSite + "/usercustomize.py":         []byte(forkServerStart),
		p.userSite + "/verl_score_forkserver.py": []byte(forkServerSource),
		p.userSite + "/verl_score_space":         own.Bytes(),
		p.userSite + "/verl_score_cpu":           []byte(strconv.Itoa(slot)),
		// The filter its programs install (empty: none, --seccomp=off).
		p.userSite + "/verl_score_seccomp": p.Jail.Filter,
	}
	if prelude {
		s.View.Files[p.userSite+"/verl_score_prelude.py"] = []byte(p.Prelude)
	}
	var sc nsinit.Script
	sc.Op(nsinit.OpServe, "5")
	script := append(
		p.Jail.View.Script(&s, -1, p.Jail.Wrap(s.Argv, jail.Limits{StackMB: lim.StackMB}, nil), 0),
		sc.Bytes()...)

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "fork server control")
	defer theirs.Close()
	pipes, err := jail.OpenPipes(2) // stdin, stdout and stderr together
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	stdinR, errR, errW := pipes[0], pipes[2], pipes[3]
	defer stdinR.Close()
	pipes[1].Close() // the server never reads its stdin, nor do runs inherit it
	defer errW.Close()
	cmd, report, err := p.Jail.InitCommand(script, p.Jail.Attr(-1), theirs)
	if err != nil {
		errR.Close()
		syscall.Close(fds[0])
		return nil, err
	}
	fs := &forkServer{ctl: fds[0], env: s.Env, exited: make(chan struct{}), stderr: jail.NewCappedBuffer(64 << 10)}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, errW, errW
	err = cmd.Start()
	report.Started(err == nil)
	if err != nil {
		errR.Close()
		syscall.Close(fds[0])
		return nil, fmt.Errorf("start: %w", err)
	}
	fs.pgid = cmd.Process.Pid
	drained := make(chan struct{})
	go func() {
		fs.stderr.Drain(errR)
		close(drained)
	}()
	go func() {
		cmd.Wait()
		// Its stderr is read to the end before anyone may read it: the
		// namespace's processes, the last writers, die with its init.
		<-drained
		fs.dead.Store(true)
		report.Close()
		close(fs.exited)
	}()
	return fs, nil
}

// start sends one step to the server: its script, its stdio, the pipe its
// init reports on, the pipe whose closing kills it, and the files through
// which the program joins its run's cgroup (join).
func (fs *forkServer) start(
	s *jail.Spec,
	script []byte,
	stdin, stdout, stderr *os.File,
	join ...*os.File,
) (*jail.Proc, error) {
	if fs.dead.Load() {
		return nil, jail.ErrNotStarted
	}
	if !slices.Equal(s.Env, fs.env) {
		return nil, errors.New("the run's environment is not the fork server's")
	}
	pipes, err := jail.OpenPipes(3) // script, report, kill
	if err != nil {
		return nil, err
	}
	scriptR, scriptW, repR, repW, killR, killW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	fds := []int{int(scriptR.Fd()), int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()), int(repW.Fd()), int(killR.Fd())}
	for _, f := range join {
		fds = append(fds, int(f.Fd()))
	}
	rights := syscall.UnixRights(fds...)
	err = syscall.Sendmsg(fs.ctl, []byte{'r'}, rights, nil, 0)
	scriptR.Close()
	repW.Close()
	killR.Close()
	if err != nil {
		fs.dead.Store(true)
		scriptW.Close()
		repR.Close()
		killW.Close()
		return nil, jail.ErrNotStarted
	}
	rep := jail.NewInitReport(repR)
	rep.Started(true)
	fs.inFlight.Add(1)
	go func() {
		scriptW.Write(script)
		scriptW.Close()
		<-rep.Ended()
		fs.inFlight.Add(-1)
	}()
	var once sync.Once
	return &jail.Proc{
		Done:       rep.Ended(),
		Report:     rep,
		ViaStarter: true,
		Kill:       func() { once.Do(func() { killW.Close() }) },
	}, nil
}

// script is the script of a step the fork server runs: the step's own
// space over the server's view, the unwrapped program, and its limits.
func (p *Pool) script(s *jail.Spec, uid int) []byte {
	var sc nsinit.Script
	p.Jail.View.RunSpace(&sc, s, uid)
	jail.RunOps(&sc, s, uid, s.Argv, p.Jail.MaxOutput)
	lim := p.Jail.Rlimits(s.Lim)
	args := make([]string, len(lim))
	for i, v := range lim {
		args[i] = nsinit.Itoa(int(v))
	}
	sc.Op(opRlimits, args...)
	return sc.Bytes()
}

// Close ends every server: each sees its control socket close and exits,
// which ends its namespace and whatever was left in it.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fs := range p.servers {
		syscall.Close(fs.ctl)
		select {
		case <-fs.exited:
		case <-time.After(2 * time.Second):
			syscall.Kill(-fs.pgid, syscall.SIGKILL)
			<-fs.exited
		}
	}
	p.servers = nil
}

// hasPrelude says whether the step's Python program begins with the
// Pool's Prelude.
func (p *Pool) hasPrelude(s *jail.Spec) bool {
	pre := p.Prelude
	src := s.View.Files[p.Source]
	return pre != "" && len(src) >= len(pre) && string(src[:len(pre)]) == pre
}

// Losses are the runs the servers failed to start and the servers that
// died, and why Python runs start the plain way for good ("" while they
// need not).
func (p *Pool) Losses() (lost int, failed string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost, p.failed
}

// KillServers kills every running server as a crash would; the next run
// starts another (what its tests exercise).
func (p *Pool) KillServers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fs := range p.servers {
		syscall.Kill(-fs.pgid, syscall.SIGKILL)
		<-fs.exited
	}
}

// PIDs are the process ids of the running servers' interpreters and of
// their inits, as this process sees them. (An init's first child is its
// server; the others are programs.)
func (p *Pool) PIDs() (servers, inits []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fs := range p.servers {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", fs.pgid, fs.pgid))
		if err != nil {
			continue
		}
		inits = append(inits, fs.pgid)
		if f := strings.Fields(string(b)); len(f) > 0 {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				servers = append(servers, pid)
			}
		}
	}
	return servers, inits
}
