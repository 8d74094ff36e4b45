package score

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// TestAuditCatchesLoopholes: each loophole passes under verl's rules and
// the audit flags it; the honest solutions of the same problems pass and
// are not flagged; --audit-fail zeroes only the flagged.
func TestAuditCatchesLoopholes(t *testing.T) {
	assertGT := truthJSON(t, map[string]any{"assert_case": []string{"assert add(1, 2) == 3", "assert add(2, 2) == 4"}})
	emptyGT := truthJSON(t, map[string]any{"inputs": []string{"1", "2"}, "outputs": []string{"", ""}, "fn_name": "f"})
	stdinGT := truthJSON(t, map[string]any{"inputs": []string{"1 2\n"}, "outputs": []string{"3\n"}})
	cases := []struct {
		name, code string
		gt         []byte
		flags      []string // "" entries: none
	}{
		{
			"exit before asserts",
			"import sys\ndef add(a, b):\n    return a - b\nsys.exit(0)",
			assertGT,
			[]string{FlagExitBeforeAsserts},
		},
		{
			"exit in main block",
			"def add(a, b):\n    return 0\nif __name__ == '__main__':\n    exit()",
			assertGT,
			[]string{FlagExitBeforeAsserts},
		},
		{"honest asserts", "def add(a, b):\n    return a + b", assertGT, nil},
		{
			"equal to everything",
			"class Any:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Any()",
			assertGT,
			[]string{FlagCustomEq},
		},
		{"mock.ANY", "from unittest import mock\ndef add(a, b):\n    return mock.ANY", assertGT, []string{FlagCustomEq}},
		{
			"not unequal",
			"class Z(int):\n    def __ne__(self, other):\n        return False\n    __eq__ = int.__eq__\n    __hash__ = int.__hash__\ndef add(a, b):\n    return Z(a + b)",
			assertGT,
			[]string{FlagCustomEq},
		},
		{"honest Fraction", "from fractions import Fraction\ndef add(a, b):\n    return Fraction(a) + b", assertGT, nil},
		{"function raises", "def f(x):\n    raise ValueError(x)", emptyGT, []string{FlagFunctionRaised}},
		{"exit in function", "def f(x):\n    import os\n    os._exit(0)", emptyGT, []string{FlagExitInFunction}},
		{"honest empty", "def f(x):\n    return ''", emptyGT, nil},
		{
			"reads the answer",
			"import os\nfor name in os.listdir('.'):\n    if 'expected' in name:\n        print(open(name).read().strip())\n        break\nelse:\n    print(3)",
			stdinGT,
			[]string{FlagReadsFile},
		},
		{"honest stdin with exit", "import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(0)", stdinGT, nil},
		{"honest, opens /dev/stdin", "a, b = map(int, open('/dev/stdin').read().split())\nprint(a + b)", stdinGT, nil},
	}
	for _, fail := range []bool{false, true} {
		e := engineWith(t, func(o *Options) { o.Audit, o.AuditFail = true, fail })
		var sols []Solution
		for i, c := range cases {
			sols = append(sols, Solution{ID: int64(i), Completion: fence("python", c.code), GroundTruth: c.gt})
		}
		for i, r := range runAll(t, e, sols) {
			c := cases[i]
			if r.ScoreExact != 1 {
				t.Fatalf("%s: scores %g under verl's rules, want 1 (a loophole passes); cases %+v", c.name, r.ScoreExact, r.Cases)
			}
			a := r.Audit
			if a == nil || a.Probes != len(r.Cases) || a.Errors != 0 {
				t.Fatalf("%s: audit %+v, want %d probes without errors", c.name, a, len(r.Cases))
			}
			var got []string
			for _, f := range a.Flags {
				got = append(got, strings.SplitN(f, " ", 2)[0])
			}
			if !slices.Equal(got, c.flags) {
				t.Errorf("%s: flags %q, want %q", c.name, a.Flags, c.flags)
			}
			if c.flags != nil && len(r.Cases[0].Audit) == 0 {
				t.Errorf("%s: the case does not carry its flags", c.name)
			}
			want := 1.0
			if fail && c.flags != nil {
				want = 0
			}
			if r.Score != want {
				t.Errorf("%s (audit-fail %v): score %g, want %g", c.name, fail, r.Score, want)
			}
		}
	}
}

// A response that passes nothing is not probed; one in another language
// counts as unprobed.
func TestAuditProbesOnlyPasses(t *testing.T) {
	gt := truthJSON(t, map[string]any{"inputs": []string{"1 2\n"}, "outputs": []string{"3\n"}})
	e := engineWith(t, func(o *Options) { o.Audit = true })
	rs := runAll(t, e, []Solution{
		{ID: 0, Completion: fence("python", "print(4)"), GroundTruth: gt},
		{ID: 1, Completion: fence("bash", "read a b; echo $((a + b))"), GroundTruth: gt},
	})
	if a := rs[0].Audit; a == nil || a.Probes != 0 || a.Flagged() {
		t.Errorf("a failing response: audit %+v, want no probe", a)
	}
	if a := rs[1].Audit; rs[1].Score != 1 || a == nil || a.Probes != 0 || a.Unprobed != 1 {
		t.Errorf("bash: score %g audit %+v, want 1 unprobed case", rs[1].Score, a)
	}
}

// stopAfterFirst stops its engine once the first request is answered:
// the case keeps its verdict, and nothing more is sent.
type stopAfterFirst struct {
	inner sandboxclient.Client
	e     *Engine
	once  sync.Once
}

func (s *stopAfterFirst) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	resp, err := s.inner.Run(ctx, req)
	s.once.Do(s.e.Stop)
	return resp, err
}

// A run stopped after a response's case passed but before its probe was
// sent returns it aborted (not kept, redone on resume), not unaudited.
func TestAuditStoppedIsAborted(t *testing.T) {
	gt := truthJSON(t, map[string]any{"inputs": []string{"1 2\n"}, "outputs": []string{"3\n"}})
	o := DefaultOptions()
	o.Audit = true
	c := &stopAfterFirst{inner: embedded(t)}
	e, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	c.e = e
	r := runAll(t, e, []Solution{{Completion: fence("python", "print(3)"), GroundTruth: gt}})[0]
	if r.Cases[0].Verdict != verdict.True || !r.Aborted {
		t.Errorf(
			"verdict %v, aborted %v, audit %+v; want a True case and an aborted result",
			r.Cases[0].Verdict,
			r.Aborted,
			r.Audit,
		)
	}
}
