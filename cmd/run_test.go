package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/version"
)

// sandboxServer is the embedded sandbox behind the real /run_code server;
// cancelAfter, when set, is called once that many requests were answered.
func sandboxServer(t testing.TB, cancelAfter int64, cancel func()) *httptest.Server {
	t.Helper()
	local, err := sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	h := server.New(local, server.Options{MaxQueue: 256}).Handler()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method == http.MethodPost && n.Add(1) == cancelAfter && cancel != nil { // not run's probe
			cancel()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func run(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(ctx, args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	return code, out.String(), errb.String()
}

func writeFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exampleRows copies the first n rows of the bundled example to dir.
func exampleRows(t *testing.T, dir string, n int) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	path := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no input", []string{"run"}, ExitUsage, "run takes one INPUT"},
		{"unknown flag", []string{"run", "x.jsonl", "--bogus"}, ExitUsage, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{"bad mode", []string{"run", "x.jsonl", "--mode", "sometimes"}, ExitUsage, "mode must be one of"},
		{
			"missing file",
			[]string{"run", filepath.Join(dir, "nope.jsonl"), "--sandbox-url", "http://127.0.0.1:1/run_code"},
			ExitFailed,
			"nope.jsonl",
		},
		{
			"bad url",
			[]string{"run", "x.jsonl", "--sandbox-url", "ftp://x"},
			ExitFailed,
			`verl-score: sandbox url "ftp://x": scheme`,
		},
		{
			"config typo",
			[]string{"run", "x.jsonl", "--config", writeFile(t, dir, "typo.yaml", "max_concurent: 128\n")},
			ExitFailed,
			`unknown key "max_concurent" (did you mean "max_concurrent"?)`,
		},
		{
			"config value",
			[]string{"run", "x.jsonl", "--config", writeFile(t, dir, "value.yaml", "timeout: -1\n")},
			ExitFailed,
			"value.yaml: timeout must be positive",
		},
		{"config missing", []string{"run", "x.jsonl", "--config", filepath.Join(dir, "none.yaml")}, ExitFailed, "none.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(context.Background(), tt.args...)
			if code != tt.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("stderr %q lacks %q", stderr, tt.inStderr)
			}
		})
	}
}

