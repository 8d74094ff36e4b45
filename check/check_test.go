package check

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
)

func checkOpts(input string) Options {
	return Options{Input: input, Reader: rollout.DefaultOptions(), Tolerance: DefaultTolerance, Reruns: 2, KeepItems: true}
}

// checkOn checks on an engine over client at 8 requests at once.
func checkOn(ctx context.Context, client sandboxclient.Client, opts Options) (*Report, error) {
	eo := score.DefaultOptions()
	eo.MaxConcurrent = 8
	eng, err := score.New(client, eo)
	if err != nil {
		return nil, err
	}
	return Check(ctx, eng, opts)
}

func outcomes(r *Report) map[string]Outcome {
	m := map[string]Outcome{}
	for _, it := range r.Items {
		m[it.Name()] = it.Outcome
	}
	return m
}

func TestCheckOutcomes(t *testing.T) {
	tests := []struct {
		name        string
		lines       func(t *testing.T) []string
		reruns      int
		maxMismatch float64
		want        map[string]Outcome
		wantCounts  Counts
		regression  bool
	}{
		{
			name: "all equal",
			lines: func(t *testing.T) []string {
				return []string{
					dumpLine(t, "x", "ECHO", 3, 1.0),
					dumpLine(t, "x", "CRASH", 2, 0.0),
					dumpLine(t, "y", "SLOW", 1, 0.0),
				}
			},
			reruns:     2,
			want:       map[string]Outcome{"0:0": Equal, "1:0": Equal, "2:0": Equal},
			wantCounts: Counts{Responses: 3, Compared: 3, Equal: 3},
		},
		{
			name: "altered scores regress and improve",
			lines: func(t *testing.T) []string {
				return []string{
					dumpLine(t, "x", "ECHO", 4, 0.75),
					dumpLine(t, "x", "CRASH", 2, 0.5),
					dumpLine(t, "y", "ECHO", 1, 1.0),
				}
			},
			reruns:     2,
			want:       map[string]Outcome{"0:0": Improved, "1:0": Regressed, "2:0": Equal},
			wantCounts: Counts{Responses: 3, Compared: 3, Equal: 1, Regressed: 1, Improved: 1, Mismatches: 2},
			regression: true,
		},
		{
			name: "timeout every other run is flaky",
			lines: func(t *testing.T) []string {
				return []string{dumpLine(t, "x", "FLAKY", 1, 1.0), dumpLine(t, "x", "ECHO", 2, 1.0)}
			},
			reruns:     2,
			want:       map[string]Outcome{"0:0": Flaky, "1:0": Equal},
			wantCounts: Counts{Responses: 2, Compared: 2, Equal: 1, Flaky: 1},
		},
		{
			name: "flaky without reruns is a regression",
			lines: func(t *testing.T) []string {
				return []string{dumpLine(t, "x", "FLAKY", 1, 1.0), dumpLine(t, "x", "ECHO", 2, 1.0)}
			},
			reruns:     0,
			want:       map[string]Outcome{"0:0": Regressed, "1:0": Equal},
			wantCounts: Counts{Responses: 2, Compared: 2, Equal: 1, Regressed: 1, Mismatches: 1},
			regression: true,
		},
		{
			name: "a timeout that repeats is a regression",
			lines: func(t *testing.T) []string {
				return []string{dumpLine(t, "x", "SLOW", 2, 1.0), dumpLine(t, "x", "ECHO", 2, 1.0)}
			},
			reruns:     3,
			want:       map[string]Outcome{"0:0": Regressed, "1:0": Equal},
			wantCounts: Counts{Responses: 2, Compared: 2, Equal: 1, Regressed: 1, Mismatches: 1},
			regression: true,
		},
		{
			name: "one mismatch in four is within a 25% allowance",
			lines: func(t *testing.T) []string {
				return []string{dumpLine(t, "x", "ECHO", 1, 1.0), dumpLine(t, "x", "ECHO", 1, 1.0),
					dumpLine(t, "x", "ECHO", 1, 1.0), dumpLine(t, "x", "ECHO", 1, 0.0)}
			},
			maxMismatch: 0.25,
			want:        map[string]Outcome{"3:0": Improved},
			wantCounts:  Counts{Responses: 4, Compared: 4, Equal: 3, Improved: 1, Mismatches: 1},
		},
		{
			name: "null reference is not compared",
			lines: func(t *testing.T) []string {
				return []string{dumpLine(t, "x", "ECHO", 1, nil), dumpLine(t, "x", "ECHO", 1, 1.0)}
			},
			want:       map[string]Outcome{"0:0": NoReference, "1:0": Equal},
			wantCounts: Counts{Responses: 2, Compared: 1, Equal: 1, NoReference: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := checkOpts(writeFile(t, "1.jsonl", tt.lines(t)...))
			opts.Reruns = tt.reruns
			opts.MaxMismatch = tt.maxMismatch
			rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			got := outcomes(rep)
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s: got %s, want %s", name, got[name], want)
				}
			}
			if rep.Counts != tt.wantCounts {
				t.Errorf("counts: got %+v, want %+v", rep.Counts, tt.wantCounts)
			}
			if rep.Regression != tt.regression {
				t.Errorf("regression: got %v, want %v (%s)", rep.Regression, tt.regression, rep.Summary())
			}
		})
	}
}

