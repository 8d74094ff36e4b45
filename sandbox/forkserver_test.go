//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/testcases"
)

// observe prints what a program can see of its start: the interpreter's
// state, the process, its files and the view. Left out are what differs
// between any two runs anyway (the run's user id, object ids, the hash
// seed's set order) and the three known differences of a forked run
// (sandbox/forkserver): the parent pid, the address-space limit's figure and
// the collector's frozen count;
// nor the program's pid, which in a plain start comes after the init's
// threads.
const observe = `import sys, os
print("argv", sys.argv, sys.orig_argv, sys.executable)
print("cpus", sorted(os.sched_getaffinity(0)), __import__("gc").isenabled())
print("main", __name__, __file__, __package__, __spec__, __cached__, type(__loader__).__name__, __doc__)
print("path", sys.path, list(globals()), __annotations__, __builtins__, __loader__.__class__)
print("modules", sorted(sys.modules))
print("flags", sys.flags, sys.getrecursionlimit(), sys.getswitchinterval())
def depth(n):
    try:
        return depth(n + 1)
    except RecursionError:
        return n
print("depth", depth(0))
print("ids", os.getpid() > 1, os.getpgrp(), os.getuid() == os.getgid() != 0, os.geteuid() == os.getuid(), os.getgroups())
print("cwd", os.getcwd(), sorted(os.environ.items()))
print("umask", os.umask(0o22))
for name in ("stdin", "stdout", "stderr"):
    f = getattr(sys, name)
    print(name, f.encoding, f.errors, f.line_buffering, f.write_through, f.isatty(), f.seekable(), f.buffer.raw.name, type(f.buffer).__name__, f is getattr(sys, "__%s__" % name))
print("stdin", repr(sys.stdin.read()))
print("fds", sorted(os.listdir("/proc/self/fd")))
import resource
print("rlimits", [resource.getrlimit(getattr(resource, r)) for r in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_NPROC")])
print("as set", resource.getrlimit(resource.RLIMIT_AS)[0] > 0)
import signal
print("signals", [(s, str(signal.getsignal(s))) for s in range(1, signal.NSIG) if s not in (signal.SIGKILL, signal.SIGSTOP) and s < 32])
print("mask", sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
print("status", [(k, status[k].strip()) for k in ("NoNewPrivs", "Seccomp", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "SigIgn", "SigCgt", "Threads")])
print("root", sorted(os.listdir("/")), sorted(os.listdir("/tmp")), sorted(os.listdir(".")), sorted(os.listdir("/dev")), sorted(os.listdir("/etc")))
print("mounts", [(l.split()[4], l.split()[5]) for l in open("/proc/self/mountinfo")])
print("procs", len([p for p in os.listdir("/proc") if p.isdigit()]))
import pwd, socket, gc
print("user", pwd.getpwuid(os.getuid()).pw_name, pwd.getpwuid(os.getuid()).pw_dir, socket.gethostname() != "", gc.isenabled(), gc.get_threshold())
print("dumpable", os.stat("/proc/self/fd").st_uid == os.getuid())
os.chdir("/tmp")
with open("x", "w") as f:
    f.write("x")
try:
    os.rename("/tmp/x", "/sandbox/x")
except OSError as e:
    print("rename", e)
import threading
threading.stack_size(1 << 20)
threading.Thread(target=lambda: print("thread ran")).start()
import atexit
atexit.register(lambda: print("atexit ran"))
class Last:
    def __del__(self):
        print("del ran")
last = Last()
os.kept, sys.kept, codecs_kept = Last(), Last(), __import__("codecs")
codecs_kept.kept = Last()
sys.stdout.write("unflushed at exit")
raise ValueError("boom")
`

