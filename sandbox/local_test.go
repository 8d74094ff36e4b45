//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// newLocal makes a Local for one test, closed at its end.
func newLocal(t testing.TB, opts Options) *Local {
	t.Helper()
	opts.NoFastPaths = opts.NoFastPaths || plainPython
	if opts.Warn == nil {
		opts.Warn = &bytes.Buffer{}
	}
	l, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// plainPython runs the package's tests with every Python run started as a
// new interpreter (.ci/run runs them both ways), so that the containment
// and language tests hold on both paths.
var plainPython = os.Getenv("VERL_SCORE_TEST_PLAIN_PYTHON") == "1"

// shared is one Local for the tests that do not look at its counters.
var (
	sharedOnce  sync.Once
	sharedLocal *Local
	sharedErr   error
)

func sharedSandbox(t testing.TB) *Local {
	t.Helper()
	sharedOnce.Do(func() { sharedLocal, sharedErr = New(Options{Warn: &bytes.Buffer{}, NoFastPaths: plainPython}) })
	if sharedErr != nil {
		t.Fatalf("New: %v", sharedErr)
	}
	return sharedLocal
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedLocal != nil {
		sharedLocal.Close()
	}
	os.Exit(code)
}

// needTools skips the test when a language's toolchain is missing here.
func needTools(t *testing.T, l *Local, name string) {
	t.Helper()
	spec := lang.Get(name)
	if spec == nil {
		return
	}
	for _, p := range spec.Programs() {
		if l.tools[p] == "" {
			t.Skipf("%s not installed", p)
		}
	}
}

func TestLanguageCases(t *testing.T) {
	l := sharedSandbox(t)
	for _, c := range lang.CasesOf(false) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			needTools(t, l, c.Language)
			resp, err := l.Run(context.Background(), c.Request())
			got := c.Judge(resp, err)
			if got.Verdict != c.Want {
				t.Fatalf("got verdict %v (status %s), want %v; response %s", got.Verdict, got.Status, c.Want, respText(resp, err))
			}
		})
	}
}

func respText(resp *sandboxclient.Response, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(resp)
	if len(b) > 3000 {
		b = b[:3000]
	}
	return string(b)
}

type protoFixture struct {
	Request  *sandboxclient.Request `json:"request"`
	Response sandboxclient.Response `json:"response"`
}

// TestFixtures answers the requests a real SandboxFusion server answered
// and compares everything but timings, paths and message texts.
func TestFixtures(t *testing.T) {
	l := sharedSandbox(t)
	paths, err := filepath.Glob("../testdata/protocol/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, p := range paths {
		var fx protoFixture
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if fx.Request == nil {
			continue // a note without a request
		}
		t.Run(strings.TrimSuffix(filepath.Base(p), ".json"), func(t *testing.T) {
			t.Parallel()
			needTools(t, l, fx.Request.Language)
			got, err := l.Run(context.Background(), fx.Request)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if fx.Request.Language == "sql" {
				// A difference on purpose: SandboxFusion has no runner for
				// sql and answers SandboxError; this sandbox runs it on
				// SQLite (docs/semantics.md §8).
				if got.Status != sandboxclient.StatusSuccess || got.RunResult == nil || got.RunResult.Stdout != "1\n" {
					t.Errorf("sql: got %s, want Success printing 1", respText(got, nil))
				}
				return
			}
			want := fx.Response
			if got.Status != want.Status {
				t.Errorf("got status %q, want %q (%s)", got.Status, want.Status, respText(got, nil))
			}
			compareStepResult(t, "compile_result", got.CompileResult, want.CompileResult, false)
			compareStepResult(t, "run_result", got.RunResult, want.RunResult, true)
			if want.Status == sandboxclient.StatusSandboxError && got.Message == "" {
				t.Errorf("got an empty message for a sandbox error")
			}
		})
	}
}

func compareStepResult(t *testing.T, name string, got, want *sandboxclient.StepResult, output bool) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: got %+v, want %+v", name, got, want)
	}
	if got == nil {
		return
	}
	if got.Status != want.Status {
		t.Errorf("%s: got status %q, want %q", name, got.Status, want.Status)
	}
	if (got.ReturnCode == nil) != (want.ReturnCode == nil) ||
		(got.ReturnCode != nil && *got.ReturnCode != *want.ReturnCode) {
		t.Errorf("%s: got return code %v, want %v", name, fmtRC(got.ReturnCode), fmtRC(want.ReturnCode))
	}
	if output && got.Stdout != want.Stdout {
		t.Errorf("%s: got stdout %q, want %q", name, got.Stdout, want.Stdout)
	}
	// Error texts name temp paths; their last line (the error itself) agrees.
	if lastStderrLine(got.Stderr) != lastStderrLine(want.Stderr) && output {
		t.Errorf("%s: got stderr ending %q, want %q", name, lastStderrLine(got.Stderr), lastStderrLine(want.Stderr))
	}
}

func lastStderrLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func fmtRC(rc *int) any {
	if rc == nil {
		return "null"
	}
	return *rc
}

func TestUnsupportedLanguage(t *testing.T) {
	l := sharedSandbox(t)
	_, err := l.Run(context.Background(), &sandboxclient.Request{Language: "cobol", Code: "x", RunTimeout: 1})
	if !errors.Is(err, ErrUnsupportedLanguage) {
		t.Fatalf("got error %v, want one wrapping ErrUnsupportedLanguage", err)
	}
}

func TestNoLocalRunner(t *testing.T) {
	l := sharedSandbox(t)
	resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "julia", Code: "println(1)", RunTimeout: 1})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if resp.Status != sandboxclient.StatusSandboxError || !strings.Contains(resp.Message, "julia") {
		t.Fatalf("got %s, want a SandboxError naming julia", respText(resp, nil))
	}
	if v := judge.Case(0, "", "", nil, resp, nil).Verdict; v != verdict.APIError {
		t.Fatalf("got verdict %v, want -1", v)
	}
}

func TestCompileCache(t *testing.T) {
	l := newLocal(t, Options{})
	needTools(t, l, "cpp")
	code := "#include <iostream>\nint main(){int a;std::cin>>a;std::cout<<a*2<<std::endl;}\n"
	var wg sync.WaitGroup
	outs := make([]string, 6)
	errs := make([]error, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := strings.Repeat("1", i+1)
			resp, err := l.Run(
				context.Background(),
				&sandboxclient.Request{
					Language:       "cpp",
					Code:           code,
					Stdin:          &in,
					RunTimeout:     5,
					CompileTimeout: 30,
					MemoryLimitMB:  1024,
				},
			)
			if err != nil {
				errs[i] = err
				return
			}
			outs[i] = resp.RunResult.Stdout
		}()
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		in := strings.Repeat("1", i+1)
		want := strings.TrimLeft(strings.Repeat("2", i+1), "") + "\n"
		_ = in
		if outs[i] != want {
			t.Errorf("run %d: got stdout %q, want %q", i, outs[i], want)
		}
	}
	// A compile error is cached as well.
	for range 2 {
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{
				Language:       "cpp",
				Code:           "int main(){ return x; }",
				RunTimeout:     5,
				CompileTimeout: 30,
				MemoryLimitMB:  1024,
			},
		)
		if err != nil || resp.CompileResult == nil || resp.RunResult != nil || resp.Status != sandboxclient.StatusFailed {
			t.Fatalf("compile error: got %s", respText(resp, err))
		}
	}
	st := l.Stats()
	if st.Compiles != 2 || st.CompileCacheHits != 6 || st.Runs != 8 {
		t.Fatalf("got stats %+v, want 2 compiles, 6 cache hits, 8 runs", st)
	}
}

// TestConcurrentStdin checks that each of many simultaneous runs reads its
// own input.
func TestConcurrentStdin(t *testing.T) {
	l := sharedSandbox(t)
	const n = 24
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := strings.Repeat("x", i*1000) + "\n" // beyond small pipe writes for most
			resp, err := l.Run(
				context.Background(),
				&sandboxclient.Request{
					Language:      "python",
					Code:          "import sys; print(len(sys.stdin.read()))",
					Stdin:         &in,
					RunTimeout:    20,
					MemoryLimitMB: 1024,
				},
			)
			if err != nil {
				got[i] = err.Error()
				return
			}
			got[i] = resp.RunResult.Stdout
		}()
	}
	wg.Wait()
	for i := range n {
		if want := strings.TrimSpace(decimal(i*1000+1)) + "\n"; got[i] != want {
			t.Errorf("run %d: got %q, want %q", i, got[i], want)
		}
	}
}