func TestRunThroughServeAndInterruptResume(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 6)

	// A complete run through a SandboxFusion-compatible server.
	srv := sandboxServer(t, 0, nil)
	full := filepath.Join(dir, "full.jsonl")
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		full,
		"-q",
		"--sandbox-url",
		srv.URL+"/run_code",
		"--json",
	)
	if code != ExitOK {
		t.Fatalf("got exit %d: %s", code, stderr)
	}
	var sum struct {
		Overall struct {
			Prompts, Responses int
		} `json:"overall"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json summary: %v\n%s", err, stdout)
	}
	if sum.Overall.Prompts != 6 {
		t.Errorf("got %d prompts in the summary, want 6", sum.Overall.Prompts)
	}
	want, _ := os.ReadFile(full)

	// Interrupted after a few requests, gently (the first signal: the cases
	// in flight finish) or hard (the context: they are cut off): exit 4 and
	// the resume command, and the resumed output equals the complete one.
	for _, hard := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		interrupt := make(chan struct{})
		var once sync.Once
		stop := func() { once.Do(func() { close(interrupt) }) }
		if hard {
			stop = cancel
		}
		srv2 := sandboxServer(t, 5, stop)
		out := filepath.Join(dir, fmt.Sprintf("out-%v.jsonl", hard))
		var outb, errb bytes.Buffer
		code = Run(
			ctx,
			[]string{"run", in, "-o", out, "-q", "--sandbox-url", srv2.URL + "/run_code", "--max-concurrent", "2"},
			Streams{In: strings.NewReader(""), Out: &outb, ErrOut: &errb, Interrupt: interrupt},
		)
		cancel()
		stderr = errb.String()
		if code != ExitInterrupted {
			t.Fatalf("hard %v: got exit %d, want %d: %s", hard, code, ExitInterrupted, stderr)
		}
		if !strings.Contains(stderr, "--resume") || !strings.Contains(stderr, "-o") {
			t.Errorf("hard %v: stderr does not show the resume command: %s", hard, stderr)
		}
		// A gentle stop says at once what it waits for.
		if !hard && !strings.Contains(stderr, "interrupted: waiting for the") {
			t.Errorf("gentle stop: no line saying what it waits for: %s", stderr)
		}
		// The resume line, run as printed (its words split as sh splits them).
		_, line, found := strings.Cut(stderr, "resume with: ")
		line, _, _ = strings.Cut(line, "\n")
		words := shellWords(t, line)
		if !found || len(words) < 2 || words[0] != "verl-score" {
			t.Fatalf("hard %v: no resume line in %q", hard, stderr)
		}
		code, _, stderr = run(context.Background(), words[1:]...)
		if code != ExitOK {
			t.Fatalf("hard %v: resume: got exit %d: %s", hard, code, stderr)
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Errorf(
						"hard %v: resumed output differs from the complete run's at row %d:\n got ...%s\nwant ...%s",
						hard,
						i+1,
						tail(gl[i]),
						tail(wl[i]),
					)
				}
			}
		}
	}
}

func TestConfigCommandShowsSources(t *testing.T) {
	t.Setenv("VERL_SCORE_MAX_CONCURRENT", "12")
	code, stdout, stderr := run(context.Background(), "config", "--timeout", "3")
	if code != ExitOK {
		t.Fatalf("got exit %d: %s", code, stderr)
	}
	for _, want := range []string{"12", "env VERL_SCORE_MAX_CONCURRENT", "flag --timeout", "language", "default"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("config output lacks %q:\n%s", want, stdout)
		}
	}
}

// shellWords splits a command line as sh does for what shellQuote writes:
// words apart at spaces, '...' quoting, \' outside quotes.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	in, any := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			cur.WriteByte(c)
		case c == '\'':
			in, any = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			any = true
		case c == ' ':
			if cur.Len() > 0 || any {
				words = append(words, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteByte(c)
		}
	}
	if in {
		t.Fatalf("unterminated quote in %q", line)
	}
	if cur.Len() > 0 || any {
		words = append(words, cur.String())
	}
	return words
}

func tail(s string) string { return s[max(0, len(s)-300):] }

// TestRunStdinToStdout pipes JSONL through: rows on stdout, the summary
// on stderr.
func TestRunStdinToStdout(t *testing.T) {
	srv := sandboxServer(t, 0, nil)
	rows := `{"data_source":"x","responses":["` + "```python\\nprint(input())\\n```" + `"],"reward_model":{"ground_truth":"{\"inputs\":[\"7\"],\"outputs\":[\"7\"]}"}}` + "\n" +
		`{"data_source":"x","responses":["no code"],"reward_model":{"ground_truth":"{\"inputs\":[\"7\"],\"outputs\":[\"7\"]}"}}` + "\n"
	var out, errb bytes.Buffer
	code := Run(
		context.Background(),
		[]string{"run", "-", "-o", "-", "-q", "--sandbox-url", srv.URL},
		Streams{In: strings.NewReader(rows), Out: &out, ErrOut: &errb},
	)
	if code != ExitOK {
		t.Fatalf("got exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines on stdout, want 2:\n%s", len(lines), out.String())
	}
	for i, want := range []string{`"reward":[1.0]`, `"reward_error":["Invalid completion (missing code block)"]`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d lacks %s: %s", i+1, want, lines[i])
		}
	}
	if !strings.Contains(errb.String(), "mean/prompt") || !strings.Contains(errb.String(), " case in ") {
		t.Errorf("the summary is not on stderr: %q", errb.String())
	}
	if code, _, stderr := run(context.Background(), "run", "-", "-o", "-", "--resume"); code != ExitFailed ||
		!strings.Contains(stderr, "cannot be resumed") {
		t.Errorf("resume to stdout: got exit %d, %q; want a refusal", code, stderr)
	}
}

// A JSONL row with invalid UTF-8 in its strings (a prompt, a response) is
// scored as Python would read it with errors="replace": the output line is
// valid JSON for Python's json.loads, and the summary counts the row.
func TestRunInvalidUTF8(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	b, err := os.ReadFile("../testdata/example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	clean := lines[0]
	// Bad bytes in the prompt and in a comment at the end of each response's
	// first line of code would be kept as is by a byte copy.
	bad := strings.Replace(clean, `"content": "The black king`, "\"content\": \"The \xff black \xe2\x82 king", 1)
	bad = strings.Replace(bad, "```python\\n", "```python\\n# \xed\xa0\x80 \xc3\\n", -1)
	if bad == clean || !strings.Contains(bad, "\xed\xa0\x80") {
		t.Fatal("the example's first row changed shape; update the test")
	}
	in := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(in, []byte(clean+bad), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sandboxServer(t, 0, nil)
	out := filepath.Join(dir, "out.jsonl")
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		out,
		"-q",
		"--json",
		"--sandbox-url",
		srv.URL+"/run_code",
	)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "rows.jsonl:2:") || !strings.Contains(stderr, "U+FFFD") {
		t.Errorf("no note naming the row: %s", stderr)
	}
	var sum struct {
		Rows  int `json:"rows_with_invalid_utf8"`
		Bytes int `json:"invalid_utf8_bytes_replaced"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	responses := strings.Count(bad, "```python\\n# ")
	if want := 3 + responses*4; sum.Rows != 1 || sum.Bytes != want {
		t.Errorf("summary counts %d rows, %d bytes; want 1 row, %d bytes", sum.Rows, sum.Bytes, want)
	}
	// Python reads every output line strictly, and the damaged row scores as
	// the clean one does (the bad bytes sit in a comment).
	check := exec.Command(py, "-c", `import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8", errors="strict")]
assert "\ufffd black \ufffd king" in rows[1]["prompt"][0]["content"], rows[1]["prompt"][0]["content"][:40]
assert rows[0]["reward"] == rows[1]["reward"] and rows[1]["reward_error"] == [None] * len(rows[1]["reward"]), (rows[0]["reward"], rows[1]["reward"], rows[1]["reward_error"])
print(len(rows))`, out)
	if msg, err := check.CombinedOutput(); err != nil || strings.TrimSpace(string(msg)) != "2" {
		t.Fatalf("python json.loads of the output: %v\n%s", err, msg)
	}
}