// TestForkServerLooksLikeAPlainStart runs one program that prints what it
// can see of its start through a plain start and through the fork server,
// and requires the two to agree in every line, exit code and traceback.
func TestForkServerLooksLikeAPlainStart(t *testing.T) {
	forked := newLocal(t, Options{Concurrency: 1})
	plain := newLocal(t, Options{Concurrency: 1, NoFastPaths: true})
	if using, why := forked.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	in := "line one\nline two"
	req := &sandboxclient.Request{Language: "python", Code: observe, Stdin: &in, RunTimeout: 20, MemoryLimitMB: 1024}
	run := func(l *Local) *sandboxclient.StepResult {
		resp, err := l.Run(context.Background(), req)
		if err != nil || resp.RunResult == nil {
			t.Fatalf("got %s", respText(resp, err))
		}
		return resp.RunResult
	}
	want := run(plain)
	for i := 0; i < 2; i++ { // a second run: the server's state after one
		got := run(forked)
		sameLines(t, i, want.Stdout, got.Stdout)
		if got.Stderr != want.Stderr {
			t.Errorf("run %d stderr:\nplain:  %q\nforked: %q", i, want.Stderr, got.Stderr)
		}
		if *got.ReturnCode != *want.ReturnCode {
			t.Errorf("run %d: return code %d, plain %d", i, *got.ReturnCode, *want.ReturnCode)
		}
	}
	raiseLine := strings.Count(observe[:strings.Index(observe, "raise ValueError")], "\n") + 1
	if *want.ReturnCode != 1 ||
		!strings.Contains(want.Stderr, fmt.Sprintf(`File "/sandbox/solution.py", line %d, in <module>`, raiseLine)) {
		t.Errorf("the plain run did not end as the program does: rc %d, stderr %q", *want.ReturnCode, want.Stderr)
	}
	for _, line := range []string{"thread ran", "atexit ran", "del ran\ndel ran", "unflushed at exit"} {
		if !strings.Contains(want.Stdout, line) {
			t.Errorf("the plain run's output lacks %q: %q", line, want.Stdout)
		}
	}
	if n := forked.Stats().ForkedRuns; n != 2 {
		t.Errorf("%d runs went through the fork server, want 2", n)
	}
}

// TestForkServerNetworkNamespaces: a run's network namespace goes to the
// next run only if its loopback carried nothing; one that did is dropped
// (a port left in TIME_WAIT would otherwise be taken).
func TestForkServerNetworkNamespaces(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 1})
	if using, why := l.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	const quiet = "import os\nprint(os.readlink('/proc/self/ns/net'))\n"
	const talks = `import os, socket
srv = socket.socket()
srv.bind(("127.0.0.1", 4242))
srv.listen()
cli = socket.create_connection(("127.0.0.1", 4242))
conn, _ = srv.accept()
conn.close()  # this side closes first: 4242 waits in TIME_WAIT
cli.close()
srv.close()
print(os.readlink('/proc/self/ns/net'))
`
	const binds = "import os, socket\nsocket.socket().bind(('127.0.0.1', 4242))\nprint(os.readlink('/proc/self/ns/net'))\n"
	run := func(code string) string {
		t.Helper()
		in := ""
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: code, Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024},
		)
		if err != nil || resp.Status != sandboxclient.StatusSuccess {
			t.Fatalf("got %s", respText(resp, err))
		}
		return strings.TrimSpace(resp.RunResult.Stdout)
	}
	first, second := run(quiet), run(quiet)
	if first != second {
		t.Errorf("a quiet run's namespace was not handed on: %s, then %s", first, second)
	}
	used := run(talks)
	after := run(binds)
	if after == used {
		t.Errorf("the namespace whose loopback carried packets was handed on (%s)", used)
	}
	if n := l.Stats().ForkedRuns; n != 4 {
		t.Errorf("%d of 4 runs went through the fork server", n)
	}
}

