package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

func checkCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("SANDBOX_FUSION_URL", "")
	t.Setenv("VERL_SCORE_SANDBOX_URL", "")
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	return code, out.String(), errb.String()
}

// dumpSubset writes the given lines (0-based) of testdata/dump/1.jsonl to
// dir/1.jsonl, changing the score of the lines in alter.
func dumpSubset(t *testing.T, dir string, lines []int, alter map[int]float64) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/dump/1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	var out []string
	for _, i := range lines {
		line := all[i]
		if s, ok := alter[i]; ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			m["score"] = s
			nb, _ := json.Marshal(m)
			line = string(nb)
		}
		out = append(out, line)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A few short lines of the bundled dump: taco (3 cases), livecodebench (2),
// leetcode (1, passes), leetcode (1, runtime error, score 0), mbpp (1).
var dumpLines = []int{2, 4, 5, 6, 11}

type jsonReport struct {
	Counts struct {
		Compared, Equal, Regressed, Improved, Flaky int
	} `json:"counts"`
	Regression bool `json:"regression"`
	Mismatches []struct {
		Row, Response int
		Outcome       string
		Reference     float64
		New           float64
		NewVerdicts   []string `json:"new_verdicts"`
	} `json:"mismatches"`
	Flaky []struct {
		Row    int
		Reruns []float64
	} `json:"flaky"`
}

func TestCheckDumpEmbeddedSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs in the embedded sandbox")
	}
	t.Run("stored scores match", func(t *testing.T) {
		dir := dumpSubset(t, filepath.Join(t.TempDir(), "dump"), dumpLines, nil)
		code, out, errOut := checkCLI(t, "check", dir, "-q", "--json")
		if code != ExitOK {
			t.Fatalf("exit: got %d, want %d\n%s\n%s", code, ExitOK, out, errOut)
		}
		var rep jsonReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("json: %v\n%s", err, out)
		}
		if rep.Counts.Compared != 5 || rep.Counts.Equal != 5 || rep.Regression {
			t.Errorf("got %+v regression %v, want 5 compared, 5 equal, no regression", rep.Counts, rep.Regression)
		}
	})
	t.Run("altered scores", func(t *testing.T) {
		tmp := t.TempDir()
		// Row 0 (taco, verl 1.0) now claims 0.5; row 3 (leetcode, verl 0.0)
		// claims 1.0.
		dir := dumpSubset(t, filepath.Join(tmp, "dump"), dumpLines, map[int]float64{2: 0.5, 6: 1})
		junit, md := filepath.Join(tmp, "report.xml"), filepath.Join(tmp, "report.md")
		code, out, errOut := checkCLI(t, "check", dir, "-q", "--junit", junit, "--markdown", md)
		if code != ExitRegression {
			t.Fatalf("exit: got %d, want %d\n%s\n%s", code, ExitRegression, out, errOut)
		}
		for _, want := range []string{
			filepath.Join(dir, "1.jsonl") + ":1 ",
			filepath.Join(dir, "1.jsonl") + ":4 ",
			"regression: 2 of 5 responses moved",
		} {
			if !strings.Contains(out+errOut, want) {
				t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
			}
		}
		// The worst first: row 3 (0 instead of 1), then row 0 (1 instead of 0.5).
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 7 && (f[6] == "regressed" || f[6] == "improved") {
				rows = append(rows, f[0]+" "+f[6])
			}
		}
		if got, want := strings.Join(rows, ", "), "3:0 regressed, 0:0 improved"; got != want {
			t.Errorf("worst mismatches: got %q, want %q\n%s", got, want, out)
		}
		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil || doc.Tests != 5 || doc.Failures != 2 {
			t.Errorf("junit: got %+v (%v), want 5 tests, 2 failures", doc, err)
		}
		mdb, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(mdb), "| 3:0 | ") || !strings.Contains(string(mdb), "❌") {
			t.Errorf("markdown lacks row 3 or the ❌ mark:\n%s", mdb)
		}
	})
}

