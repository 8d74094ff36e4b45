//go:build linux

package sandbox

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// The Python fork server. A contained Python run costs a new interpreter
// (about 15 ms of start-up) on top of its namespaces and view. The fork
// server is one interpreter started once, the way every run starts it:
// `python3 /sandbox/solution.py` in a contained step's view, with the run's
// environment, as root of that view. Its user site's usercustomize runs
// forkserver.py, which stops the start-up at its very end, unmounts the
// server's own space and forks for each run. Each run gets a PID 1 of its
// own (a 129-byte program that pauses) in a new PID namespace, and the
// program: a fork that takes new mount, IPC, UTS and network namespaces,
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
	stderr   *cappedBuffer
}

// forkKey names a server: its stack limit, whether it has run the
// Local's PythonPrelude, and its slot.
type forkKey struct {
	stackMB int
	prelude bool
	slot    int
}

// forkSlots is how many servers a Local runs per stack limit: one per
// core it runs programs on, up to 4.
func (l *Local) forkSlots() int {
	return max(1, min(l.opts.Concurrency, runtime.NumCPU(), 4))
}

// forkServers is the Local's set of servers.
type forkServers struct {
	mu       sync.Mutex
	servers  map[forkKey]*forkServer
	failed   string // why the server could not be used; "" if it could
	lost     int    // runs it failed to start and servers that died
	userSite string
}

// ForkServerState says whether Python runs go through the fork server
// here, and why not where they do not. A server that cannot start shows
// only once one was tried (doctor runs a probe).
func (l *Local) ForkServerState() (using bool, detail string) {
	l.forks.mu.Lock()
	defer l.forks.mu.Unlock()
	if why := l.forkServerOff(); why != "" {
		return false, why
	}
	return true, "runs fork from a pre-started " + l.tools["python3"]
}

// forkServerOff says why runs cannot use the fork server, or "" where
// they can. The caller holds l.forks.mu.
func (l *Local) forkServerOff() string {
	switch {
	case l.opts.NoFastPaths:
		return "turned off"
	case !l.iso.contained || !l.iso.perRunUser:
		return "needs the filesystem view and a per-run user (root)"
	case l.tools["python3"] == "":
		return "no python3"
	}
	return l.forks.failed
}