// TestForkServerEdges: exit codes, signals, timeouts, a memory limit that
// stops an allocation where a plain start stops it, and a server that dies
// between runs.
func TestForkServerEdges(t *testing.T) {
	forked := newLocal(t, Options{Concurrency: 2})
	plain := newLocal(t, Options{Concurrency: 2, NoFastPaths: true})
	if using, why := forked.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	cases := []struct {
		name, code string
		mem        int
		timeout    float64
	}{
		{"exit 3", "import sys\nsys.exit(3)", 1024, 10},
		{"exit message", "import sys\nsys.exit('bye')", 1024, 10},
		{"kill self", "import os, signal\nprint('x', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)", 1024, 10},
		{"abort", "import os\nos.abort()", 1024, 10},
		{
			"recursion",
			"import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1) if n < 200000 else n\nprint(f(0))",
			1024,
			10,
		},
		{"timeout", "while True:\n    pass", 1024, 0.5},
		{"orphan", "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nprint('parent done')", 1024, 10},
		{
			"memory",
			"chunks = []\ntry:\n    while True:\n        chunks.append(bytearray(1 << 20))\nexcept MemoryError:\n    print(len(chunks) // 4)",
			256,
			20,
		},
		{"input", "print(input())", 1024, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &sandboxclient.Request{Language: "python", Code: c.code, RunTimeout: c.timeout, MemoryLimitMB: c.mem}
			a, errA := plain.Run(context.Background(), req)
			b, errB := forked.Run(context.Background(), req)
			if errA != nil || errB != nil || a.RunResult == nil || b.RunResult == nil {
				t.Fatalf("plain %s, forked %s", respText(a, errA), respText(b, errB))
			}
			x, y := a.RunResult, b.RunResult
			if a.Status != b.Status || x.Status != y.Status || x.Stdout != y.Stdout || x.Stderr != y.Stderr ||
				(x.ReturnCode == nil) != (y.ReturnCode == nil) || (x.ReturnCode != nil && *x.ReturnCode != *y.ReturnCode) {
				t.Errorf("plain %s\nforked %s", respText(a, nil), respText(b, nil))
			}
		})
	}
	if len(stepProcesses(t)) != 0 {
		t.Errorf("processes of step users left: %v", stepProcesses(t))
	}

	// A server that dies: the next run starts another, or runs plain.
	before := forked.Stats().ForkedRuns
	forked.forks.KillServers()
	for i := 0; i < 3; i++ {
		in := strconv.Itoa(i)
		resp, err := forked.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: "print(input())", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024},
		)
		if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != in+"\n" {
			t.Fatalf("after the server died: %s", respText(resp, err))
		}
	}
	if forked.Stats().ForkedRuns == before {
		t.Errorf("no run went through a new fork server")
	}
}

