//go:build linux

package sandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// needContained skips a test of the filesystem view where the host does
// not allow one.
func needContained(t *testing.T, l *Local) {
	t.Helper()
	if !l.j.Iso.Contained {
		t.Skip("no mount/PID namespaces on this host: the run has no view of its own")
	}
}

// innocentSum is a right solution to "print a+b".
const innocentSum = "a, b = map(int, input().split())\nprint(a + b)\n"

// judgeCase runs code on one case and returns the verdict verl would give.
func judgeCase(
	ctx context.Context,
	l *Local,
	lang, code, stdin, want string,
) (verdict.Code, *sandboxclient.Response, error) {
	resp, err := l.Run(ctx, &sandboxclient.Request{Language: lang, Code: code, Stdin: &stdin,
		RunTimeout: 10, CompileTimeout: 60, MemoryLimitMB: 1024})
	if err != nil {
		return 0, nil, err
	}
	return judge.Case(0, stdin, want, &want, resp, nil).Verdict, resp, nil
}

// batchCase is one solution of a mixed batch with the verdict it must get.
type batchCase struct {
	name, lang, code, stdin, want string
	verdict                       verdict.Code
}

// runBatch runs every case at once through l and checks each verdict.
func runBatch(t *testing.T, l *Local, cases []batchCase) {
	t.Helper()
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, resp, err := judgeCase(context.Background(), l, c.lang, c.code, c.stdin, c.want)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				return
			}
			if v != c.verdict {
				t.Errorf("%s: got verdict %v, want %v; %s", c.name, v, c.verdict, respText(resp, nil))
			}
		}()
	}
	wg.Wait()
}

// innocents are n right solutions with distinct cases.
func innocents(n int) []batchCase {
	var out []batchCase
	for i := range n {
		out = append(out, batchCase{name: fmt.Sprintf("innocent-%d", i), lang: "python", code: innocentSum,
			stdin: fmt.Sprintf("%d %d\n", i, 1000), want: fmt.Sprintf("%d\n", i+1000), verdict: verdict.True})
	}
	return out
}

// TestHostileReadsItsTestCases: the program knows its expected output is
// somewhere on the host (verl-score's input file, named on a command
// line) and searches /proc and the filesystem for it. It must find
// nothing, fail its case, and change no other verdict.
func TestHostileReadsItsTestCases(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needContained(t, l)
	secret := fmt.Sprintf("expected-%d", time.Now().UnixNano())
	// A directory others may enter, as a user's data directory is.
	dir, err := os.MkdirTemp("", "verl-score-data-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	input := filepath.Join(dir, "dataset.jsonl")
	row := fmt.Sprintf(`{"code": "...", "ground_truth": {"inputs": ["x"], "outputs": [%q]}}`+"\n", secret+"\n")
	if err := os.WriteFile(input, []byte(row), 0o644); err != nil {
		t.Fatal(err)
	}
	// A host process that names the input on its command line, as
	// `verl-score run dataset.jsonl` does.
	holder := exec.Command("sleep", "60", input)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()

	hunter := `import glob, os, re, sys
pat = re.compile(r'"outputs": \["(expected-\d+)')
def look(path):
    try:
        with open(path, 'rb') as f:
            m = pat.search(f.read(1 << 20).decode('utf-8', 'replace'))
            if m:
                print(m.group(1)); sys.exit(0)
    except OSError:
        pass
for p in glob.glob('/proc/*/cmdline'):
    try:
        for arg in open(p, 'rb').read().split(b'\0'):
            if arg.endswith(b'.jsonl'):
                look(arg.decode())
    except OSError:
        pass
look(` + strconv.Quote(input) + `)
for top in ['/tmp', '/root', '/work', '/home', '/var/tmp', '/sandbox']:
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ('.rustup', '.cargo', '.pyenv', 'go', '.cache', 'node_modules')]
        for f in files:
            look(os.path.join(root, f))
print('not found')
`
	cases := append(
		innocents(10),
		batchCase{name: "hunter", lang: "python", code: hunter, stdin: "x\n", want: secret + "\n",
			verdict: verdict.False},
	)
	runBatch(t, l, cases)
}

// TestHostileHostFilesAndSockets: a world-readable file of the host (this
// package's source) and a world-connectable unix socket on the host are
// out of reach; the innocent solutions of the batch are right.
func TestHostileHostFilesAndSockets(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needContained(t, l)
	src, err := filepath.Abs("containment_test.go")
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "verl-score-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	os.Chmod(sockDir, 0o777)
	sock := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o777)
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	reader := fmt.Sprintf("try:\n    print(open(%q).read()[:40])\nexcept OSError as e:\n    print('denied')\n", src)
	connector := fmt.Sprintf(
		"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(%q)\n    print('connected')\nexcept OSError:\n    print('denied')\n",
		sock,
	)
	cases := append(
		innocents(10),
		batchCase{name: "host-file", lang: "python", code: reader, stdin: "x\n", want: "denied\n", verdict: verdict.True},
		batchCase{
			name:    "host-socket",
			lang:    "python",
			code:    connector,
			stdin:   "x\n",
			want:    "denied\n",
			verdict: verdict.True,
		},
	)
	runBatch(t, l, cases)
	select {
	case <-accepted:
		t.Errorf("the host's unix socket accepted a connection from a run")
	case <-time.After(50 * time.Millisecond):
	}
}