// A sandbox that cannot be reached gives -1 everywhere: run writes the
// output but fails, saying the sandbox is unusable; a sandbox that fails
// some requests fails the run above --max-infra-errors and warns below it.
func TestRunInfraFailuresAreNotResults(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 4)
	lines := func(path string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("output: %v", err)
		}
		return strings.Count(string(b), "\n")
	}

	// Nothing listening: the probe fails the run in seconds, nothing scored.
	dead := filepath.Join(dir, "dead.jsonl")
	start := time.Now()
	code, _, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		dead,
		"-q",
		"--sandbox-url",
		"http://127.0.0.1:1/run_code",
	)
	if code != ExitFailed || !strings.Contains(stderr, "does not answer") ||
		!strings.Contains(stderr, "connection refused") {
		t.Errorf(
			"dead sandbox: exit %d, stderr %q; want exit %d and the endpoint that does not answer",
			code,
			stderr,
			ExitFailed,
		)
	}
	if took := time.Since(start); took > 10*time.Second { // verl's retries took 74 s on taco
		t.Errorf("dead sandbox: the run took %v to fail", took)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("dead sandbox: an output was written though nothing was scored")
	}
	// A server that answers the probe but drops every request: each case
	// -1, the output written, exit 1 with "sandbox unusable"; the client
	// stops retrying once it has seen many dropped connections and no
	// answer, so this too ends in seconds.
	var posts atomic.Int64
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		posts.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer dropper.Close()
	start = time.Now()
	code, _, stderr = run(context.Background(), "run", in, "-o", dead, "-q", "--sandbox-url", dropper.URL+"/run_code")
	if code != ExitFailed || !strings.Contains(stderr, "sandbox unusable") ||
		!strings.Contains(stderr, "has not answered once") {
		t.Errorf(
			"dropping sandbox: exit %d, stderr %q; want exit %d and sandbox unusable with the first error",
			code,
			stderr,
			ExitFailed,
		)
	}
	if n := lines(dead); n != 4 {
		t.Errorf("dropping sandbox: output holds %d rows, want 4", n)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("dropping sandbox: %v and %d requests before the run gave up", took, posts.Load())
	}

	// Every 25th request gets a 500, as an overloaded proxy would answer.
	in = exampleRows(t, dir, 10)
	local, err := sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	h := server.New(local, server.Options{}).Handler()
	var n atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%25 == 0 {
			http.Error(w, "upstream overloaded", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	for _, tc := range []struct {
		max  string
		code int
		msg  string
	}{
		{"0.05", ExitFailed, "too many infrastructure errors"},
		{"1", ExitOK, "warning: "},
	} {
		out := filepath.Join(dir, "flaky"+tc.max+".jsonl")
		code, _, stderr := run(context.Background(), "run", in, "-o", out, "-q", "--max-concurrent", "1",
			"--sandbox-url", flaky.URL+"/run_code", "--max-infra-errors", tc.max)
		if code != tc.code || !strings.Contains(stderr, tc.msg) || !strings.Contains(stderr, "infrastructure") {
			t.Errorf("--max-infra-errors %s: exit %d, stderr %q; want exit %d and %q", tc.max, code, stderr, tc.code, tc.msg)
		}
		if n := lines(out); n != 10 {
			t.Errorf("--max-infra-errors %s: output holds %d rows, want 10", tc.max, n)
		}
	}
}

// A misspelt key stops run before anything is scored: exit 2, the key and
// the columns there are, and no output.
func TestRunMisspeltKey(t *testing.T) {
	dir := t.TempDir()
	live := sandboxServer(t, 0, nil)
	in := exampleRows(t, dir, 3)
	for _, tc := range []struct {
		input string
		flags []string
		want  []string
	}{
		{in, []string{"--response-key", "respones"}, []string{`no response column "respones"`, "responses",
			"reward_model.ground_truth"}},
		{in, []string{"--ground-truth-key", "reward_model.groundtruth"},
			[]string{`no ground truth column "reward_model.groundtruth"`}},
		{in, []string{"--data-source-key", "datasource"}, []string{`no data source column "datasource"`, "data_source"}},
		{"../testdata/rollout/verl_rows.parquet", []string{"--response-key", "respones"},
			[]string{`verl_rows.parquet: no response column "respones"`, "responses"}},
	} {
		out := filepath.Join(dir, "out.jsonl")
		args := append([]string{"run", tc.input, "-o", out, "-q", "--sandbox-url", live.URL + "/run_code"}, tc.flags...)
		code, _, stderr := run(context.Background(), args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.flags, code, ExitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.flags, stderr, w)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: an output was written", tc.flags)
		}
	}
}

