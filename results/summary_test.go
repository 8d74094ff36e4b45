package results

import (
	"github.com/verl-score/verl-score/sandbox/lang"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verl-score/verl-score/verdict"
)

func TestPassAtK(t *testing.T) {
	tests := []struct {
		n, c, k int
		want    float64
	}{
		{4, 0, 1, 0},
		{4, 1, 1, 0.25},
		{4, 1, 2, 0.5}, // 1 - C(3,2)/C(4,2) = 1 - 3/6
		{4, 2, 2, 5.0 / 6},
		{4, 3, 2, 1},
		{8, 1, 8, 1},
	}
	for _, tt := range tests {
		if got := PassAtK(tt.n, tt.c, tt.k); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("PassAtK(%d, %d, %d): got %v, want %v", tt.n, tt.c, tt.k, got, tt.want)
		}
	}
}

func resp(reward float64, verdicts ...int8) Response {
	r := Response{Reward: reward, Verdicts: verdicts, Requests: len(verdicts)}
	for _, v := range verdicts {
		if v == -1 {
			r.Infra = true
		}
	}
	return r
}

// TestSummaryMeansAndMask: verl's test_score is the mean over prompts of
// the mean of their responses; mask leaves responses with -1 verdicts out.
func TestSummaryMeansAndMask(t *testing.T) {
	rows := []*Row{
		{Index: 0, DataSource: "a", Responses: []Response{resp(1, 1, 1), resp(0, 0, 1)}},     // prompt mean 0.5
		{Index: 1, DataSource: "a", Responses: []Response{resp(0.5, 1, -1), resp(1, 1, 1)}},  // 0.75; masked: 1
		{Index: 2, DataSource: "b", Responses: []Response{resp(0, -1, -1), resp(0, -1, -1)}}, // 0; masked: left out
		{Index: 3, DataSource: "b", Responses: []Response{resp(0.25, -2, 1, 0, -3)}},         // 0.25
	}
	for _, tt := range []struct {
		mask                  bool
		overall, a, b, pass1a float64
		masked                int
	}{
		{false, (0.5 + 0.75 + 0 + 0.25) / 4, 0.625, 0.125, 0.5, 0},
		{true, (0.5 + 1 + 0.25) / 3, 0.75, 0.25, (0.5 + 1) / 2, 3},
	} {
		s := NewSummary("in", "out", tt.mask, nil)
		for _, r := range rows {
			s.Add(r, tt.mask)
		}
		s.Finish(time.Second)
		if got := s.Overall.MeanScore; math.Abs(got-tt.overall) > 1e-12 {
			t.Errorf("mask %v: overall mean got %v, want %v", tt.mask, got, tt.overall)
		}
		if got := s.BySource["a"].MeanScore; math.Abs(got-tt.a) > 1e-12 {
			t.Errorf("mask %v: source a got %v, want %v", tt.mask, got, tt.a)
		}
		if got := s.BySource["b"].MeanScore; math.Abs(got-tt.b) > 1e-12 {
			t.Errorf("mask %v: source b got %v, want %v", tt.mask, got, tt.b)
		}
		if got := s.BySource["a"].PassAtK["pass@1"]; math.Abs(got-tt.pass1a) > 1e-12 {
			t.Errorf("mask %v: source a pass@1 got %v, want %v", tt.mask, got, tt.pass1a)
		}
		if s.Overall.Masked != tt.masked {
			t.Errorf("mask %v: got %d masked, want %d", tt.mask, s.Overall.Masked, tt.masked)
		}
		if s.Overall.InfraResponses != 3 || math.Abs(s.Overall.InfraErrorRate-3.0/7) > 1e-12 {
			t.Errorf(
				"mask %v: got %d infra responses (rate %v), want 3 (3/7)",
				tt.mask,
				s.Overall.InfraResponses,
				s.Overall.InfraErrorRate,
			)
		}
		if s.Overall.Verdicts["True"] != 7 || s.Overall.Verdicts["-1"] != 5 || s.Overall.Verdicts["-3"] != 1 {
			t.Errorf("mask %v: verdict counts %v", tt.mask, s.Overall.Verdicts)
		}
	}
}

