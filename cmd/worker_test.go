package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/version"
	"github.com/verl-score/verl-score/worker"
)

// TestWorkerAnswersEachLineInOrder drives `verl-score worker` as the
// Python package does: a ready line, then one result per request line, in
// order, ids handed back as sent, bad lines answered with their reason.
func TestWorkerAnswersEachLineInOrder(t *testing.T) {
	srv := sandboxServer(t, 0, nil)
	gt := `"{\"inputs\": [\"3\\n\", \"5\\n\"], \"outputs\": [\"6\\n\", \"10\\n\"]}"`
	double := "```python\\nprint(int(input())*2)\\n```"
	var in strings.Builder
	for i := range 20 {
		// Every fifth program is wrong on its second case; ids of
		// several JSON kinds.
		code := double
		if i%5 == 4 {
			code = "```python\\nn=int(input())\\nprint(6 if n==3 else 0)\\n```"
		}
		fmt.Fprintf(
			&in,
			`{"id": %s, "data_source": "taco", "solution_str": "%s", "ground_truth": %s}`+"\n",
			[]string{`1`, `"s"`, `{"k": [1]}`, `null`}[i%4],
			code,
			gt,
		)
	}
	in.WriteString("\nnot json\n")
	in.WriteString(`{"id": 99, "data_source": "taco", "ground_truth": {"inputs": ["1"], "outputs": ["1"]}}` + "\n")
	in.WriteString(
		`{"id": 100, "data_source": "mbpp", "solution_str": "` + "```python\\ndef f(x): return x\\n```" + `", "ground_truth": {"inputs": ["1"], "outputs": ["1"]}, "language": "nodejs"}`,
	)

	var out, errb bytes.Buffer
	code := Run(
		context.Background(),
		[]string{"worker", "--sandbox-url", srv.URL},
		Streams{In: strings.NewReader(in.String()), Out: &out, ErrOut: &errb},
	)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+20+3 {
		t.Fatalf("got %d lines, want a ready line and 23 results:\n%s", len(lines), out.String())
	}
	var ready worker.Ready
	if err := json.Unmarshal([]byte(lines[0]), &ready); err != nil || !ready.Ready || ready.Version != version.Number() ||
		!strings.Contains(ready.Sandbox, "SandboxFusion") {
		t.Fatalf("ready line %q (%v)", lines[0], err)
	}
	results := make([]worker.Result, len(lines)-1)
	for i, l := range lines[1:] {
		if err := json.Unmarshal([]byte(l), &results[i]); err != nil {
			t.Fatalf("result %d: %v: %s", i, err, l)
		}
	}
	for i, r := range results[:20] {
		wantID := []string{`1`, `"s"`, `{"k":[1]}`, `null`}[i%4]
		var compact bytes.Buffer
		if err := json.Compact(&compact, r.ID); err != nil || compact.String() != wantID {
			t.Errorf("result %d: id %s, want %s", i, r.ID, wantID)
		}
		want, verdicts := 1.0, "[1 1]"
		if i%5 == 4 {
			want, verdicts = 0.5, "[1 0]" // taco scores continuously, as verl
		}
		if r.Score != want || fmt.Sprint(r.Verdicts) != verdicts || r.Error != "" || !r.Continuous {
			t.Errorf("result %d: %+v, want score %v verdicts %s", i, r, want, verdicts)
		}
	}
	if r := results[20]; r.Score != 0 || !strings.Contains(r.Error, "request line 22: not a JSON request object") ||
		string(r.ID) != "null" {
		t.Errorf("the line that is not JSON: %+v", r)
	}
	if r := results[21]; string(r.ID) != "99" || r.Error != "request line 23: no solution_str" {
		t.Errorf("the request without a solution: %+v", r)
	}
	if r := results[22]; string(r.ID) != "100" || r.Language != "nodejs" || r.Continuous {
		t.Errorf("the request's own language and data source: %+v", r)
	}
}

// TestWorkerBadOptionFailsBeforeReady: the Python package raises the
// worker's own message when no ready line comes.
func TestWorkerBadOptionFailsBeforeReady(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(
		context.Background(),
		[]string{"worker", "--timeout", "-1"},
		Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
	)
	if code == ExitOK || out.Len() != 0 || !strings.Contains(errb.String(), "timeout must be positive") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := run(context.Background(), args...)
		if code != ExitOK || stdout != version.String()+"\n" ||
			!strings.HasPrefix(stdout, "verl-score "+version.Number()+" (revision ") {
			t.Errorf("%v: exit %d, %q, %q", args, code, stdout, stderr)
		}
	}
}

// needProgram skips a test when a toolchain is missing, loudly, and fails
// it under CI=true, where .ci/run has installed it.
func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed, and CI must run this test", name)
		}
		t.Skipf("SKIPPED: %s is not installed", name)
	}
}

// TestRunSaysWhenEveryRubyProgramCrashes: under a memory limit Ruby cannot
// start (its stack limit is the memory limit, as on SandboxFusion): every
// response gets -2 as in verl, and run says why and names the flag; with
// the flag, the programs run.
func TestRunSaysWhenEveryRubyProgramCrashes(t *testing.T) {
	needProgram(t, "ruby")
	dir := t.TempDir()
	in := writeFile(
		t,
		dir,
		"ruby.jsonl",
		`{"data_source":"multipl_e","responses":["`+"```ruby\\nputs gets.to_i * 2\\n```"+`","`+"```ruby\\nx = gets.to_i\\nputs x + x\\n```"+`"],"reward_model":{"ground_truth":"{\"inputs\": [\"2\\n\"], \"outputs\": [\"4\\n\"]}"}}`+"\n",
	)
	summary := filepath.Join(dir, "summary.json")
	code, _, stderr := run(
		context.Background(),
		"run",
		in,
		"-o",
		filepath.Join(dir, "out.jsonl"),
		"-q",
		"--language",
		"auto",
		"--summary",
		summary,
	)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning: every ruby response (2) crashed at start with SIGSEGV and no output") ||
		!strings.Contains(stderr, "--ruby-stack-mb 8") {
		t.Errorf("no warning: %s", stderr)
	}
	var sum struct {
		Crashed []struct {
			Language, Signal, Cause string
			Responses               int
		} `json:"crashed_at_start"`
	}
	data, _ := os.ReadFile(summary)
	if err := json.Unmarshal(data, &sum); err != nil || len(sum.Crashed) != 1 || sum.Crashed[0].Language != "ruby" ||
		sum.Crashed[0].Responses != 2 ||
		sum.Crashed[0].Cause == "" {
		t.Errorf("summary: %s (%v)", data, err)
	}
	out := filepath.Join(dir, "lifted.jsonl")
	code, _, stderr = run(context.Background(), "run", in, "-o", out, "-q", "--language", "auto", "--ruby-stack-mb", "8")
	data, _ = os.ReadFile(out)
	if code != ExitOK || !strings.Contains(string(data), `"reward":[1.0,1.0]`) ||
		strings.Contains(stderr, "crashed at start") {
		t.Errorf("with --ruby-stack-mb 8: exit %d, %s, %s", code, data, stderr)
	}
}