// A second run into an output that a run is writing is refused, naming the
// holder; once the first is gone the lock file goes with it.
func TestRunRefusesABusyOutput(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 2)
	out := filepath.Join(dir, "out.jsonl")
	// A sandbox that holds its first request until released keeps run 1 busy.
	release := make(chan struct{})
	started := make(chan struct{}, 64)
	inner := sandboxServer(t, 0, nil)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost { // run's probe
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		started <- struct{}{}
		<-release
		resp, err := http.Post(inner.URL+"/run_code", "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(slow.Close)
	first := make(chan int, 1)
	go func() {
		code, _, _ := run(context.Background(), "run", in, "-o", out, "-q", "--sandbox-url", slow.URL+"/run_code")
		first <- code
	}()
	<-started
	for _, extra := range [][]string{nil, {"--resume"}} {
		args := append([]string{"run", in, "-o", out, "-q", "--sandbox-url", slow.URL + "/run_code"}, extra...)
		code, _, stderr := run(context.Background(), args...)
		if code != ExitFailed || !strings.Contains(stderr, "another verl-score run is writing this output") ||
			!strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(stderr, "out.jsonl.lock") {
			t.Errorf("%v while another run writes: exit %d, stderr %q", extra, code, stderr)
		}
	}
	close(release)
	if code := <-first; code != ExitOK {
		t.Fatalf("the first run: exit %d", code)
	}
	if _, err := os.Stat(out + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after the run: %v", err)
	}
	if code, _, stderr := run(context.Background(), "run", in, "-o", out, "-q", "--sandbox-url",
		inner.URL+"/run_code"); code != ExitOK {
		t.Errorf("a run after the first ended: exit %d: %s", code, stderr)
	}
}

// Dump rows without a data source are scored over all cases under --mode
// auto; run says so once, and not when a data source is given.
func TestRunWarnsOnceAboutDumpsWithoutSource(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../testdata/dump/1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[:3] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "data_source")
		nl, _ := json.Marshal(m)
		lines = append(lines, string(nl))
	}
	in := writeFile(t, dir, "1.jsonl", strings.Join(lines, "\n")+"\n")
	srv := sandboxServer(t, 0, nil)
	for _, tc := range []struct {
		flags []string
		warns int
	}{{nil, 1}, {[]string{"--data-source", "codecontests"}, 0}, {[]string{"--mode", "continuous"}, 0}} {
		args := append(
			[]string{"run", in, "-o", filepath.Join(dir, "out.jsonl"), "-q", "--sandbox-url", srv.URL + "/run_code"},
			tc.flags...)
		code, _, stderr := run(context.Background(), args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tc.flags, code, stderr)
		}
		if n := strings.Count(stderr, "rows without a data source"); n != tc.warns {
			t.Errorf("%v: %d warnings, want %d: %s", tc.flags, n, tc.warns, stderr)
		}
		if tc.warns > 0 && !strings.Contains(stderr, "scores them over all cases") {
			t.Errorf("the warning does not say which mode was used: %s", stderr)
		}
	}
}

// Small things a new user meets: a missing input fails before anything is
// announced, -o DIR/ writes INPUT's scored name inside DIR, every output is
// 0644 under the usual umask, config's help lists only the exit codes it
// can return, and check's --max-mismatch shows its default.
func TestRunNewUserDetails(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := run(context.Background(), "run", filepath.Join(dir, "nope.jsonl"))
	if code != ExitFailed || strings.Contains(stderr, "scoring") ||
		!strings.Contains(stderr, "cannot read input "+filepath.Join(dir, "nope.jsonl")+": no such file") {
		t.Errorf("missing input: exit %d, stderr %q", code, stderr)
	}

	in := exampleRows(t, dir, 1)
	outDir := filepath.Join(dir, "scored") + "/"
	srv := sandboxServer(t, 0, nil)
	code, _, stderr = run(context.Background(), "run", in, "-o", outDir, "-q", "--sandbox-url", srv.URL+"/run_code",
		"--cases-out", filepath.Join(dir, "cases.jsonl"), "--summary", filepath.Join(dir, "summary.json"))
	if code != ExitOK {
		t.Fatalf("-o DIR/: exit %d: %s", code, stderr)
	}
	for _, p := range []string{filepath.Join(outDir, "rows.scored.jsonl"), filepath.Join(dir, "cases.jsonl"),
		filepath.Join(dir, "summary.json")} {
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", p, st.Mode().Perm())
		}
	}

	_, out, _ := run(context.Background(), "config", "--help")
	if strings.Contains(out, "  3  ") || strings.Contains(out, "  4  ") || !strings.Contains(out, "  1  failed") {
		t.Errorf("config --help exit codes:\n%s", out)
	}
	_, out, _ = run(context.Background(), "check", "--help")
	if !strings.Contains(out, "(default 0: any move fails)") {
		t.Errorf("check --help does not show --max-mismatch's default")
	}
}

