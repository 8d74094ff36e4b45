//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// runCode runs one program through l and fails the test on an error.
func runCode(t *testing.T, l *Local, lang, code string, runTimeout float64, memMB int) *sandboxclient.Response {
	t.Helper()
	resp, err := l.Run(context.Background(), &sandboxclient.Request{
		Language: lang, Code: code, RunTimeout: runTimeout, CompileTimeout: 60, MemoryLimitMB: memMB,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if resp.RunResult == nil {
		t.Fatalf("no run result: %s", respText(resp, nil))
	}
	return resp
}

// stepProcesses lists the live processes running as one of this process's
// step users.
func stepProcesses(t testing.TB) []int {
	t.Helper()
	base := uint32(0x40000000) | uint32(os.Getpid()&0x3FFFFF)<<8
	d, err := os.Open("/proc")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+n, &st) == nil && st.Uid >= base && st.Uid < base+jail.UIDSlots && !isZombie(n) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	return !isZombie(strconv.Itoa(pid))
}

func needPerRunUser(t *testing.T, l *Local) {
	t.Helper()
	if !l.j.Iso.PerRunUser {
		t.Skip("needs root for per-run users")
	}
}

func TestForkBomb(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needPerRunUser(t, l)
	resp := runCode(t, l, "bash", ":(){ :|:& };:\nsleep 5\n", 2, 1024)
	if resp.Status != sandboxclient.StatusFailed {
		t.Errorf("got status %q, want Failed", resp.Status)
	}
	if left := stepProcesses(t); len(left) > 0 {
		t.Errorf("got %d processes of step users after the run, want none", len(left))
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("host cannot start a process after the fork bomb: %v", err)
	}
	// And the sandbox still works.
	resp = runCode(t, l, "bash", "echo ok", 5, 1024)
	if resp.RunResult.Stdout != "ok\n" {
		t.Errorf("got stdout %q after the fork bomb, want %q", resp.RunResult.Stdout, "ok\n")
	}
}

func TestHugeAllocation(t *testing.T) {
	l := sharedSandbox(t)
	cases := []struct {
		lang, code string
	}{
		{"python", "x = bytearray(4 * 1024 ** 3)\nx[-1] = 1\nprint('allocated')\n"},
		{
			"cpp",
			"#include <vector>\n#include <cstdio>\nint main(){ std::vector<char> v(4LL << 30, 1); std::printf(\"%d\\n\", v[12345]); }\n",
		},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			needTools(t, l, c.lang)
			resp := runCode(t, l, c.lang, c.code, 10, 256)
			v := judge.Case(0, "", "", nil, resp, nil).Verdict
			if v != verdict.RuntimeError {
				t.Fatalf("got verdict %v, want -2; %s", v, respText(resp, nil))
			}
		})
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("host cannot start a process: %v", err)
	}
}

func TestInfiniteLoopLeavesNothing(t *testing.T) {
	l := sharedSandbox(t)
	mark := uniqueMark()
	resp := runCode(
		t,
		l,
		"python",
		"import sys\nsys.argv.append("+strconv.Quote(mark)+")\nwhile True:\n    pass\n",
		0.5,
		1024,
	)
	if resp.RunResult.Status != sandboxclient.StepTimeLimitExceeded || resp.RunResult.ReturnCode != nil {
		t.Fatalf("got %s, want TimeLimitExceeded with no return code", respText(resp, nil))
	}
	if l.j.Iso.PerRunUser {
		if left := stepProcesses(t); len(left) > 0 {
			t.Errorf("got step processes %v after the run, want none", left)
		}
	}
}