// shmCode creates (or, with attach, looks up) a SysV segment by key.
func shmCode(key int, create bool) string {
	flags := "0"
	if create {
		flags = "0o1000 | 0o666" // IPC_CREAT
	}
	return fmt.Sprintf(
		"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]\n"+
			"i = libc.shmget(%d, %d, %s)\nprint('segment' if i >= 0 else 'none')\n",
		key,
		512<<20,
		flags,
	)
}

// TestHostileSysVSegment: a 512 MB shared memory segment made by a run is
// gone when the run ends: the host has no such segment and the next run
// cannot find it.
func TestHostileSysVSegment(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needContained(t, l)
	key := 0x5e000000 + os.Getpid()%0xffff
	cases := append(innocents(6), batchCase{name: "make-segment", lang: "python", code: shmCode(key, true), stdin: "x\n",
		want: "segment\n", verdict: verdict.True})
	runBatch(t, l, cases)
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	hexKey := fmt.Sprintf("%d", key)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 && f[0] == hexKey {
			t.Errorf("the host has the run's segment after the run: %s", line)
		}
	}
	runBatch(
		t,
		l,
		append(innocents(4), batchCase{name: "find-segment", lang: "python", code: shmCode(key, false), stdin: "x\n",
			want: "none\n", verdict: verdict.True}),
	)
}

// forkBomb fills its process limit with children that sleep, then leaves
// them: they are killed when the step ends, and without a PID namespace
// they stay zombies of the host's PID 1 until it reaps them.
const forkBomb = `import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(100)
        os._exit(0)
    n += 1
print(n)
`

// TestForkBombThenInnocents: with one slot, the step user a fork bomb used
// comes back at once; fifty innocent solutions after it must all be right,
// four times over (twenty in TestSlowForkBombThenInnocents, which .ci/run
// runs with the slow tests).
func TestForkBombThenInnocents(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	forkBombThenInnocents(t, rounds)
}

func forkBombThenInnocents(t *testing.T, rounds int) {
	l := newLocal(t, Options{Concurrency: 1})
	needPerRunUser(t, l)
	for r := range rounds {
		v, resp, err := judgeCase(context.Background(), l, "python", forkBomb, "", "0\n")
		if err != nil {
			t.Fatal(err)
		}
		if resp.RunResult == nil || resp.RunResult.Status != sandboxclient.StepFinished {
			t.Fatalf("round %d: the bomb did not finish: %s (verdict %v)", r, respText(resp, nil), v)
		}
		for i, c := range innocents(50) {
			v, resp, err := judgeCase(context.Background(), l, c.lang, c.code, c.stdin, c.want)
			if err != nil || v != verdict.True {
				t.Fatalf("round %d, innocent %d after the fork bomb: got verdict %v; %s", r, i, v, respText(resp, err))
			}
		}
	}
}

// TestRunsCannotChangeCachedBinaries: a run may not write its compiled
// program (shared by every case of the solution) nor the build directory.
func TestRunsCannotChangeCachedBinaries(t *testing.T) {
	l := newLocal(t, Options{})
	needTools(t, l, "cpp")
	code := `#include <cstdio>
#include <iostream>
int main(int argc, char** argv) {
    FILE* f = std::fopen(argv[0], "r+");
    FILE* g = std::fopen((std::string(argv[0]) + ".new").c_str(), "w");
    std::cout << (f ? "bin-writable " : "bin-protected ") << (g ? "dir-writable" : "dir-protected") << std::endl;
    if (f) { std::fputs("garbage", f); std::fclose(f); }
    return 0;
}
`
	for i := range 2 {
		in := "x"
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{
				Language:       "cpp",
				Code:           code,
				Stdin:          &in,
				CompileTimeout: 60,
				RunTimeout:     10,
				MemoryLimitMB:  1024,
			},
		)
		if err != nil {
			t.Fatal(err)
		}
		if resp.RunResult == nil || resp.RunResult.Stdout != "bin-protected dir-protected\n" {
			t.Fatalf("run %d: got %s, want the binary and its directory protected", i, respText(resp, nil))
		}
	}
	if st := l.Stats(); st.Compiles != 1 {
		t.Errorf("got %d compiles, want 1 (the second run uses the cached binary)", st.Compiles)
	}
}

// TestRequestFilesStayInTheView: a request's files are written inside the
// run's view, never under the sandbox's host directory.
func TestRequestFilesStayInTheView(t *testing.T) {
	tmp := t.TempDir()
	l := newLocal(t, Options{TempDir: tmp})
	needContained(t, l)
	mark := fmt.Sprintf("file-content-%d", time.Now().UnixNano())
	type found struct{ path string }
	hits := make(chan found, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			filepath.Walk(tmp, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), mark) {
						select {
						case hits <- found{p}:
						default:
						}
					}
				}
				return nil
			})
			time.Sleep(5 * time.Millisecond)
		}
	}()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	resp, err := l.Run(
		context.Background(),
		&sandboxclient.Request{Language: "python", RunTimeout: 10, MemoryLimitMB: 1024,
			Code:       "import os, time\nprint(os.getcwd(), open('data.txt').read())\ntime.sleep(0.5)\n",
			Files:      map[string]string{"data.txt": b64(mark)},
			FetchFiles: []string{"data.txt"}},
	)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if want := jail.RunDir + " " + mark + "\n"; resp.RunResult.Stdout != want || resp.Files["data.txt"] != b64(mark) {
		t.Fatalf("got %s, want stdout %q and the file fetched", respText(resp, nil), want)
	}
	select {
	case h := <-hits:
		t.Fatalf("the request's file was on the host at %s", h.path)
	default:
	}
}