func decimal(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestIsolationNone(t *testing.T) {
	var warn bytes.Buffer
	l := newLocal(t, Options{Isolation: IsolationNone, Warn: &warn})
	if !strings.Contains(warn.String(), "isolation off") {
		t.Errorf("got warnings %q, want a note that isolation is off", warn.String())
	}
	in := "hi"
	resp, err := l.Run(
		context.Background(),
		&sandboxclient.Request{Language: "python", Code: "print(input())", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024},
	)
	if err != nil || resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "hi\n" {
		t.Fatalf("got %s, want Success with hi", respText(resp, err))
	}
	// Limits hold without isolation too.
	resp, err = l.Run(
		context.Background(),
		&sandboxclient.Request{Language: "python", Code: "x = bytearray(4 * 1024 ** 3)", RunTimeout: 10, MemoryLimitMB: 256},
	)
	if err != nil || resp.RunResult == nil || !strings.Contains(resp.RunResult.Stderr, "MemoryError") {
		t.Fatalf("got %s, want a MemoryError", respText(resp, err))
	}
}

func TestCompileTimeoutNotCached(t *testing.T) {
	l := newLocal(t, Options{})
	needTools(t, l, "cpp")
	// Constant evaluation that takes the compiler about 3 s: past a 0.4 s
	// limit even with the starvation grace (at most 4 times the limit).
	// (A 1 ms limit on a quick compile was flaky: at 1 ms a compiler not
	// yet scheduled has used no CPU, and a step whose processes have not
	// run is waited for, jail's endedGrace.)
	code := "#include <cstdio>\nconstexpr long f(long n, long k) { long s = 0; for (long i = 0; i < n; i++) " +
		"s += (i * k) % 7; return s; }\nconstexpr long a = f(200000, 1) + f(200000, 2) + f(200000, 3) + " +
		"f(200000, 4);\nconstexpr long b = f(200000, 5) + f(200000, 6) + f(200000, 8) + f(200000, 9);\n" +
		"int main() { std::printf(\"%ld\\n\", a + b); }\n"
	req := &sandboxclient.Request{Language: "cpp", Code: code, CompileTimeout: 0.4, RunTimeout: 10, MemoryLimitMB: 1024}
	resp, err := l.Run(context.Background(), req)
	if err != nil || resp.CompileResult == nil || resp.CompileResult.Status != sandboxclient.StepTimeLimitExceeded {
		t.Fatalf("got %s, want a compile timeout", respText(resp, err))
	}
	req.CompileTimeout = 60
	resp, err = l.Run(context.Background(), req)
	if err != nil || resp.Status != sandboxclient.StatusSuccess {
		t.Fatalf("got %s, want Success once the compile has time", respText(resp, err))
	}
	if st := l.Stats(); st.Compiles != 2 || st.CompileCacheHits != 0 {
		t.Fatalf("got stats %+v, want 2 compiles and no hits", st)
	}
}

func TestDoctor(t *testing.T) {
	tcs := toolchain.Toolchains()
	found := map[string]toolchain.Toolchain{}
	for _, tc := range tcs {
		found[tc.Program] = tc
	}
	if py := found["python3"]; !py.Found || py.Path == "" || !strings.Contains(py.Version, "Python 3") {
		t.Errorf("got python3 toolchain %+v, want it found with a version", py)
	}
	if _, ok := found["rustc"]; !ok {
		t.Errorf("got toolchains %+v, want rustc listed (found or not)", tcs)
	}
	ps := Protections()
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = p.Available
	}
	for _, want := range []string{"process group", "resource limits", "network namespace", "per-run user"} {
		if _, ok := names[want]; !ok {
			t.Errorf("got protections %+v, want %q listed", ps, want)
		}
	}
	if os.Geteuid() == 0 && !names["per-run user"] {
		t.Errorf("running as root, got per-run user unavailable")
	}
}

// TestJavaTuples: MultiPL-E's Java programs import org.javatuples, which a
// SandboxFusion image has on the class path.
func TestJavaTuples(t *testing.T) {
	l := sharedSandbox(t)
	needTools(t, l, "java")
	if _, err := os.Stat("/usr/share/java/javatuples.jar"); err != nil {
		t.Skip("javatuples is not installed (Debian: libjavatuples-java)")
	}
	code := "import org.javatuples.*;\npublic class Main {\n  public static void main(String[] a) {\n    Pair<Integer, String> p = Pair.with(1, \"x\");\n    System.out.println(p.getValue0() + p.getValue1());\n  }\n}\n"
	resp, err := l.Run(
		context.Background(),
		&sandboxclient.Request{Language: "java", Code: code, CompileTimeout: 60, RunTimeout: 20, MemoryLimitMB: 1024},
	)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != sandboxclient.StatusSuccess || resp.RunResult == nil || resp.RunResult.Stdout != "1x\n" {
		t.Fatalf("got %s, want success printing 1x", respText(resp, nil))
	}
}