// uniqueMark is an argument no other process on the host has: a step
// starts a process with it, and the test looks for it in every process's
// command line afterwards (pids printed inside a PID namespace mean
// nothing outside it).
func uniqueMark() string {
	return fmt.Sprintf("verl-score-mark-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// marked lists the host's live processes with mark in their command line.
func marked(t *testing.T, mark string) []int {
	t.Helper()
	names, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !strings.Contains(string(b), mark) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(n, "/")[2])
		if pid != os.Getpid() && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestHugeOutputIsCut(t *testing.T) {
	const keep = 64 << 10
	l := newLocal(t, Options{MaxOutputBytes: keep})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp := runCode(t, l, "bash", "head -c 1073741824 /dev/zero\nhead -c 300000 /dev/zero >&2\necho done >&2\n", 60, 1024)
	runtime.ReadMemStats(&after)
	rr := resp.RunResult
	if rr.Status != sandboxclient.StepFinished || rr.ReturnCode == nil || *rr.ReturnCode != 0 {
		t.Fatalf("got status %q rc %v, want Finished 0", rr.Status, fmtRC(rr.ReturnCode))
	}
	if len(rr.Stdout) != keep {
		t.Errorf("got %d bytes of stdout, want %d", len(rr.Stdout), keep)
	}
	if !strings.Contains(rr.Stderr, "stdout cut") || !strings.Contains(rr.Stderr, "discarded 1073676288 more") {
		t.Errorf("got stderr tail %q, want the stdout cut reported", tail(rr.Stderr))
	}
	if !strings.Contains(rr.Stderr, "stderr cut") {
		t.Errorf("got stderr tail %q, want the stderr cut reported", tail(rr.Stderr))
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Errorf("allocated %d bytes while reading 1 GB of output, want under 64 MiB", grown)
	}
}

// TestOutputBeyond128KiB is the request a real server stalls on: ten
// megabytes on stdout must finish, cut at the default 1 MiB.
func TestOutputBeyond128KiB(t *testing.T) {
	l := sharedSandbox(t)
	resp := runCode(t, l, "python", "print('x' * 10_000_000)", 10, 1024)
	rr := resp.RunResult
	if rr.Status != sandboxclient.StepFinished || len(rr.Stdout) != DefaultMaxOutputBytes {
		t.Fatalf(
			"got status %q with %d bytes of stdout, want Finished with %d",
			rr.Status,
			len(rr.Stdout),
			DefaultMaxOutputBytes,
		)
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return s[len(s)-300:]
	}
	return s
}

func TestOrphansAreKilled(t *testing.T) {
	l := sharedSandbox(t)
	cases := []struct {
		name, code string
		needUser   bool
	}{
		// A child left in the step's process group.
		{"same-group", "import subprocess\np = subprocess.Popen(['sleep', '300', MARK])\nprint(p.pid, flush=True)\n", false},
		// A child that left the group with a session of its own.
		{
			"new-session",
			"import subprocess\np = subprocess.Popen(['sleep', '300', MARK], start_new_session=True)\nprint(p.pid, flush=True)\n",
			true,
		},
		// A daemon: double fork, parent gone.
		{
			"daemon",
			"import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        print(os.getpid(), flush=True)\n        os.execv('/bin/sleep', ['sleep', '300', MARK])\n    os._exit(0)\nos.wait()\nimport time; time.sleep(0.2)\n",
			true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needUser && !l.j.Iso.Contained {
				needPerRunUser(t, l)
			}
			// sleep adds up its arguments: the mark is one more duration.
			mark := fmt.Sprintf("0.%d%d", os.Getpid(), time.Now().UnixNano())
			resp := runCode(t, l, "python", "MARK = "+strconv.Quote(mark)+"\n"+c.code, 10, 1024)
			if _, err := strconv.Atoi(strings.TrimSpace(resp.RunResult.Stdout)); err != nil {
				t.Fatalf("got stdout %q, want a pid; %s", resp.RunResult.Stdout, respText(resp, nil))
			}
			if left := marked(t, mark); len(left) > 0 {
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Fatalf("children %v outlived the run", left)
			}
		})
	}
}

func TestNoNetwork(t *testing.T) {
	l := sharedSandbox(t)
	if !l.j.Iso.NetNS {
		t.Skip("no network namespace on this host")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	code := fmt.Sprintf(
		"import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('failed', e)\n",
		port,
	)
	resp := runCode(t, l, "python", code, 10, 1024)
	if !strings.HasPrefix(resp.RunResult.Stdout, "failed") {
		t.Errorf("got stdout %q, want the connection to fail", resp.RunResult.Stdout)
	}
	select {
	case <-accepted:
		t.Errorf("the test's listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWritesOutsideRunDir(t *testing.T) {
	l := sharedSandbox(t)
	needPerRunUser(t, l)
	owned := t.TempDir()
	inOwned := filepath.Join(owned, "pwned")
	inTmp := filepath.Join(os.TempDir(), fmt.Sprintf("verl-score-escape-%d", time.Now().UnixNano()))
	code := fmt.Sprintf(
		"for p in [%q, %q]:\n    try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    except OSError as e:\n        print('refused', p)\n",
		inOwned,
		inTmp,
	)
	resp := runCode(t, l, "python", code, 10, 1024)
	if !strings.Contains(resp.RunResult.Stdout, "refused "+inOwned) {
		t.Errorf("got stdout %q, want the write into a directory of the test refused", resp.RunResult.Stdout)
	}
	for _, p := range []string{inOwned, inTmp} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s exists on the host after the run", p)
		}
	}
}

func TestEnvironmentSecret(t *testing.T) {
	t.Setenv("VERL_SCORE_TEST_SECRET", "hunter2-secret")
	l := sharedSandbox(t)
	code := "import os\nprint(sorted(os.environ.items()))\ntry:\n    print(open('/proc/%d/environ' % os.getppid(), 'rb').read())\nexcept OSError as e:\n    print('refused parent environ')\n"
	resp := runCode(t, l, "python", code, 10, 1024)
	if strings.Contains(resp.RunResult.Stdout, "hunter2-secret") {
		t.Fatalf("the secret is visible to the program: %q", resp.RunResult.Stdout)
	}
	if !strings.Contains(resp.RunResult.Stdout, "'HOME'") {
		t.Fatalf("got stdout %q, want the program's own environment printed", resp.RunResult.Stdout)
	}
}

func TestSignalReturnCode(t *testing.T) {
	l := sharedSandbox(t)
	needTools(t, l, "cpp")
	resp := runCode(t, l, "cpp", "#include <cstdlib>\nint main(){ std::abort(); }\n", 10, 1024)
	if rc := resp.RunResult.ReturnCode; resp.RunResult.Status != sandboxclient.StepFinished || rc == nil ||
		*rc != -int(syscall.SIGABRT) {
		t.Fatalf("got %s, want Finished with return code -6", respText(resp, nil))
	}
}

func TestContextCancel(t *testing.T) {
	l := sharedSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := l.Run(
		ctx,
		&sandboxclient.Request{Language: "python", Code: "import time\ntime.sleep(30)", RunTimeout: 30, MemoryLimitMB: 1024},
	)
	if err == nil {
		t.Fatalf("got no error after cancel, want one")
	}
}

func TestFilesAndFetch(t *testing.T) {
	l := sharedSandbox(t)
	resp, err := l.Run(context.Background(), &sandboxclient.Request{
		Language: "python", RunTimeout: 10, MemoryLimitMB: 1024,
		Code:       "print(open('data/in.txt').read())\nopen('out.txt', 'w').write('result')\n",
		Files:      map[string]string{"data/in.txt": "aGVsbG8="},
		FetchFiles: []string{"out.txt", "missing.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.RunResult.Stdout != "hello\n" || resp.Files["out.txt"] != "cmVzdWx0" || len(resp.Files) != 1 {
		t.Fatalf("got %s, want hello and out.txt fetched", respText(resp, nil))
	}
	resp, err = l.Run(context.Background(), &sandboxclient.Request{
		Language: "python", RunTimeout: 10, Code: "print(1)", Files: map[string]string{"../escape": "eA=="},
	})
	if err != nil || resp.Status != sandboxclient.StatusSandboxError {
		t.Fatalf("got %s, want a SandboxError for a file outside the run directory", respText(resp, err))
	}
}

// TestCompilersCannotReadHostFiles: a compile step runs as the step user
// too, so a C++ #include or a Rust include_str! of a file only the host's
// user may read fails instead of baking the file into the program.
func TestCompilersCannotReadHostFiles(t *testing.T) {
	l := sharedSandbox(t)
	needPerRunUser(t, l)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("hunter2-compile-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ lang, code string }{
		{"cpp", fmt.Sprintf("#include <cstdio>\nconst char* s =\n#include %q\n;\nint main(){ std::puts(s); }", secret)},
		{"rust", fmt.Sprintf("fn main() { print!(\"{}\", include_str!(%q)); }", secret)},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			needTools(t, l, tt.lang)
			resp, err := l.Run(context.Background(), &sandboxclient.Request{
				Language: tt.lang, Code: tt.code, RunTimeout: 10, CompileTimeout: 60, MemoryLimitMB: 1024,
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.RunResult != nil && strings.Contains(resp.RunResult.Stdout, "hunter2") {
				t.Fatalf("the compiled program printed the host file: %q", resp.RunResult.Stdout)
			}
			if resp.CompileResult == nil || resp.CompileResult.ReturnCode == nil || *resp.CompileResult.ReturnCode == 0 {
				t.Fatalf("got %s, want a failed compile", respText(resp, nil))
			}
			// Denied without a view of its own, absent inside one.
			if e := resp.CompileResult.Stderr; !strings.Contains(e, "Permission denied") &&
				!strings.Contains(e, "No such file") {
				t.Errorf("got compile stderr %q, want a refused read", e)
			}
		})
	}
}

// isZombie reports whether /proc/pid is gone or a zombie.
func isZombie(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// TestHostileKillsItsParent: what supervises a run is neither killable
// from it nor readable. A program that kills its parent, as SandboxFusion
// lets it (the parent there is a shell of its own user), goes on and its
// output stands; so after every other signal sent to its parent, and its
// attempts to read or trace that parent. On both ways a Python run starts
// (.ci/run runs this test with VERL_SCORE_TEST_PLAIN_PYTHON=1 too), and for
// a compiled program.
// containedSandbox is the shared sandbox where runs have a filesystem view
// (and so a parent of their own); the test skips elsewhere, and fails on CI.
func containedSandbox(t *testing.T) *Local {
	t.Helper()
	l := sharedSandbox(t)
	if !l.j.Iso.Contained {
		if os.Getenv("CI") == "true" {
			t.Fatal("no filesystem view on a CI machine")
		}
		t.Skip("SKIPPED: without the filesystem view a run's parent is this process")
	}
	return l
}

// TestHostileSignalsItsParentAtOnce: a program that signals its parent
// before anything else (C++ starts fast enough to do it before the init
// has gone back to waiting) still finds an init that nothing ends: every
// one of many runs goes on and succeeds. The init once dropped its
// handlers only after the start, and a SIGTERM in that window ended it
// (the Go runtime exits 2), leaving the step without a report.
func TestHostileSignalsItsParentAtOnce(t *testing.T) {
	l := containedSandbox(t)
	needTools(t, l, "cpp")
	const code = "#include <csignal>\n#include <cstdio>\n#include <unistd.h>\n" +
		"int main(){ pid_t p = getppid(); kill(p, SIGTERM); kill(p, SIGINT); kill(p, SIGHUP); kill(p, SIGUSR1);\n" +
		"  kill(p, SIGPIPE); puts(\"alive\"); }\n"
	var g errgroup.Group
	g.SetLimit(4)
	for i := range 60 {
		g.Go(func() error {
			resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "cpp", Code: code,
				RunTimeout: 10, CompileTimeout: 60, MemoryLimitMB: 1024})
			if err != nil {
				return fmt.Errorf("run %d: %w", i, err)
			}
			if resp.RunResult == nil || resp.RunResult.Stdout != "alive\n" {
				return fmt.Errorf("run %d: %s", i, respText(resp, nil))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestHostileKillsItsParent(t *testing.T) {
	l := containedSandbox(t)
	code := `import os, signal
ppid = os.getppid()
os.kill(ppid, signal.SIGKILL)
for s in range(1, 65):
    if s in (signal.SIGKILL, signal.SIGSTOP):
        continue
    try:
        os.kill(ppid, s)
    except OSError as e:
        print("refused", s, e.errno)
for what in ("environ", "mem", "maps", "fd"):
    try:
        p = "/proc/%d/%s" % (ppid, what)
        print("read", what, os.listdir(p) if what == "fd" else len(open(p, "rb").read()))
    except OSError:
        pass
print("alive", ppid)
`
	resp := runCode(t, l, "python", code, 10, 1024)
	if resp.RunResult == nil || resp.RunResult.Stdout != "alive 1\n" || resp.Status != sandboxclient.StatusSuccess {
		t.Fatalf("got %s, want the program to go on and print only \"alive 1\"", respText(resp, nil))
	}
	needTools(t, l, "cpp")
	cpp := "#include <csignal>\n#include <cstdio>\n#include <unistd.h>\nint main(){ pid_t p = getppid(); if (kill(p, SIGKILL) != 0) return 3; kill(p, SIGTERM); printf(\"alive %d\\n\", (int)p); }\n"
	resp = runCode(t, l, "cpp", cpp, 10, 1024)
	if resp.RunResult == nil || resp.RunResult.Stdout != "alive 1\n" {
		t.Fatalf("C++: got %s, want \"alive 1\"", respText(resp, nil))
	}
}