// flakyServer speaks SandboxFusion's /run_code protocol: programs print
// their stdin, except that a program containing FLAKY times out on every
// other request for its second case (stdin "2\n").
func flakyServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sandboxclient.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		stdin := ""
		if req.Stdin != nil {
			stdin = *req.Stdin
		}
		mu.Lock()
		calls[req.Code+"\x00"+stdin]++
		n := calls[req.Code+"\x00"+stdin]
		mu.Unlock()
		zero := 0
		resp := sandboxclient.Response{Status: sandboxclient.StatusSuccess, Files: map[string]string{},
			RunResult: &sandboxclient.StepResult{
				Status:        sandboxclient.StepFinished,
				ReturnCode:    &zero,
				Stdout:        stdin,
				ExecutionTime: 0.01,
			}}
		if strings.Contains(req.Code, "FLAKY") && stdin == "2\n" && n%2 == 1 {
			resp.Status = sandboxclient.StatusFailed
			resp.RunResult = &sandboxclient.StepResult{
				Status:        sandboxclient.StepTimeLimitExceeded,
				ExecutionTime: req.RunTimeout,
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheckFlakyStandIn(t *testing.T) {
	srv := flakyServer(t)
	gt := `{\"inputs\": [\"1\\n\", \"2\\n\"], \"outputs\": [\"1\\n\", \"2\\n\"]}`
	row := func(marker string) string {
		return `{"data_source": "apps", "reward_model": {"ground_truth": "` + gt + `"}, "responses": ["` +
			"```python\\n# " + marker + "\\n```" + `"], "score": [1.0]}`
	}
	in := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(in, []byte(row("FLAKY")+"\n"+row("ECHO")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		reruns    string
		wantCode  int
		wantFlaky int
	}{
		{"2", ExitOK, 1},
		{"0", ExitRegression, 0},
	}
	for _, tt := range tests {
		t.Run("reruns="+tt.reruns, func(t *testing.T) {
			code, out, errOut := checkCLI(
				t,
				"check",
				in,
				"-q",
				"--json",
				"--sandbox-url",
				srv.URL+"/run_code",
				"--reruns",
				tt.reruns,
			)
			if code != tt.wantCode {
				t.Fatalf("exit: got %d, want %d\n%s\n%s", code, tt.wantCode, out, errOut)
			}
			var rep jsonReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("json: %v\n%s", err, out)
			}
			if len(rep.Flaky) != tt.wantFlaky || rep.Counts.Flaky != tt.wantFlaky {
				t.Errorf("flaky: got %d (count %d), want %d", len(rep.Flaky), rep.Counts.Flaky, tt.wantFlaky)
			}
			if tt.wantFlaky == 1 && (rep.Flaky[0].Row != 0 || len(rep.Flaky[0].Reruns) != 1 || rep.Flaky[0].Reruns[0] != 1) {
				t.Errorf("flaky item: got %+v, want row 0 with one rerun scoring 1", rep.Flaky[0])
			}
			if tt.wantFlaky == 0 && (len(rep.Mismatches) != 1 || rep.Mismatches[0].Row != 0 || rep.Mismatches[0].New != 0.5) {
				t.Errorf("mismatches: got %+v, want row 0 at 0.5", rep.Mismatches)
			}
		})
	}
}

func TestDiffCommand(t *testing.T) {
	a, b := "../testdata/check/a.scored.jsonl", "../testdata/check/b.scored.jsonl"
	junit := filepath.Join(t.TempDir(), "diff.xml")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"moved", []string{"diff", a, b, "--junit", junit}, ExitRegression, "True → -3"},
		{"within allowance", []string{"diff", a, b, "--max-mismatch", "0.6"}, ExitOK, "Consistent within the allowance"},
		{"same file", []string{"diff", a, a}, ExitOK, "Consistent: 7 of 7"},
		{"markdown on stdout", []string{"diff", a, b, "--markdown", "-"}, ExitRegression, "| **True** | 10 |"},
		{"one argument", []string{"diff", a}, ExitUsage, "two outputs"},
		{"bad tolerance", []string{"diff", a, b, "--tolerance", "-1"}, ExitUsage, "--tolerance"},
		{"two reports on stdout", []string{"diff", a, b, "--json", "--markdown", "-"}, ExitUsage, "both write to stdout"},
		{"not an output", []string{"diff", a, "../testdata/check/rows.jsonl"}, ExitFailed, "reward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := checkCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit: got %d, want %d\n%s\n%s", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(out+errOut, tt.want) {
				t.Errorf("output lacks %q:\n%s\n%s", tt.want, out, errOut)
			}
		})
	}
	b2, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b2, &doc); err != nil || doc.Tests != 7 || doc.Failures != 4 {
		t.Errorf("junit: got %+v (%v), want 7 tests, 4 failures", doc, err)
	}
}