// Dump lines that share an input are responses of one prompt (rollout.n >
// 1): the summary counts one prompt, and pass@2 covers it.
func TestRunGroupsDumpLinesByPrompt(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../testdata/dump/1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Split(strings.TrimSpace(string(b)), "\n")
	var first map[string]any
	if err := json.Unmarshal([]byte(src[0]), &first); err != nil {
		t.Fatal(err)
	}
	wrong := map[string]any{}
	for k, v := range first {
		wrong[k] = v
	}
	wrong["output"] = "```python\nprint(0)\n```"
	w, _ := json.Marshal(wrong)
	in := writeFile(t, dir, "1.jsonl", src[0]+"\n"+string(w)+"\n"+src[1]+"\n")
	srv := sandboxServer(t, 0, nil)
	code, stdout, stderr := run(context.Background(), "run", in, "-o", filepath.Join(dir, "out.jsonl"), "-q", "--json",
		"--sandbox-url", srv.URL+"/run_code")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Overall struct {
			Prompts, Responses int
			PassAtK            map[string]float64 `json:"pass_at_k"`
			PassAtKPrompts     map[string]int     `json:"pass_at_k_prompts"`
		} `json:"overall"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	o := sum.Overall
	if o.Prompts != 2 || o.Responses != 3 || o.PassAtKPrompts["pass@2"] != 1 || o.PassAtK["pass@2"] != 1 {
		t.Errorf("got %d prompts, %d responses, pass@k %v over %v; want 2 prompts, 3 responses, pass@2 = 1 over 1 prompt",
			o.Prompts, o.Responses, o.PassAtK, o.PassAtKPrompts)
	}
}

// run and diff give the same figures under the same names: run's
// mean/prompt and mean/response per data source are diff's for the scored
// file against itself.
func TestRunAndDiffAgreeOnMeans(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 12)
	out := filepath.Join(dir, "a.jsonl")
	srv := sandboxServer(t, 0, nil)
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		out,
		"-q",
		"--json",
		"--sandbox-url",
		srv.URL+"/run_code",
	)
	if code != ExitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var sum struct {
		BySource map[string]struct {
			MeanScore         float64 `json:"mean_score"`
			MeanOverResponses float64 `json:"mean_over_responses"`
		} `json:"by_data_source"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(context.Background(), "diff", out, out, "--json")
	if code != ExitOK {
		t.Fatalf("diff: exit %d: %s", code, stderr)
	}
	var rep struct {
		BySource []struct {
			DataSource    string  `json:"data_source"`
			MeanNew       float64 `json:"mean_new"`
			PromptMeanNew float64 `json:"mean_over_prompts_new"`
		} `json:"by_data_source"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.BySource) == 0 || len(rep.BySource) != len(sum.BySource) {
		t.Fatalf("diff has %d data sources, run %d", len(rep.BySource), len(sum.BySource))
	}
	for _, s := range rep.BySource {
		r := sum.BySource[s.DataSource]
		if math.Abs(r.MeanScore-s.PromptMeanNew) > 1e-9 || math.Abs(r.MeanOverResponses-s.MeanNew) > 1e-9 {
			t.Errorf(
				"%s: run mean/prompt %.4f, mean/response %.4f; diff %.4f, %.4f",
				s.DataSource,
				r.MeanScore,
				r.MeanOverResponses,
				s.PromptMeanNew,
				s.MeanNew,
			)
		}
	}
}

// run has a flag for every setting but serve's own; check for all but the
// five about run's outputs, summary and exit; serve for the embedded
// sandbox's and its own; each command for exactly the settings naming it.
func TestCommandsHaveTheirSettings(t *testing.T) {
	flags := func(args ...string) map[string]bool {
		root := NewRootCmd(Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		c, _, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		c.Flags().VisitAll(func(f *pflagFlag) { got[f.Name] = true })
		return got
	}
	run, check, serve := flags("run"), flags("check"), flags("serve")
	missing := 0
	for _, s := range config.Settings() {
		if s.Commands == config.Serve {
			if run[s.Flag()] || !serve[s.Flag()] {
				t.Errorf("--%s: run has it %v, serve %v; want serve's alone", s.Flag(), run[s.Flag()], serve[s.Flag()])
			}
			continue
		}
		if !run[s.Flag()] {
			t.Errorf("run has no --%s", s.Flag())
		}
		if !check[s.Flag()] {
			missing++
		}
	}
	if missing != 5 {
		t.Errorf("check leaves out %d of run's settings, want the 5 about run's outputs, summary and exit", missing)
	}
	for _, f := range []string{"isolation", "fast-paths", "ruby-stack-mb"} {
		if !serve[f] {
			t.Errorf("serve has no --%s", f)
		}
	}
}

// A fleet of a dead endpoint and a live one behind a gateway that wants a
// token: every verdict is the one a single healthy server gives, the dead
// endpoint is ejected (the summary says so), and the token is printed
// nowhere.
func TestRunOnAFleetBehindAGateway(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 6)
	srv := sandboxServer(t, 0, nil)
	want := filepath.Join(dir, "want.jsonl")
	if code, _, stderr := run(context.Background(), "run", in, "-o", want, "-q", "--sandbox-url",
		srv.URL+"/run_code"); code != ExitOK {
		t.Fatalf("single server: exit %d: %s", code, stderr)
	}
	gateway, _ := frontServer(t, srv, func(r *http.Request) int {
		if r.Header.Get("Authorization") != "Bearer s3cret-token" {
			return http.StatusUnauthorized
		}
		return 0
	})
	t.Setenv("SANDBOX_TOKEN", "s3cret-token")
	out := filepath.Join(dir, "out.jsonl")
	summary := filepath.Join(dir, "summary.json")
	cases := filepath.Join(dir, "cases.jsonl")
	dead := "http://user:s3cret-token@127.0.0.1:1/run_code"
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		out,
		"--json",
		"--summary",
		summary,
		"--cases-out",
		cases,
		"--sandbox-url",
		dead,
		"--sandbox-url",
		gateway.URL+"/run_code?key=s3cret-token",
		"--sandbox-header",
		"Authorization: Bearer $SANDBOX_TOKEN",
	)
	if code != ExitOK {
		t.Fatalf("fleet: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(out)
	wantRows, _ := os.ReadFile(want)
	if !bytes.Equal(got, wantRows) {
		t.Error("the fleet's output differs from a single healthy server's")
	}
	sumFile, _ := os.ReadFile(summary)
	casesFile, _ := os.ReadFile(cases)
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr, "summary": string(sumFile),
		"cases": string(casesFile)} {
		if strings.Contains(text, "s3cret") {
			t.Errorf("%s prints the token", name)
		}
	}
	var sum struct {
		Endpoints []struct {
			URL       string `json:"url"`
			Requests  int    `json:"requests"`
			Ejections int    `json:"ejections"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(sumFile, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Endpoints) != 2 || sum.Endpoints[0].Ejections != 1 || sum.Endpoints[1].Requests == 0 {
		t.Errorf("endpoints in the summary: %+v, want the dead one ejected once and the live one used", sum.Endpoints)
	}
	if !strings.Contains(stderr, "2 SandboxFusion endpoints") {
		t.Errorf("the start line does not name the fleet: %s", stderr)
	}
}

// frontServer is a gateway in front of backend: it answers gate's status
// when gate refuses a request (non-zero), passes the others on, and counts
// those it passed.
func frontServer(
	t *testing.T,
	backend *httptest.Server,
	gate func(*http.Request) int,
) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var passed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			if code := gate(r); code != 0 {
				http.Error(w, `{"detail":"refused by the gateway"}`, code)
				return
			}
		}
		if r.Method == http.MethodPost { // not run's probe
			passed.Add(1)
		}
		r2, _ := http.NewRequest(r.Method, backend.URL+r.URL.Path, r.Body)
		r2.Header = r.Header
		resp, err := http.DefaultClient.Do(r2)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, &passed
}

