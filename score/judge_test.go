package score

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/verdict"
)

var (
	localOnce sync.Once
	local     *sandbox.Local
	localErr  error
)

// embedded is the real embedded sandbox, shared by the tests that run code.
func embedded(t testing.TB) *sandbox.Local {
	t.Helper()
	localOnce.Do(func() { local, localErr = sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}}) })
	if localErr != nil {
		t.Fatalf("embedded sandbox: %v", localErr)
	}
	return local
}

func fence(lang, code string) string { return "```" + lang + "\n" + code + "\n```" }

func truthJSON(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func engineWith(t *testing.T, mut func(o *Options)) *Engine {
	t.Helper()
	o := DefaultOptions()
	o.MaxConcurrent = 4
	o.Language = LanguageAuto
	mut(&o)
	e, err := New(embedded(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCompareModesInTheEngine: real programs, each mode's score, and the
// exact score and verdicts kept beside it.
func TestCompareModesInTheEngine(t *testing.T) {
	floatGT := truthJSON(t, map[string]any{"inputs": []string{"1 3\n"}, "outputs": []string{"0.333333334\n"}})
	spaceGT := truthJSON(t, map[string]any{"inputs": []string{"2\n"}, "outputs": []string{"1 \n2 \n"}})
	fnGT := truthJSON(
		t,
		map[string]any{"inputs": []string{`"ab"`, `"xyz"`}, "outputs": []string{`"ba"`, `"zyx"`}, "fn_name": "rev"},
	)
	sols := []Solution{
		{ID: 0, Completion: fence("python", "a, b = map(int, input().split())\nprint(a / b)"), GroundTruth: floatGT},
		{ID: 1, Completion: fence("python", "for i in range(int(input())):\n    print(i + 1)"), GroundTruth: spaceGT},
		{ID: 2, Completion: fence("python", "def rev(s):\n    return s[::-1]"), GroundTruth: fnGT},
		{ID: 3, Completion: fence("python", "print(0.3334)"), GroundTruth: floatGT},
	}
	for _, tc := range []struct {
		compare string
		want    []float64 // scores of sols
	}{
		{"exact", []float64{0, 0, 0, 0}},
		{"lines", []float64{0, 1, 0, 0}},
		{"tokens", []float64{0, 1, 1, 0}},
		{"float", []float64{1, 1, 1, 0}},
		{"float:1e-10", []float64{0, 1, 1, 0}},
	} {
		cmp, err := testcases.ParseComparison(tc.compare)
		if err != nil {
			t.Fatal(err)
		}
		e := engineWith(t, func(o *Options) { o.Compare = cmp })
		for i, r := range runAll(t, e, sols) {
			if r.Score != tc.want[i] || r.ScoreExact != 0 {
				t.Errorf(
					"%s: solution %d scores %g (exact %g), want %g (exact 0); cases %+v",
					tc.compare,
					i,
					r.Score,
					r.ScoreExact,
					tc.want[i],
					r.Cases,
				)
			}
			for _, c := range r.Cases {
				flipped := c.Verdict == verdict.True
				if flipped != (c.VerdictExact != nil) ||
					(flipped && (*c.VerdictExact != verdict.False || c.Status != verdict.StatusSuccess)) {
					t.Errorf(
						"%s: solution %d case %d: verdict %v, exact %v, status %s",
						tc.compare,
						i,
						c.CaseIndex,
						c.Verdict,
						c.VerdictExact,
						c.Status,
					)
				}
			}
		}
	}
}

// sumChecker accepts any two positive integers that add up to the input.
const sumChecker = `import sys
n = int(open(sys.argv[1]).read())
try:
    a, b = map(int, open(sys.argv[2]).read().split())
except ValueError:
    sys.exit(2)
sys.exit(0 if a > 0 and b > 0 and a + b == n else 1)`

// sumCheckerCpp is the same checker in testlib's shape: main(argc, argv).
const sumCheckerCpp = `#include <cstdio>
int main(int argc, char *argv[]) {
    if (argc != 4) return 3;
    long n, a, b;
    FILE *in = std::fopen(argv[1], "r"), *out = std::fopen(argv[2], "r");
    if (!in || std::fscanf(in, "%ld", &n) != 1) return 3;
    if (!out || std::fscanf(out, "%ld %ld", &a, &b) != 2) return 2;
    return a > 0 && b > 0 && a + b == n ? 0 : 1;
}`

// TestCheckerJudgesManyAnswers: a problem with several valid answers is
// judged by its checker, in Python and in C++; the checker's own failures
// are infrastructure errors, and an exact answer needs no checker run.
func TestCheckerJudgesManyAnswers(t *testing.T) {
	gt := func(checker any) []byte {
		return truthJSON(
			t,
			map[string]any{"inputs": []string{"10\n", "7\n"}, "outputs": []string{"1 9\n", "1 6\n"}, "checker": checker},
		)
	}
	answers := []struct {
		code  string
		score float64
		runs  int // checker requests
	}{
		{"n = int(input())\nprint(1, n - 1)", 1, 0}, // the expected answers: no checker run
		{"n = int(input())\nprint(n - 1, 1)", 1, 2},
		{"n = int(input())\nprint(2, n - 2)", 1, 2},
		{"n = int(input())\nprint(n // 2, n - n // 2)", 1, 2},
		{"n = int(input())\nprint(0, n)", 0, 2},
		{"print('hello')", 0, 2},
	}
	for _, checker := range []any{sumChecker, map[string]any{"code": sumCheckerCpp, "language": "cpp"}} {
		e := engineWith(t, func(o *Options) { o.CheckerKey = "checker" })
		compiles := embedded(t).Stats().Compiles
		var sols []Solution
		for i, a := range answers {
			sols = append(sols, Solution{ID: int64(i), Completion: fence("python", a.code), GroundTruth: gt(checker)})
		}
		for i, r := range runAll(t, e, sols) {
			if r.Score != answers[i].score || r.CheckerRuns != answers[i].runs || r.Infra() {
				t.Errorf("checker %.20q: answer %d scores %g with %d checker runs (infra %v), want %g with %d; cases %+v",
					checker, i, r.Score, r.CheckerRuns, r.Infra(), answers[i].score, answers[i].runs, r.Cases)
			}
			if wantExact := map[bool]float64{true: 1, false: 0}[i == 0]; r.ScoreExact != wantExact {
				t.Errorf("answer %d: exact score %g, want %g", i, r.ScoreExact, wantExact)
			}
		}
		// The C++ checker is compiled once for its 10 runs (the solutions
		// are Python): each run sends the same program.
		if m, ok := checker.(map[string]any); ok && m["language"] == "cpp" {
			if n := embedded(t).Stats().Compiles - compiles; n != 1 {
				t.Errorf("the C++ checker was compiled %d times, want once", n)
			}
		}
	}

	// The checker's own failures.
	for name, checker := range map[string]any{
		"testlib fail": "import sys\nsys.exit(3)",
		"crash":        "raise RuntimeError('checker bug')",
		"syntax error": "def (",
		"no compile":   map[string]any{"code": "int main( {", "language": "cpp"},
		"timeout":      "while True: pass",
		"bad field":    map[string]any{"language": "cpp"},
		"unknown lang": map[string]any{"code": "x", "language": "cobol"},
		"not code":     []int{1},
	} {
		e := engineWith(t, func(o *Options) { o.CheckerKey = "checker"; o.Timeout = 2 })
		r := runAll(t, e, []Solution{{Completion: fence("python", "n = int(input())\nprint(n - 1, 1)"),
			GroundTruth: gt(checker)}})[0]
		for _, c := range r.Cases {
			if c.Verdict != verdict.APIError || !c.Infra || c.Status != verdict.StatusCheckerError || c.Checker == nil ||
				c.Checker.Error == "" {
				t.Errorf(
					"%s: case %d verdict %v infra %v status %s checker %+v; want an infrastructure error of the checker",
					name,
					c.CaseIndex,
					c.Verdict,
					c.Infra,
					c.Status,
					c.Checker,
				)
			}
		}
		if r.Score != 0 {
			t.Errorf("%s: score %g", name, r.Score)
		}
		if name == "crash" && !strings.Contains(r.Cases[0].Checker.Output, "checker bug") {
			t.Errorf("crash: the checker's stderr is not kept: %+v", r.Cases[0].Checker)
		}
	}
}