// A sandbox removes the directories of sandboxes whose process died (kill -9
// of run or serve), keeps those of live ones, and removes its own on Close.
func TestNewRemovesDirectoriesOfDeadSandboxes(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	live := strconv.Itoa(os.Getppid())
	stale := filepath.Join(tmp, "verl-score-sandbox-"+dead+"-77", "runs", "r1")
	kept := filepath.Join(tmp, "verl-score-sandbox-"+live+"-88")
	for _, d := range []string{stale, kept} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file a run made unwritable, as hostile code would.
	if err := os.WriteFile(filepath.Join(stale, "x"), []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	os.Chmod(stale, 0o500)
	var warn bytes.Buffer
	l, err := New(Options{TempDir: tmp, Warn: &warn, Isolation: IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(stale))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory of a dead sandbox still there (err %v)", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("directory of a live process removed: %v", err)
	}
	if !strings.Contains(warn.String(), "removed 1 sandbox directories") {
		t.Errorf("no note about the removal: %q", warn.String())
	}
	own := l.root
	if !strings.HasPrefix(filepath.Base(own), "verl-score-sandbox-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("sandbox directory %s does not carry this process's id", own)
	}
	l.Close()
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s", own)
	}
}

// TestProgramsReopenTheirStdio: a program may open its own stdin, stdout
// and stderr by name, as it can on SandboxFusion (whose programs own
// their pipes): /dev/stdin and /proc/self/fd/N are the run's pipes, owned
// by its user.
func TestProgramsReopenTheirStdio(t *testing.T) {
	l := newLocal(t, Options{})
	for _, tc := range []struct{ lang, code string }{
		{"python", "a, b = map(int, open('/dev/stdin').read().split())\nwith open('/dev/stdout', 'w') as f:\n    f.write(str(a + b))\nopen('/proc/self/fd/2', 'w').write('e')"},
		{"bash", "read a b < /dev/stdin; echo -n $((a + b)) > /dev/stdout; echo -n e > /dev/stderr"},
	} {
		in := "1 2\n"
		resp, err := l.Run(
			context.Background(),
			&sandboxclient.Request{
				Language:       tc.lang,
				Code:           tc.code,
				Stdin:          &in,
				RunTimeout:     10,
				CompileTimeout: 10,
				MemoryLimitMB:  1024,
			},
		)
		if err != nil {
			t.Fatal(err)
		}
		if rr := resp.RunResult; resp.Status != sandboxclient.StatusSuccess || rr.Stdout != "3" || rr.Stderr != "e" {
			t.Errorf("%s: %s, run %+v", tc.lang, resp.Status, rr)
		}
	}
}

// The README's list of the embedded sandbox's languages is the runners'.
func TestReadmeListsEveryRunner(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	m := regexp.MustCompile(`\((\d+) of verl's languages: ([^;]+);`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README has no \"(N of verl's languages: ...;\" list")
	}
	listed := strings.Split(m[2], ", ")
	slices.Sort(listed)
	var runners []string
	for _, l := range lang.All() {
		if l.Runnable() {
			runners = append(runners, l.Name)
		}
	}
	slices.Sort(runners)
	if !slices.Equal(listed, runners) || m[1] != strconv.Itoa(len(runners)) {
		t.Errorf("README lists %s languages %v; the runners are %d: %v", m[1], listed, len(runners), runners)
	}
}

// A run_timeout too large for a duration (1e10 s, #54) is clamped to
// maxStepSeconds: the program runs and finishes, not an instant
// TimeLimitExceeded.
func TestHugeTimeoutIsClamped(t *testing.T) {
	l := sharedSandbox(t)
	for _, timeout := range []float64{1e10, 1e300} {
		resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: "print(6 * 7)",
			RunTimeout: timeout, CompileTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != sandboxclient.StatusSuccess || resp.RunResult == nil || resp.RunResult.Stdout != "42\n" {
			t.Errorf("run_timeout %g: %+v %+v", timeout, resp, resp.RunResult)
		}
	}
}