// With --cache, a second run of the same input sends nothing and writes
// the same output; check on it re-scores from the cache too. A sandbox
// that fails leaves nothing in the cache.
func TestRunCacheAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 6)
	srv, sent := frontServer(t, sandboxServer(t, 0, nil), nil)
	cache := filepath.Join(dir, "cache")
	url := srv.URL + "/run_code"
	first := filepath.Join(dir, "first.jsonl")
	if code, _, stderr := run(context.Background(), "run", in, "-o", first, "-q", "--cache", cache, "--sandbox-url",
		url); code != ExitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	afterFirst := sent.Load()
	if afterFirst == 0 {
		t.Fatal("the first run sent nothing")
	}
	second := filepath.Join(dir, "second.jsonl")
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		second,
		"-q",
		"--json",
		"--cache",
		cache,
		"--sandbox-url",
		url,
	)
	if code != ExitOK {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if n := sent.Load() - afterFirst; n != 0 {
		t.Errorf("the second run sent %d requests, want none", n)
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if !bytes.Equal(a, b) {
		t.Error("the output from the cache differs from the first run's")
	}
	var sum struct {
		Overall struct {
			Requests int `json:"requests"`
			Cached   int `json:"requests_saved_by_cache"`
		} `json:"overall"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Overall.Requests != 0 || sum.Overall.Cached == 0 {
		t.Errorf("summary of the cached run: %+v, %v", sum.Overall, err)
	}
	// check against the first run, from the cache.
	code, _, stderr = checkCLI(t, "check", in, "-q", "--baseline", first, "--cache", cache, "--sandbox-url", url)
	if code != ExitOK {
		t.Fatalf("check --cache: exit %d: %s", code, stderr)
	}
	if n := sent.Load() - afterFirst; n != 0 {
		t.Errorf("check --cache sent %d requests, want none", n)
	}

	// A dead sandbox: every case -1, nothing stored.
	deadCache := filepath.Join(dir, "dead-cache")
	run(
		context.Background(),
		"run",
		in,
		"-o",
		filepath.Join(dir, "dead.jsonl"),
		"-q",
		"--retry-overload=false",
		"--cache",
		deadCache,
		"--sandbox-url",
		"http://127.0.0.1:1/run_code",
	)
	entries := 0
	filepath.Walk(deadCache, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			entries++
		}
		return nil
	})
	if entries != 0 {
		t.Errorf("%d answers of a dead sandbox were cached", entries)
	}
}

// run --shard K/N on each shard (default output names), then merge: the
// output of one unsharded run.
func TestRunShardsAndMerge(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 9)
	srv := sandboxServer(t, 0, nil)
	url := srv.URL + "/run_code"
	whole := filepath.Join(dir, "whole.jsonl")
	if code, _, stderr := run(context.Background(), "run", in, "-o", whole, "-q", "--sandbox-url", url); code != ExitOK {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	var outs []string
	for k := range 3 {
		if code, _, stderr := run(context.Background(), "run", in, "-q", "--shard", fmt.Sprintf("%d/3", k),
			"--sandbox-url", url); code != ExitOK {
			t.Fatalf("shard %d: exit %d: %s", k, code, stderr)
		}
		out := strings.TrimSuffix(in, ".jsonl") + fmt.Sprintf(".scored.shard-%d-of-3.jsonl", k)
		if _, err := os.Stat(out + ".shard"); err != nil {
			t.Fatalf("shard %d left no shard file: %v", k, err)
		}
		outs = append(outs, out)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	code, stdout, stderr := run(
		context.Background(),
		append([]string{"merge", merged, "--json"}, outs[2], outs[0], outs[1])...)
	if code != ExitOK {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(merged)
	if !bytes.Equal(a, b) {
		t.Error("the merged output differs from the unsharded run's")
	}
	var sum struct {
		Overall struct{ Prompts int } `json:"overall"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Overall.Prompts != 9 {
		t.Errorf("merged summary: %+v %v", sum, err)
	}
	if code, _, stderr := run(context.Background(), "merge", merged, outs[0], outs[1]); code != ExitFailed ||
		!strings.Contains(stderr, "2 shard outputs were given") {
		t.Errorf("merge of 2 of 3 shards: exit %d, %s", code, stderr)
	}
	if code, _, stderr := run(context.Background(), "run", in, "--shard", "3/3"); code != ExitUsage ||
		!strings.Contains(stderr, "--shard") {
		t.Errorf("--shard 3/3: exit %d, %s", code, stderr)
	}
}

// Input problems are reported as such: a ground-truth key that points at
// the wrong field fails the run (exit 1, naming the first row), and a line
// that is not JSON is counted apart, out of the means, with its own
// warning and not the one about rows without a data source.
func TestRunInputErrors(t *testing.T) {
	dir := t.TempDir()
	srv := sandboxServer(t, 0, nil)
	url := srv.URL + "/run_code"
	out := filepath.Join(dir, "style.jsonl")
	code, _, stderr := run(context.Background(), "run", "../testdata/example.jsonl", "-o", out, "-q", "--sandbox-url", url,
		"--ground-truth-key", "reward_model.style")
	if code != ExitFailed || !strings.Contains(stderr, "38 of 38 responses") ||
		!strings.Contains(stderr, "--max-input-errors") ||
		!strings.Contains(stderr, "first: row 0 response 0: invalid test_cases JSON format") {
		t.Errorf("wrong ground-truth key: exit %d, stderr %q; want exit 1 naming the first row", code, stderr)
	}
	if b, _ := os.ReadFile(out); strings.Count(string(b), "\n") != 22 {
		t.Errorf("wrong ground-truth key: the output holds %d rows, want 22", strings.Count(string(b), "\n"))
	}
	// Under the bound: a warning-free exit 0.
	if code, _, stderr := run(context.Background(), "run", "../testdata/example.jsonl", "-o", out, "-q",
		"--sandbox-url", url,
		"--ground-truth-key", "reward_model.style", "--max-input-errors", "1"); code != ExitOK {
		t.Errorf("--max-input-errors 1: exit %d: %s", code, stderr)
	}

	in := writeFile(
		t,
		dir,
		"bad.jsonl",
		`{"data_source":"x","responses":["`+"```python\\nprint(1)\\n```"+`"],"reward_model":{"ground_truth":"{\"inputs\":[\"\"],\"outputs\":[\"1\"]}"}}`+"\nthis is not json\n",
	)
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		filepath.Join(dir, "bad.out.jsonl"),
		"-q",
		"--json",
		"--sandbox-url",
		url,
	)
	if code != ExitOK {
		t.Fatalf("a line that is not JSON: exit %d: %s", code, stderr)
	}
	var sum struct {
		Overall struct {
			Prompts   int     `json:"prompts"`
			Responses int     `json:"responses"`
			Mean      float64 `json:"mean_score"`
		} `json:"overall"`
		Unreadable int    `json:"unreadable_rows"`
		First      string `json:"first_unreadable_row"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Overall.Prompts != 1 || sum.Overall.Responses != 1 || sum.Overall.Mean != 1 || sum.Unreadable != 1 ||
		!strings.Contains(sum.First, "bad.jsonl:2") {
		t.Errorf("a line that is not JSON: summary %+v; want 1 prompt with mean 1 and 1 unreadable row at bad.jsonl:2", sum)
	}
	if strings.Contains(stderr, "without a data source") || !strings.Contains(stderr, "1 input row could not be read") {
		t.Errorf("a line that is not JSON: stderr %q", stderr)
	}
}

// A run records how it was made: the version, the settings (redacted),
// the sandbox and its toolchains, the start and the host, read back from
// the summary, the parquet output's metadata and the cases file's first
// line, which report still reads.
func TestRunRecordsProvenance(t *testing.T) {
	dir := t.TempDir()
	in := exampleRows(t, dir, 3)
	out, cases, summary := filepath.Join(
		dir,
		"out.parquet",
	), filepath.Join(
		dir,
		"cases.jsonl",
	), filepath.Join(
		dir,
		"summary.json",
	)
	code, _, stderr := run(context.Background(), "run", in, "-o", out, "--cases-out", cases, "--summary", summary, "-q",
		"--timeout", "7", "--sandbox-header", "Authorization: Bearer s3cret-token")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Provenance results.Provenance `json:"provenance"`
	}
	b, _ := os.ReadFile(summary)
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	p := sum.Provenance
	host, _ := os.Hostname()
	if p.Version != version.Number() || p.Host != host || p.Started == "" || !strings.Contains(p.Sandbox, "embedded") {
		t.Errorf("summary provenance %+v", p)
	}
	if s := p.Settings["timeout"]; fmt.Sprint(s.Value) != "7" || s.Source != "flag --timeout" {
		t.Errorf("timeout setting recorded as %+v", s)
	}
	if len(p.Toolchains) == 0 || p.Toolchains[0].Program != "python3" || p.Toolchains[0].Version == "" {
		t.Errorf("toolchains %+v, want python3 with its version", p.Toolchains)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Error("the summary holds the secret header")
	}
	pf, err := file.OpenParquetFile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	kv := pf.MetaData().KeyValueMetadata().FindValue(results.ProvenanceKey)
	pf.Close()
	var fromParquet results.Provenance
	if kv == nil || json.Unmarshal([]byte(*kv), &fromParquet) != nil || fromParquet.Started != p.Started ||
		len(fromParquet.Toolchains) == 0 {
		t.Errorf("parquet metadata %s = %v", results.ProvenanceKey, kv)
	}
	c, _ := os.ReadFile(cases)
	first, _, _ := strings.Cut(string(c), "\n")
	var fromCases struct {
		Provenance results.Provenance `json:"provenance"`
	}
	if json.Unmarshal([]byte(first), &fromCases) != nil || fromCases.Provenance.Started != p.Started ||
		fromCases.Provenance.Version != p.Version {
		t.Errorf("cases file's first line: %.300s", first)
	}
	if code, _, stderr := run(context.Background(), "report", out, "--cases", cases, "-o", filepath.Join(dir,
		"r.html")); code != ExitOK {
		t.Errorf("report on a cases file with provenance: exit %d: %s", code, stderr)
	}

	// --cases-out x.parquet writes parquet: every case, the provenance in
	// its metadata, and report reads it.
	pcases := filepath.Join(dir, "cases.parquet")
	code, stdout, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		filepath.Join(dir, "out2.jsonl"),
		"--cases-out",
		pcases,
		"-q",
		"--json",
	)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum2 struct {
		Overall struct{ Cases int } `json:"overall"`
	}
	json.Unmarshal([]byte(stdout), &sum2)
	n := 0
	prov, err := results.ReadCases(pcases, func(c *results.Case) error {
		if c.Status == "" {
			t.Errorf("case read back without a status: %+v", c)
		}
		n++
		return nil
	})
	if err != nil || n == 0 || n != sum2.Overall.Cases || !strings.Contains(string(prov), `"tool":"verl-score"`) {
		t.Errorf("parquet cases file: %v, %d cases read back of %d, provenance %s", err, n, sum2.Overall.Cases, prov)
	}
	if code, _, stderr := run(context.Background(), "report", filepath.Join(dir, "out2.jsonl"), "--cases", pcases,
		"-o", filepath.Join(dir, "r2.html")); code != ExitOK {
		t.Errorf("report on a parquet cases file: exit %d: %s", code, stderr)
	}
}

// TestRunMaxConcurrentAuto: `run --max-concurrent auto:8` against serve
// scores the example as a fixed limit does, and the summary, printed and
// JSON, says where the endpoint's limit went.
func TestRunMaxConcurrentAuto(t *testing.T) {
	srv := sandboxServer(t, 0, nil)
	dir := t.TempDir()
	fixed, auto := filepath.Join(dir, "fixed.jsonl"), filepath.Join(dir, "auto.jsonl")
	url := srv.URL + "/run_code"
	if code, _, stderr := run(context.Background(), "run", "../testdata/example.jsonl", "-o", fixed, "-q",
		"--sandbox-url", url, "--max-concurrent", "8"); code != 0 {
		t.Fatalf("fixed limit: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := run(
		context.Background(),
		"run",
		"../testdata/example.jsonl",
		"-o",
		auto,
		"--summary",
		auto+".summary",
		"--sandbox-url",
		url,
		"--max-concurrent",
		"auto:8",
	)
	if code != 0 {
		t.Fatalf("auto: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(auto)
	f, _ := os.ReadFile(fixed)
	if !bytes.Equal(a, f) {
		t.Errorf("auto:8 scored the example differently from 8")
	}
	if !strings.Contains(stdout+stderr, "limit: end, mean (lowest-highest)") {
		t.Errorf("the printed summary has no limit column:\n%s%s", stdout, stderr)
	}
	b, _ := os.ReadFile(auto + ".summary")
	var sum struct {
		Endpoints []sandboxclient.EndpointStats `json:"endpoints"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Endpoints) != 1 || sum.Endpoints[0].Adaptive == nil {
		t.Fatalf("summary endpoints: %v %s", err, b)
	}
	if ad := sum.Endpoints[0].Adaptive; ad.Limit < 1 || ad.Highest > 8 || ad.Lowest > ad.Limit ||
		ad.Mean < float64(ad.Lowest) ||
		ad.Mean > float64(ad.Highest) {
		t.Errorf("adaptive limit %+v: want between 1 and the ceiling 8", ad)
	}
	if code, _, stderr := run(context.Background(), "run", "../testdata/example.jsonl", "-o", auto, "--sandbox-url",
		url, "--max-concurrent", "auto:x"); code != ExitUsage ||
		!strings.Contains(stderr, "max_concurrent") {
		t.Errorf("auto:x: exit %d, %s; want a usage error naming max_concurrent", code, stderr)
	}
}