func TestCheckFlakyRuns(t *testing.T) {
	opts := checkOpts(writeFile(t, "1.jsonl", dumpLine(t, "x", "FLAKY", 1, 1.0), dumpLine(t, "x", "SLOW", 1, 1.0)))
	opts.Reruns = 2
	rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Flaky) != 1 {
		t.Fatalf("got %d flaky, want 1", len(rep.Flaky))
	}
	// First run timed out (0), the rerun passed (1): no further run needed.
	if f := rep.Flaky[0]; *f.New != 0 || fmt.Sprint(f.Runs) != "[1]" {
		t.Errorf("flaky runs: got new %v runs %v, want new 0 runs [1]", *f.New, f.Runs)
	}
	// The persistent timeout was run three times in all.
	if len(rep.Mismatches) != 1 || fmt.Sprint(rep.Mismatches[0].Runs) != "[0 0]" {
		t.Fatalf("mismatches: got %+v, want one with runs [0 0]", rep.Mismatches)
	}
	if got := rep.Mismatches[0].NewVerdicts.String(); got != "-3" {
		t.Errorf("verdicts: got %q, want %q", got, "-3")
	}
}

// A compile timeout (-4, compile_timeout) may not repeat either: check
// reruns it as it reruns -3, and a rerun that compiles makes it flaky, not
// a regression.
func TestCheckRerunsCompileTimeouts(t *testing.T) {
	opts := checkOpts(writeFile(t, "1.jsonl", dumpLine(t, "x", "STARVEDCOMPILE", 2, 1.0)))
	rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Flaky) != 1 || len(rep.Mismatches) != 0 {
		t.Fatalf("got %d flaky and %d mismatches, want the compile timeout flaky", len(rep.Flaky), len(rep.Mismatches))
	}
	if f := rep.Flaky[0]; *f.New != 0 || fmt.Sprint(f.Runs) != "[1]" || f.FlakyReason != reasonReruns {
		t.Errorf("flaky: new %v, runs %v, reason %q", *f.New, f.Runs, f.FlakyReason)
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines func(t *testing.T) []string
		want  error
	}{
		{"sandbox down", func(t *testing.T) []string {
			return []string{dumpLine(t, "x", "DOWN", 2, 1.0), dumpLine(t, "x", "DOWN", 1, 1.0)}
		}, score.ErrSandboxUnusable},
		{"no reference", func(t *testing.T) []string {
			return []string{dumpLine(t, "x", "ECHO", 2, nil)}
		}, ErrNoReference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkOn(context.Background(), newFakeSandbox(), checkOpts(writeFile(t, "1.jsonl", tt.lines(t)...)))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	bad := []struct {
		name string
		mod  func(*Options)
	}{
		{"negative tolerance", func(o *Options) { o.Tolerance = -1 }},
		{"fraction above 1", func(o *Options) { o.MaxMismatch = 1.5 }},
		{"negative reruns", func(o *Options) { o.Reruns = -1 }},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			o := checkOpts(writeFile(t, "1.jsonl", dumpLine(t, "x", "ECHO", 1, 1.0)))
			tt.mod(&o)
			if _, err := checkOn(context.Background(), newFakeSandbox(), o); err == nil {
				t.Fatal("got no error, want one")
			}
		})
	}
}

func TestCheckInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := checkOn(ctx, newFakeSandbox(), checkOpts(writeFile(t, "1.jsonl", dumpLine(t, "x", "ECHO", 1, 1.0))))
	if !errors.Is(err, ErrInterrupted) && !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an interruption", err)
	}
}

