package cmd

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateShow = flag.Bool("update-show", false, "rewrite the golden files under testdata/show")

// seconds are the run times show prints, which differ from run to run.
var seconds = regexp.MustCompile(`\d+\.\d{3} s\b`)

// TestShowGolden scores testdata/show/rows.jsonl for real (a wrong answer,
// a runtime error, a compile error and a timeout) and shows each
// response with its cases: the text must be the golden file's, run times
// aside.
func TestShowGolden(t *testing.T) {
	dir := t.TempDir()
	out, cases := filepath.Join(dir, "show.jsonl"), filepath.Join(dir, "cases.jsonl")
	if code, _, stderr := run(context.Background(), "run", "../testdata/show/rows.jsonl", "-o", out, "--cases-out", cases,
		"--language", "auto", "--timeout", "2", "-q"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	for i, name := range []string{"wrong_answer", "runtime_error", "compile_error", "timeout"} {
		t.Run(name, func(t *testing.T) {
			which := []string{"0", "task-1", "2:0", "task-3#0"}[i] // each way of naming one
			code, stdout, stderr := run(context.Background(), "show", out, which, "--cases", cases)
			if code != ExitOK {
				t.Fatalf("show %s: exit %d\n%s", which, code, stderr)
			}
			got := seconds.ReplaceAllString(stdout, "N.NNN s")
			golden := filepath.Join("..", "testdata", "show", name+".golden")
			if *updateShow {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("show %s: got\n%s\nwant (%s)\n%s", which, got, golden, want)
			}
		})
	}
	// --failed steps through the four (none passed), without the cases
	// file each says how to get them.
	code, stdout, _ := run(context.Background(), "show", out, "--failed")
	if code != ExitOK || strings.Count(stdout, "── task-") != 4 || !strings.Contains(stdout, "given with --cases") {
		t.Errorf("show --failed: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := run(context.Background(), "show", out, "7:0"); code != ExitFailed ||
		!strings.Contains(stderr, "no response matches 7:0") {
		t.Errorf("show of a row that is not there: exit %d, %s", code, stderr)
	}
}

// TestCheckJUnitFailureBody: check names a mismatched response by its task
// id, and its JUnit failure says why (the first differing line) and
// carries the start of its code.
func TestCheckJUnitFailureBody(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../testdata/show/rows.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Every response claims the reward 1 it does not get.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		lines = append(lines, strings.TrimSuffix(l, "}")+`, "score": [1.0]}`)
	}
	in := writeFile(t, dir, "claimed.jsonl", strings.Join(lines[:2], "\n")+"\n") // the wrong answer and the runtime error
	junit := filepath.Join(dir, "check.xml")
	code, _, stderr := run(context.Background(), "check", in, "--junit", junit, "--reruns", "0", "-q")
	if code != ExitRegression {
		t.Fatalf("check: exit %d, want %d\n%s", code, ExitRegression, stderr)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)<testcase name="task-0#0".*?</testcase>`).FindString(string(b))
	golden := filepath.Join("..", "testdata", "show", "junit_failure.golden")
	body = regexp.MustCompile(`(">)[^<&]*/claimed\.jsonl:`).
		ReplaceAllString(body, "${1}claimed.jsonl:")
		// the temporary directory
	if *updateShow {
		os.WriteFile(golden, []byte(body+"\n"), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if body+"\n" != string(want) {
		t.Errorf("JUnit test case of task-0#0: got\n%s\nwant (%s)\n%s", body, golden, want)
	}
}

// TestShowRolloutDump: show reads a rollout dump directory as verl wrote
// it (no verl-score columns): each response with its code and the
// trainer's score; --failed keeps those scored below 1.
func TestShowRolloutDump(t *testing.T) {
	files, _ := filepath.Glob("../testdata/dump/*.jsonl")
	below := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var d struct{ Score float64 }
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatal(err)
			}
			if d.Score < 1 {
				below++
			}
		}
	}
	code, stdout, stderr := run(context.Background(), "show", "../testdata/dump", "--failed")
	if code != ExitOK {
		t.Fatalf("show: exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stdout, "not scored by verl-score"); n != below || n == 0 {
		t.Errorf("show --failed of the dump shows %d responses, want the %d scored below 1", n, below)
	}
	if !strings.Contains(stdout, "code (python):") {
		t.Errorf("no code shown:\n%s", stdout)
	}
}
