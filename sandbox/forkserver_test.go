package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// observe prints what a program can see of its start: the interpreter's
// state, the process, its files and the view. Left out are what differs
// between any two runs anyway (the run's user id, object ids, the hash
// seed's set order) and the three known differences of a forked run
// (forkserver.go): the parent pid, the address-space limit's figure and
// the collector's frozen count;
// nor the program's pid, which in a plain start comes after the init's
// threads.
const observe = `import sys, os
print("argv", sys.argv, sys.orig_argv, sys.executable)
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
	if using, why := forked.ForkServerState(); !using {
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
		wantLines, gotLines := strings.Split(want.Stdout, "\n"), strings.Split(got.Stdout, "\n")
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
		if got.Stderr != want.Stderr {
			t.Errorf("run %d stderr:\nplain:  %q\nforked: %q", i, want.Stderr, got.Stderr)
		}
		if *got.ReturnCode != *want.ReturnCode {
			t.Errorf("run %d: return code %d, plain %d", i, *got.ReturnCode, *want.ReturnCode)
		}
	}
	raiseLine := strings.Count(observe[:strings.Index(observe, "raise ValueError")], "\n") + 1
	if *want.ReturnCode != 1 || !strings.Contains(want.Stderr, fmt.Sprintf(`File "/sandbox/solution.py", line %d, in <module>`, raiseLine)) {
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

// TestForkServerEdges: exit codes, signals, timeouts, a memory limit that
// stops an allocation where a plain start stops it, and a server that dies
// between runs.
func TestForkServerEdges(t *testing.T) {
	forked := newLocal(t, Options{Concurrency: 2})
	plain := newLocal(t, Options{Concurrency: 2, NoFastPaths: true})
	if using, why := forked.ForkServerState(); !using {
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
		{"recursion", "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1) if n < 200000 else n\nprint(f(0))", 1024, 10},
		{"timeout", "while True:\n    pass", 1024, 0.5},
		{"orphan", "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nprint('parent done')", 1024, 10},
		{"memory", "chunks = []\ntry:\n    while True:\n        chunks.append(bytearray(1 << 20))\nexcept MemoryError:\n    print(len(chunks) // 4)", 256, 20},
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
	forked.forks.mu.Lock()
	for _, fs := range forked.forks.servers {
		syscall.Kill(-fs.pgid, syscall.SIGKILL)
		<-fs.exited
	}
	forked.forks.mu.Unlock()
	for i := 0; i < 3; i++ {
		in := strconv.Itoa(i)
		resp, err := forked.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: "print(input())", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024})
		if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != in+"\n" {
			t.Fatalf("after the server died: %s", respText(resp, err))
		}
	}
	if forked.Stats().ForkedRuns == before {
		t.Errorf("no run went through a new fork server")
	}
}