func TestCheckBaseline(t *testing.T) {
	// The input: two rows of echo solutions over two cases each (all pass).
	row := func(n int) string {
		var resp []string
		for range n {
			resp = append(resp, `"`+strings.ReplaceAll(code("ECHO"), "\n", `\n`)+`"`)
		}
		return fmt.Sprintf(
			`{"data_source": "x", "reward_model": {"ground_truth": %q}, "responses": [%s]}`,
			gt(2),
			strings.Join(resp, ","),
		)
	}
	input := writeFile(t, "in.jsonl", row(2), row(1), row(1))
	// The baseline: row 0 as now but for a timeout on case 1 of response 1;
	// row 1 had a wrong answer on case 1; row 2 is missing from it.
	base := writeFile(
		t,
		"base.jsonl",
		`{"reward": [1.0, 0.5], "case_results": [[true, true], [true, -3]], "case_status": [["success","success"],["success","timeout"]], "reward_error": [null, null]}`,
		`{"reward": [0.5], "case_results": [[true, false]], "case_status": [["success","wrong_answer"]], "reward_error": [null]}`,
	)
	opts := checkOpts(input)
	opts.Baseline = base
	rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{"0:0": Equal, "0:1": Flaky, "1:0": Improved, "2:0": Missing}
	if got := outcomes(rep); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes: got %v, want %v", got, want)
	}
	wantTrans := "[{True True 4} {False True 1} {-3 True 1} {none True 2}]"
	if got := fmt.Sprint(rep.Transitions); got != wantTrans {
		t.Errorf("transitions: got %s, want %s", got, wantTrans)
	}
	if !rep.Regression {
		t.Errorf("got no regression, want one")
	}
	if len(rep.Flaky) != 1 || rep.Flaky[0].FlakyReason != reasonReference {
		t.Errorf("flaky: got %+v, want row 0 response 1 flaky because of the baseline's timeout", rep.Flaky)
	}
	imp := rep.Mismatches[0]
	if imp.Outcome != Improved || len(imp.Changes) != 1 ||
		imp.Changes[0] != (CaseChange{Case: 1, From: "False", To: "True"}) {
		t.Errorf("worst mismatch: got %+v, want row 1 improved with case 1 False→True", imp)
	}
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "baseline ends before row 2") {
		t.Errorf("notes: got %q, want one saying the baseline ends before row 2", rep.Notes)
	}
}

func TestCheckReportsText(t *testing.T) {
	opts := checkOpts(
		writeFile(
			t,
			"1.jsonl",
			dumpLine(t, "x", "FLAKY", 1, 1.0),
			dumpLine(t, "y", "CRASH", 2, 1.0),
			dumpLine(t, "y", "ECHO", 2, 1.0),
		),
	)
	rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var txt, md strings.Builder
	if err := rep.WriteText(&txt, 20); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md, 20); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, got string
		want      []string
	}{
		{"text", txt.String(), []string{"WORST MISMATCHES (1 of 1)", "1.jsonl:2", "-2 -2", "FLAKY (1 of 1", "0, 1",
			reasonReruns, "Regression: 1 of 3 responses"}},
		{"markdown", md.String(), []string{"### ❌", "| 1 | 0 | ", "| -2 -2 |", "#### Flaky (1 of 1", "| 0, 1 |",
			"| y | 2 | 1 | 1 | 0 | 0 | 0 | 1.0000 | 0.5000 |"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.got, w) {
				t.Errorf("%s report lacks %q:\n%s", tc.name, w, tc.got)
			}
		}
	}
	// A single-case flaky response and a two-case regression: y has one
	// equal and one regressed response.
	if rep.Counts.Compared != 3 || rep.Counts.Flaky != 1 || rep.Counts.Regressed != 1 {
		t.Errorf("counts: got %+v", rep.Counts)
	}
}

func TestCheckBaselineShape(t *testing.T) {
	echo := `"` + strings.ReplaceAll(code("ECHO"), "\n", `\n`) + `"`
	row := func(n int) string {
		return fmt.Sprintf(
			`{"data_source": "x", "reward_model": {"ground_truth": %q}, "responses": [%s]}`,
			gt(1),
			strings.TrimSuffix(strings.Repeat(echo+",", n), ","),
		)
	}
	base := func(n int) string {
		return fmt.Sprintf(`{"reward": [%s], "case_results": [%s], "case_status": [%s], "reward_error": [%s]}`,
			strings.TrimSuffix(strings.Repeat("1.0,", n), ","), strings.TrimSuffix(strings.Repeat("[true],", n), ","),
			strings.TrimSuffix(strings.Repeat(`["success"],`, n), ","), strings.TrimSuffix(strings.Repeat("null,", n), ","))
	}
	tests := []struct {
		name        string
		input, base []string
		missing     string
		note        string
	}{
		{
			"input has more responses",
			[]string{row(2)},
			[]string{base(1)},
			"0:1",
			"row 0: the input has 2 responses, the baseline 1",
		},
		{
			"baseline has more responses",
			[]string{row(1)},
			[]string{base(2)},
			"0:1",
			"row 0: the input has 1 responses, the baseline 2",
		},
		{
			"baseline has more rows",
			[]string{row(1)},
			[]string{base(1), base(1)},
			"1:0",
			"the baseline has 2 rows, the input 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := checkOpts(writeFile(t, "in.jsonl", tt.input...))
			opts.Baseline = writeFile(t, "base.jsonl", tt.base...)
			rep, err := checkOn(context.Background(), newFakeSandbox(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Counts.Missing != 1 || rep.Counts.Equal != 1 || !rep.Regression {
				t.Errorf("counts: got %+v (regression %v), want 1 equal, 1 missing, a regression", rep.Counts, rep.Regression)
			}
			if len(rep.Mismatches) != 1 || rep.Mismatches[0].Name() != tt.missing {
				t.Errorf("mismatches: got %v, want %s", rep.Mismatches, tt.missing)
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), tt.note) {
				t.Errorf("notes: got %q, want %q", rep.Notes, tt.note)
			}
		})
	}
}