// exitCases end a program in the ways whose finalization differs: the ones
// fast_exit (forkserver.py) ends at once (fast) and the ones it must leave
// to the interpreter.
var exitCases = []struct {
	name, code string
	fast       bool
}{
	{"plain end", "print(input())", true},
	{"no newline", "import sys\nsys.stdout.write(input())", true},
	{"buffer write", "import sys\nsys.stdout.buffer.write(b'bytes')\nprint('text')", true},
	{"uncaught", "def f(x):\n    return 1 // x\nprint(input())\nf(0)", true},
	{"excepthook", "import sys\nsys.excepthook = lambda *a: print('hook', a[0].__name__)\nraise KeyError(1)", true},
	{"atexit", "import atexit\natexit.register(print, 'at exit')\nprint('main')", true},
	{"finished generator", "def g():\n    yield 1\nprint(list(g()))\nit = g()", true},
	{"string io", "import io\nbuf = io.StringIO()\nbuf.write('x' * 3)\nprint(buf.getvalue())", true},
	{
		"threads",
		"import threading\nthreading.stack_size(1 << 20)\nt = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()\nprint('main')",
		true,
	},
	{"fork", "import os\nif os.fork() == 0:\n    print('child')\nelse:\n    os.wait()\n    print('parent')", true},
	{"C stdio", "import ctypes\nctypes.CDLL(None).printf(b'from C\\n')\nprint('from Python')", true},
	{"stdout closed", "import sys\nprint('a')\nsys.stdout.close()", true},
	// The modules the fn_name driver imports leave weak references with
	// callbacks (abc's registries, weak sets) that run nothing of the
	// program's.
	{
		"driver's modules",
		"from typing import *\nimport string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, functools, operator, io, sys, json\nprint(input())",
		true,
	},
	// fast_exit must not run the program's code: neither a metaclass's
	// __hash__ nor an exception's __getattribute__.
	{
		"metaclass hash",
		"class M(type):\n    def __hash__(cls):\n        print('hash')\n        return 1\nclass C(metaclass=M):\n    pass\nc = C()\nprint('main')",
		true,
	},
	{
		"exception getattribute",
		"class E(Exception):\n    def __getattribute__(self, name):\n        print('get', name)\n        return object.__getattribute__(self, name)\nraise E()",
		true,
	},
	{"exit 3", "import sys\nprint('a')\nsys.exit(3)", false},
	{"exit 0 at end", "import sys\nprint('a')\nsys.exit(0)", false},
	{"exit builtin", "print('a')\nexit(4)", false},
	{"exit message", "raise SystemExit('bye')", false},
	{"no __file__ then exit", "del __file__\nimport sys\nsys.exit(5)", false},
	{"keyboard interrupt", "print('a')\nraise KeyboardInterrupt", false},
	{"syntax error", "print('a'\n", false},
	{
		"run exit functions",
		"import atexit\natexit.register(print, 'at exit')\natexit._run_exitfuncs()\nprint('after')",
		false,
	},
	{
		"clear exit functions",
		"import atexit\natexit._clear()\nclass D:\n    def __del__(self):\n        print('del')\nd = D()",
		false,
	},
	{"del", "class D:\n    def __del__(self):\n        print('del')\nd = D()\nprint('main')", false},
	{
		"del in exception",
		"class D:\n    def __del__(self):\n        print('del')\ndef f():\n    d = D()\n    raise ValueError\nf()",
		false,
	},
	{"del, no gc", "class D(int):\n    __slots__ = ()\n    def __del__(self):\n        print('del')\nd = D(3)", false},
	{"del, frozen", "import gc\nclass D:\n    def __del__(self):\n        print('del')\nd = D()\ngc.freeze()", false},
	{
		"suspended generator",
		"def g():\n    try:\n        yield 1\n    finally:\n        print('closed')\nit = g()\nnext(it)",
		false,
	},
	{
		"weakref callback",
		"import weakref\nclass C:\n    pass\nc = C()\nr = weakref.ref(c, lambda r: print('gone'))",
		false,
	},
	{"file on stdout", "out = open('/dev/stdout', 'w')\nout.write('via /dev/stdout\\n')", false},
	{"fd 1 wrapper", "import os\nout = os.fdopen(1, 'w', closefd=False)\nout.write('via fd 1\\n')", false},
	{
		"stdout replaced",
		"import io, sys\nprint('first')\nsys.stdout = io.TextIOWrapper(open(1, 'wb', closefd=False))\nprint('second')",
		false,
	},
	{
		"daemon thread",
		"import threading, time\nthreading.stack_size(1 << 20)\nev = threading.Event()\ndef run():\n    ev.set()\n    time.sleep(0.2)\n    print('late')\nthreading.Thread(target=run, daemon=True).start()\nev.wait()\nprint('main')",
		false,
	},
	{
		"audit hook",
		"import sys\nsys.addaudithook(lambda e, a: e == 'cpython._PySys_ClearAuditHooks' and print('hook saw exit'))\nprint('main')",
		false,
	},
	{
		"gc callback",
		"import gc\ngc.callbacks.append(lambda p, i: p == 'start' and print('collect'))\nprint('main')",
		false,
	},
	{"inspect", "import os\nos.environ['PYTHONINSPECT'] = '1'\nprint('main')", false},
	{"profile", "import sys\nsys.setprofile(lambda *a: None)\nprint('main')", false},
	{"low recursion limit", "import sys\nprint('main')\nsys.setrecursionlimit(3)", false},
}

// TestForkServerFastExit runs each of exitCases plainly and through the
// fork server and requires the same output, stderr and exit code. A fast
// case must also end without the finalization's copies of the server's
// pages: it takes fewer page faults than the same program with a
// collector callback, which leaves its exit to the interpreter.
func TestForkServerFastExit(t *testing.T) {
	forked := newLocal(t, Options{Concurrency: 1})
	plain := newLocal(t, Options{Concurrency: 1, NoFastPaths: true})
	if using, why := forked.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	in := "hi"
	request := func(code string) *sandboxclient.Request {
		return &sandboxclient.Request{Language: "python", Code: code, Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024}
	}
	// faults runs code through the fork server and returns its answer and
	// the program's minor page faults.
	faults := func(code string) (*sandboxclient.Response, int64) {
		before := forked.Stats()
		resp, err := forked.Run(context.Background(), request(code))
		after := forked.Stats()
		if err != nil || resp.RunResult == nil || after.ForkedRuns != before.ForkedRuns+1 {
			t.Fatalf("forked: %s (%d forked runs)", respText(resp, err), after.ForkedRuns-before.ForkedRuns)
		}
		return resp, after.ForkedFaults - before.ForkedFaults
	}
	for _, c := range exitCases {
		t.Run(c.name, func(t *testing.T) {
			a, err := plain.Run(context.Background(), request(c.code))
			if err != nil || a.RunResult == nil {
				t.Fatalf("plain: %s", respText(a, err))
			}
			b, n := faults(c.code)
			x, y := a.RunResult, b.RunResult
			if a.Status != b.Status || x.Status != y.Status || x.Stdout != y.Stdout || x.Stderr != y.Stderr ||
				(x.ReturnCode == nil) != (y.ReturnCode == nil) || (x.ReturnCode != nil && *x.ReturnCode != *y.ReturnCode) {
				t.Errorf("plain %s\nforked %s", respText(a, nil), respText(b, nil))
			}
			if c.fast {
				_, slow := faults("import gc\ngc.callbacks.append(lambda *a: None)\n" + c.code)
				// A finalization copies a few hundred of the server's pages
				// (about 450 for a trivial program, 250 after the driver's
				// imports); the counts vary by a few from run to run.
				if n <= 0 || n > slow-100 {
					t.Errorf("%d page faults, %d with its exit left to the interpreter: no fast exit", n, slow)
				}
			}
		})
	}
}

