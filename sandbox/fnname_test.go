//go:build linux

package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/verdict"
)

// TestFnNameDriver runs docs/semantics.md §3's call-based driver for real through the
// local sandbox and judges each case as verl would.
func TestFnNameDriver(t *testing.T) {
	l := sharedSandbox(t)
	tests := []struct {
		name, solution, fn, stdin string
		expected                  string
		want                      verdict.Code
		wantStderr                string
	}{
		{"global function", "def add(a, b):\n    return a + b", "add", "1\n2", "3", verdict.True, ""},
		{
			"Solution method",
			"class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i",
			"twoSum",
			"[2, 7, 11, 15]\n9",
			"[0, 1]",
			verdict.True,
			"",
		},
		{
			"uses deque without importing",
			"def f(xs):\n    d = deque(xs)\n    d.rotate(1)\n    return list(d)",
			"f",
			"[1, 2, 3]",
			"[3, 1, 2]",
			verdict.True,
			"",
		},
		{"missing function", "def other():\n    return 1", "wanted", "1", "1", verdict.False, "wanted"},
		{"exception", "def f(x):\n    return 1 / x", "f", "0", "0", verdict.False, "ZeroDivisionError"},
		{"JSON args with a trailing newline", "def f(a, b):\n    return a + b", "f", "1\n2\n", "3", verdict.False, "JSON"},
		{"bool printed as JSON", "def f(x):\n    return x > 0", "f", "5", "true", verdict.True, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := tc.stdin
			resp, err := l.Run(context.Background(), &sandboxclient.Request{
				Language: "python", Code: testcases.WrapFnName(tc.solution, tc.fn), Stdin: &in,
				RunTimeout: 10, CompileTimeout: 10, MemoryLimitMB: 1024,
			})
			got := judge.Case(0, tc.stdin, tc.expected, &tc.expected, resp, err)
			if got.Verdict != tc.want {
				t.Fatalf("got verdict %v, want %v; %s", got.Verdict, tc.want, respText(resp, err))
			}
			if rc := resp.RunResult.ReturnCode; rc == nil || *rc != 0 {
				t.Errorf("got return code %v, want 0 (the driver never fails the process)", fmtRC(rc))
			}
			if tc.wantStderr != "" && !strings.Contains(resp.RunResult.Stderr, tc.wantStderr) {
				t.Errorf("got stderr %q, want it to mention %q", resp.RunResult.Stderr, tc.wantStderr)
			}
			if tc.want != verdict.True && resp.RunResult.Stdout != "" {
				t.Errorf("got stdout %q, want nothing on a driver failure", resp.RunResult.Stdout)
			}
		})
	}
}