// forkServer returns the server for steps with these limits, starting it
// on first use; nil where runs start the plain way. prelude: the program
// begins with the Local's PythonPrelude.
func (l *Local) forkServer(lim limits, prelude bool) *forkServer {
	f := &l.forks
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.forkServerOff() != "" {
		return nil
	}
	// The slot with the fewest runs in flight; a slot without a server
	// gets one when the others are busy.
	var key, empty forkKey
	best, hasEmpty := int32(-1), false
	for slot := range l.forkSlots() {
		k := forkKey{lim.stackMB, prelude, slot}
		if fs := f.servers[k]; fs != nil && !fs.dead.Load() {
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
	if fs := f.servers[key]; fs != nil {
		if !fs.dead.Load() {
			return fs
		}
		delete(f.servers, key)
		why := "the Python fork server ended (" + strings.TrimSpace(fs.stderr.String("")) + ")"
		if f.lost++; f.lost >= maxForkLost*l.forkSlots() {
			f.failed = why
			l.warn("forkserver", "Python runs start the plain way from now on: "+why)
			return nil
		}
		l.warn("forkserver-died", why+"; starting another")
	}
	fs, err := l.startForkServer(lim, prelude)
	if err != nil {
		f.failed = err.Error()
		l.warn("forkserver", "Python runs start the plain way: the fork server could not start: "+f.failed)
		return nil
	}
	if f.servers == nil {
		f.servers = map[forkKey]*forkServer{}
	}
	f.servers[key] = fs
	return fs
}

// maxForkLost is how many failures (runs the server could not start,
// servers that died) a Local takes per server slot before it starts
// Python runs plainly for good.
const maxForkLost = 3

// forkFailed counts a run the server could not start.
func (l *Local) forkFailed(why string) {
	f := &l.forks
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost++; f.lost >= maxForkLost*l.forkSlots() && f.failed == "" {
		f.failed = "the fork server could not start runs: " + why
		l.warn("forkserver", "Python runs start the plain way from now on: "+f.failed)
	}
}

// startForkServer starts a server under the stack limit of lim, which runs
// the Local's PythonPrelude first if prelude is set.
func (l *Local) startForkServer(lim limits, prelude bool) (*forkServer, error) {
	f := &l.forks
	if f.userSite == "" {
		// Where site looks for usercustomize with the runs' HOME.
		c := exec.Command(l.tools["python3"], "-c", "import site; print(site.getusersitepackages())")
		c.Env = []string{"HOME=" + viewRunDir}
		out, err := c.Output()
		site, ok := strings.CutPrefix(strings.TrimSpace(string(out)), viewRunDir+"/")
		if err != nil || !ok {
			return nil, fmt.Errorf("ask python3 for its user site: %v %q", err, out)
		}
		f.userSite = site
	}
	spec := lang.Get("python")
	s := stepSpec{
		dir:  viewRunDir,
		env:  l.env(viewRunDir, spec.Env),
		argv: spec.Run(l.host(), lang.Args{Dir: viewRunDir}),
	}
	// The server unmounts its own space (the mounts of this script) before
	// it serves: runs mount theirs in its view.
	var own nsinit.Script
	l.view.runSpace(&own, &s, -1)
	s.view.files = map[string][]byte{
		f.userSite + "/usercustomize.py":         []byte(forkServerStart),
		f.userSite + "/verl_score_forkserver.py": []byte(forkServerSource),
		f.userSite + "/verl_score_space":         own.Bytes(),
	}
	if prelude {
		s.view.files[f.userSite+"/verl_score_prelude.py"] = []byte(l.opts.PythonPrelude)
	}
	var sc nsinit.Script
	sc.Op(nsinit.OpKeepFds, "5")
	script := append(l.view.script(&s, -1, l.wrap(s.argv, limits{stackMB: lim.stackMB}, nil), 0), sc.Bytes()...)

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "fork server control")
	defer theirs.Close()
	pipes, err := openPipes(2) // stdin, stdout and stderr together
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	stdinR, errR, errW := pipes[0], pipes[2], pipes[3]
	defer stdinR.Close()
	pipes[1].Close() // the server never reads its stdin, nor do runs inherit it
	defer errW.Close()
	cmd, report, err := l.initCommand(script, l.stepAttr(-1), theirs)
	if err != nil {
		errR.Close()
		syscall.Close(fds[0])
		return nil, err
	}
	fs := &forkServer{ctl: fds[0], env: s.env, exited: make(chan struct{}), stderr: &cappedBuffer{max: 64 << 10}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, errW, errW
	err = cmd.Start()
	report.started(err == nil)
	if err != nil {
		errR.Close()
		syscall.Close(fds[0])
		return nil, fmt.Errorf("start: %w", err)
	}
	fs.pgid = cmd.Process.Pid
	drained := make(chan struct{})
	go func() {
		fs.stderr.drain(errR)
		close(drained)
	}()
	go func() {
		cmd.Wait()
		// Its stderr is read to the end before anyone may read it: the
		// namespace's processes, the last writers, die with its init.
		<-drained
		fs.dead.Store(true)
		report.close()
		close(fs.exited)
	}()
	return fs, nil
}

// start sends one step to the server: its script, its stdio, the pipe its
// init reports on, the pipe whose closing kills it, and the files through
// which the program joins its run's cgroup (join).
func (fs *forkServer) start(s *stepSpec, script []byte, stdin, stdout, stderr *os.File, join ...*os.File) (*stepProc, error) {
	if fs.dead.Load() {
		return nil, errForkLost
	}
	if !slices.Equal(s.env, fs.env) {
		return nil, errors.New("the run's environment is not the fork server's")
	}
	pipes, err := openPipes(3) // script, report, kill
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
		return nil, errForkLost
	}
	rep := newInitReport(repR)
	rep.started(true)
	fs.inFlight.Add(1)
	go func() {
		scriptW.Write(script)
		scriptW.Close()
		<-rep.eof
		fs.inFlight.Add(-1)
	}()
	var once sync.Once
	return &stepProc{done: rep.eof, report: rep, forked: true, kill: func() { once.Do(func() { killW.Close() }) }}, nil
}

// forkScript is the script of a step the fork server runs: the step's own
// space over the server's view, the unwrapped program, and its limits.
func (l *Local) forkScript(s *stepSpec, uid int) []byte {
	var sc nsinit.Script
	l.view.runSpace(&sc, s, uid)
	runOps(&sc, s, uid, s.argv, l.opts.MaxOutputBytes)
	lim := l.rlimits(s.lim)
	args := make([]string, len(lim))
	for i, v := range lim {
		args[i] = nsinit.Itoa(int(v))
	}
	sc.Op(opRlimits, args...)
	return sc.Bytes()
}

// close ends every server: each sees its control socket close and exits,
// which ends its namespace and whatever was left in it.
func (f *forkServers) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fs := range f.servers {
		syscall.Close(fs.ctl)
		select {
		case <-fs.exited:
		case <-time.After(2 * time.Second):
			syscall.Kill(-fs.pgid, syscall.SIGKILL)
			<-fs.exited
		}
	}
	f.servers = nil
}

// hasPrelude says whether the step's Python program begins with the
// Local's PythonPrelude.
func (l *Local) hasPrelude(s *stepSpec) bool {
	p := l.opts.PythonPrelude
	src := s.view.files[lang.Get("python").Source]
	return p != "" && len(src) >= len(p) && string(src[:len(p)]) == p
}