// TestForkServerPrelude runs programs that begin with the fn_name driver's
// imports through a server that has run them already, and requires what
// they observe (observe, with the order of sys.modules) to be what a plain
// start shows; and their random module to be seeded anew in each run.
func TestForkServerPrelude(t *testing.T) {
	forked := newLocal(t, Options{Concurrency: 1, PythonPrelude: testcases.DriverHead})
	plain := newLocal(t, Options{Concurrency: 1, NoFastPaths: true})
	if using, why := forked.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	in := "line one\nline two"
	run := func(l *Local, code string) *sandboxclient.StepResult {
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: code, Stdin: &in, RunTimeout: 20, MemoryLimitMB: 1024},
		)
		if err != nil || resp.RunResult == nil {
			t.Fatalf("got %s", respText(resp, err))
		}
		return resp.RunResult
	}
	code := testcases.DriverHead + "print('order', list(__import__('sys').modules))\n" + observe
	want := run(plain, code)
	for i := 0; i < 2; i++ {
		got := run(forked, code)
		sameLines(t, i, want.Stdout, got.Stdout)
		if got.Stderr != want.Stderr || *got.ReturnCode != *want.ReturnCode {
			t.Errorf("run %d: stderr %q rc %d, plain %q rc %d", i, got.Stderr, *got.ReturnCode, want.Stderr, *want.ReturnCode)
		}
	}
	draws := map[string]bool{}
	for range 3 {
		out := run(forked, testcases.DriverHead+"print(random.random(), randint(1, 10**9))\n").Stdout
		if !strings.HasPrefix(out, "0.") {
			t.Fatalf("got %q", out)
		}
		draws[out] = true
	}
	if len(draws) != 3 {
		t.Errorf("forked runs drew the same random numbers: %v", draws)
	}
	if st := forked.Stats(); st.PreludeRuns != 5 || st.ForkedRuns != 5 {
		t.Errorf("%d of %d forked runs had the prelude, want 5 of 5", st.PreludeRuns, st.ForkedRuns)
	}
	// A program without the prelude goes to a server without it.
	if out := run(forked, "import sys\nprint('random' in sys.modules, 'json' in sys.modules)").Stdout; out != "False False\n" {
		t.Errorf("a program without the prelude found its modules: %q", out)
	}
	if st := forked.Stats(); st.PreludeRuns != 5 || st.ForkedRuns != 6 {
		t.Errorf("after a program without the prelude: %d of %d forked runs had it", st.PreludeRuns, st.ForkedRuns)
	}
}

// sameLines requires forked run i's output to be the plain run's, line by
// line.
func sameLines(t *testing.T, i int, plain, forked string) {
	t.Helper()
	wantLines, gotLines := strings.Split(plain, "\n"), strings.Split(forked, "\n")
	for j := 0; j < max(len(wantLines), len(gotLines)); j++ {
		w, g := "", ""
		if j < len(wantLines) {
			w = wantLines[j]
		}
		if j < len(gotLines) {
			g = gotLines[j]
		}
		if w != g {
			t.Errorf("run %d line %d:\nplain:  %s\nforked: %s", i, j, w, g)
		}
	}
}