func TestCheckCommandErrors(t *testing.T) {
	noScore := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(noScore, []byte(`{"data_source": "x", "reward_model": {"ground_truth": "{\"inputs\": [], \"outputs\": []}"}, "responses": ["x"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no input", []string{"check"}, ExitUsage, "one INPUT"},
		{"bad max mismatch", []string{"check", noScore, "--max-mismatch", "2"}, ExitUsage, "--max-mismatch"},
		{"bad reruns", []string{"check", noScore, "--reruns", "-1"}, ExitUsage, "--reruns"},
		{"missing input", []string{"check", filepath.Join(t.TempDir(), "nope.jsonl"), "-q"}, ExitFailed, "nope.jsonl"},
		{"no reference", []string{"check", noScore, "-q"}, ExitFailed, "no response has a reference score"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := checkCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit: got %d, want %d\n%s\n%s", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
	code, out, _ := checkCLI(t, "check", "--help")
	if code != ExitOK || !strings.Contains(out, "EXIT STATUS") || !strings.Contains(out, "3  regression") {
		t.Errorf("help: exit %d, want 0 and an EXIT STATUS block naming 3:\n%s", code, out)
	}
}

func TestCheckBaselineFromRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs in the embedded sandbox")
	}
	tmp := t.TempDir()
	dir := dumpSubset(t, filepath.Join(tmp, "dump"), []int{2, 6, 11}, nil)
	out := filepath.Join(tmp, "base.scored.parquet")
	if code, o, e := checkCLI(t, "run", dir, "-q", "-o", out); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, o, e)
	}
	code, o, e := checkCLI(t, "check", dir, "-q", "--baseline", out, "--json")
	if code != ExitOK {
		t.Fatalf("check --baseline: exit %d, want 0\n%s\n%s", code, o, e)
	}
	var rep struct {
		Counts      struct{ Compared, Equal int } `json:"counts"`
		Transitions []struct {
			From, To string
			Count    int
		} `json:"verdict_transitions"`
	}
	if err := json.Unmarshal([]byte(o), &rep); err != nil {
		t.Fatal(err)
	}
	// taco (3 cases True), leetcode (1 case -2), mbpp (1 case True).
	if rep.Counts.Compared != 3 || rep.Counts.Equal != 3 {
		t.Errorf("counts: got %+v, want 3 compared, 3 equal", rep.Counts)
	}
	got := ""
	for _, tr := range rep.Transitions {
		got += tr.From + "→" + tr.To + ":" + strconv.Itoa(tr.Count) + " "
	}
	if want := "True→True:4 -2→-2:1 "; got != want {
		t.Errorf("transitions: got %q, want %q", got, want)
	}
}

// TestHTMLPages: report writes a page for a scored output, and diff
// --html one with the transition heat map; a bad input is an error
// naming it.
func TestHTMLPages(t *testing.T) {
	a, b := "../testdata/check/a.scored.jsonl", "../testdata/check/b.scored.jsonl"
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if code, out, errOut := checkCLI(t, "report", a, "-o", page); code != ExitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errOut)
	}
	diffPage := filepath.Join(dir, "diff.html")
	if code, out, errOut := checkCLI(t, "diff", a, b, "--html", diffPage); code != ExitRegression {
		t.Fatalf("diff --html: exit %d\n%s\n%s", code, out, errOut)
	}
	for path, want := range map[string]string{page: `data-chart="pass_at_k"`, diffPage: `data-chart="transitions"`} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) || !strings.HasPrefix(string(data), "<!DOCTYPE html>") {
			t.Errorf("%s lacks %s", path, want)
		}
	}
	if code, _, errOut := checkCLI(t, "report", "../testdata/check/rows.jsonl", "-o", page); code != ExitFailed ||
		!strings.Contains(errOut, "rows.jsonl") {
		t.Errorf("report of an input that is not scored: exit %d, %s", code, errOut)
	}
	if code, _, errOut := checkCLI(t, "report", a, "--cases", filepath.Join(dir, "none.jsonl"), "-o",
		page); code != ExitFailed ||
		!strings.Contains(errOut, "none.jsonl") {
		t.Errorf("report with a missing cases file: exit %d, %s", code, errOut)
	}
}

// An interrupted check exits 4, as an interrupted run does, gently (the
// first signal) or hard (the context).
func TestCheckInterruptedExits4(t *testing.T) {
	t.Setenv("SANDBOX_FUSION_URL", "")
	t.Setenv("VERL_SCORE_SANDBOX_URL", "")
	for _, hard := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		interrupt := make(chan struct{})
		var once sync.Once
		stop := func() { once.Do(func() { close(interrupt) }) }
		if hard {
			stop = cancel
		}
		srv := sandboxServer(t, 3, stop)
		var outb, errb bytes.Buffer
		code := Run(
			ctx,
			[]string{"check", "../testdata/dump", "-q", "--sandbox-url", srv.URL + "/run_code", "--max-concurrent", "2"},
			Streams{In: strings.NewReader(""), Out: &outb, ErrOut: &errb, Interrupt: interrupt},
		)
		cancel()
		if code != ExitInterrupted {
			t.Errorf("hard %v: got exit %d, want %d: %s", hard, code, ExitInterrupted, errb.String())
		}
	}
}