// TestCrashedAtStart: a language all of whose responses were killed by one
// signal before writing anything is named, with Ruby's known cause; one
// response that wrote something, another signal, or another verdict keeps
// a language off the list.
func TestCrashedAtStart(t *testing.T) {
	segv, abrt, one := -11, -6, 1
	empty, text := "", "partial"
	crash := func(code int, out *string) verdict.Case {
		return verdict.Case{Verdict: verdict.RuntimeError, ExitCode: &code, Stdout: out, Stderr: &empty}
	}
	if got := CrashAtStart([]verdict.Case{crash(segv, &empty), crash(segv, nil)}); got != "SIGSEGV" {
		t.Errorf("two segfaults: %q", got)
	}
	for name, cases := range map[string][]verdict.Case{
		"wrote something": {crash(segv, &empty), crash(segv, &text)},
		"two signals":     {crash(segv, &empty), crash(abrt, &empty)},
		"an exit status":  {crash(one, &empty)},
		"a timeout":       {{Verdict: verdict.Timeout, ExitCode: &segv}},
		"no cases":        nil,
	} {
		if got := CrashAtStart(cases); got != "" {
			t.Errorf("%s: %q, want none", name, got)
		}
	}

	s := NewSummary("in", "out", false, nil)
	resp := func(lang, crash string) Response {
		return Response{Verdicts: []int8{-2}, Language: lang, Crash: crash}
	}
	s.Add(
		&Row{
			DataSource: "x",
			Responses:  []Response{resp("ruby", "SIGSEGV"), resp("ruby", "SIGSEGV"), resp("lua", "SIGSEGV"), resp("lua", "")},
		},
		false,
	)
	s.Add(&Row{Index: 1, DataSource: "x", Responses: []Response{resp("ruby", "SIGSEGV"), resp("php", "SIGABRT")}}, false)
	s.Finish(time.Second)
	if len(s.CrashedAtStart) != 2 || s.CrashedAtStart[0].Language != "php" || s.CrashedAtStart[1].Language != "ruby" ||
		s.CrashedAtStart[1].Responses != 3 {
		t.Fatalf("crashed at start: %+v", s.CrashedAtStart)
	}
	if s.CrashedAtStart[1].Cause != lang.RubyStackCause || s.CrashedAtStart[0].Cause != "" {
		t.Errorf("causes: %+v", s.CrashedAtStart)
	}
	w := s.Warnings()
	if len(w) != 2 || !strings.Contains(w[1], "every ruby response (3) crashed at start with SIGSEGV") ||
		!strings.Contains(w[1], "--ruby-stack-mb") {
		t.Errorf("warnings: %q", w)
	}
	var table strings.Builder
	s.WriteTable(&table)
	if !strings.Contains(table.String(), "crashed at start: every ruby response (3) with SIGSEGV and no output") {
		t.Errorf("table:\n%s", table.String())
	}
}

// pass@k against a brute-force count: over every k-subset of n responses
// of which c are correct, the fraction holding at least one correct.
func TestPassAtKAgainstEverySubset(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				hit, all := 0, 0
				for mask := 0; mask < 1<<n; mask++ {
					if bits.OnesCount(uint(mask)) != k {
						continue
					}
					all++
					if mask&(1<<c-1) != 0 { // responses 0..c-1 are the correct ones
						hit++
					}
				}
				want := float64(hit) / float64(all)
				if got := PassAtK(n, c, k); math.Abs(got-want) > 1e-12 {
					t.Errorf("pass@%d with %d of %d correct: %g, brute force %g", k, c, n, got, want)
				}
			}
		}
	}
}

// --pass-k: the summary has exactly the k asked for that some prompt
// allows, each over the prompts with at least k responses.
func TestSummaryPassK(t *testing.T) {
	ks, err := ParsePassK("10, 1,5,5")
	if err != nil || !slices.Equal(ks, []int{1, 5, 10}) {
		t.Fatalf("ParsePassK: %v %v", ks, err)
	}
	if _, err := ParsePassK("1,0"); err == nil {
		t.Error("ParsePassK took 0")
	}
	s := NewSummary("in", "out", false, ks)
	resp := func(ok bool) Response {
		v := int8(0)
		if ok {
			v = 1
		}
		return Response{Reward: float64(v), Verdicts: []int8{v}, Requests: 1}
	}
	six := []Response{resp(true), resp(false), resp(false), resp(false), resp(false), resp(false)}
	s.Add(&Row{Index: 0, DataSource: "a", Responses: six}, false)
	s.Add(&Row{Index: 1, DataSource: "a", Responses: []Response{resp(true), resp(true)}}, false)
	s.Finish(time.Second)
	g := s.Overall
	if len(g.PassAtK) != 2 {
		t.Errorf("pass@k keys %v, want pass@1 and pass@5 (no prompt has 10 responses)", g.PassAtK)
	}
	if want := (PassAtK(6, 1, 1) + PassAtK(2, 2, 1)) / 2; math.Abs(g.PassAtK["pass@1"]-want) > 1e-12 ||
		g.PassAtKPrompts["pass@1"] != 2 {
		t.Errorf("pass@1 = %g over %d, want %g over 2", g.PassAtK["pass@1"], g.PassAtKPrompts["pass@1"], want)
	}
	if want := PassAtK(6, 1, 5); math.Abs(g.PassAtK["pass@5"]-want) > 1e-12 || g.PassAtKPrompts["pass@5"] != 1 {
		t.Errorf("pass@5 = %g over %d, want %g over 1", g.PassAtK["pass@5"], g.PassAtKPrompts["pass@5"], want)
	}
	var b strings.Builder
	s.WriteTable(&b)
	if !strings.Contains(b.String(), "pass@5 over 1") || strings.Contains(b.String(), "pass@2") {
		t.Errorf("table:\n%s", b.String())
	}
}