// TestForkServerReportsCosts: every forked run reports what it cost (the
// figures BenchmarkCaseOverhead breaks a case's CPU down with), and the
// figures hang together.
func TestForkServerReportsCosts(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 1})
	if using, why := l.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	const n = 6
	for i := range n {
		in := strconv.Itoa(i)
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: "print(input())", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024},
		)
		if err != nil || resp.Status != sandboxclient.StatusSuccess {
			t.Fatalf("got %s", respText(resp, err))
		}
	}
	c, servers, inits := l.ForkCosts()
	if c.Runs != n || len(servers) != 1 || len(inits) != 1 {
		t.Fatalf("%d of %d runs reported their cost, %d servers and %d inits running", c.Runs, n, len(servers), len(inits))
	}
	if c.Fork <= 0 || c.Spawn <= 0 || c.ServerStart < c.Fork {
		t.Errorf("the server's figures do not add up: %+v", c)
	}
	if c.Setup <= 0 || c.Program <= c.Setup || c.SetupFaults <= 0 || c.Faults <= c.SetupFaults || c.Reaper <= 0 {
		t.Errorf("the program's figures do not add up: %+v", c)
	}
	// Nothing of a run stays with the server: its programs and their PID
	// 1s are its init's children.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", servers[0], servers[0])); err != nil ||
		len(strings.TrimSpace(string(b))) > 0 {
		t.Errorf("the server has children after its runs: %q %v", b, err)
	}
}

// TestForkServerMachineLoop: on x86-64 the server waits and forks in
// machine code (forkserver/serveloop_x86_64.asm) that writes one page
// between forks, where the loop in Python wrote some sixty, each of which
// faulted after every fork. The server's page faults per run tell the two
// apart.
func TestForkServerMachineLoop(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("SKIPPED: the machine-code loop is x86-64's; on %s the server loops in Python", runtime.GOARCH)
	}
	l := newLocal(t, Options{Concurrency: 1})
	if using, why := l.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	run := func(i int) {
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: fmt.Sprintf("print(%d)", i), RunTimeout: 10, MemoryLimitMB: 1024},
		)
		if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("run %d: got %s", i, respText(resp, err))
		}
	}
	run(0)
	run(1)
	_, servers, _ := l.ForkCosts()
	if len(servers) != 1 {
		t.Fatalf("%d servers running, want 1", len(servers))
	}
	_, faults0 := procCPU(t, servers)
	const n = 10
	for i := range n {
		run(2 + i)
	}
	_, faults1 := procCPU(t, servers)
	if per := float64(faults1-faults0) / n; per > 4 {
		t.Errorf("the server took %.1f page faults a run: it is not running the machine-code loop", per)
	}
}

// TestForkServerParentHooks: a server whose prelude registered a fork
// hook that runs in the parent loops in Python, which calls the hooks: each
// forked program sees what the hook did before its fork.
func TestForkServerParentHooks(t *testing.T) {
	// (A program runs its prelude again: the count is kept.)
	const prelude = "import os, sys\nsys.forks_seen = getattr(sys, 'forks_seen', [0])\nos.register_at_fork(before=lambda: sys.forks_seen.__setitem__(0, sys.forks_seen[0] + 1))\n"
	forked := newLocal(t, Options{Concurrency: 1, PythonPrelude: prelude})
	plain := newLocal(t, Options{Concurrency: 1, NoFastPaths: true})
	if using, why := forked.forks.State(); !using {
		t.Skipf("no fork server here: %s", why)
	}
	run := func(l *Local) string {
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{
				Language:      "python",
				Code:          prelude + "print(sys.forks_seen[0])",
				RunTimeout:    10,
				MemoryLimitMB: 1024,
			},
		)
		if err != nil || resp.RunResult == nil {
			t.Fatalf("got %s", respText(resp, err))
		}
		return resp.RunResult.Stdout
	}
	if got := run(plain); got != "0\n" {
		t.Errorf("a plain start saw %q forks, want 0", got)
	}
	for i := 1; i <= 3; i++ {
		if got, want := run(forked), fmt.Sprintf("%d\n", i); got != want {
			t.Errorf("forked run %d saw %q forks by the hook, want %q", i, got, want)
		}
	}
	if st := forked.Stats(); st.PreludeRuns != 3 {
		t.Errorf("%d of 3 runs went to the prelude's server", st.PreludeRuns)
	}
}
