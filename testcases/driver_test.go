package testcases

import (
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

// TestWrapFnNameRuns runs the driver with the real interpreter, as the
// sandbox would (python3 file.py), and checks stdout, exit code and stderr.
func TestWrapFnNameRuns(t *testing.T) {
	needPython(t)
	tests := []struct {
		name       string
		solution   string
		fn         string
		stdin      *string
		wantOut    string
		wantCode   int
		wantStderr string // substring; "" means stderr must be empty
	}{
		{
			name:     "global function",
			solution: "def add(a, b):\n    return a + b",
			fn:       "add", stdin: strp("1\n2"), wantOut: "3\n",
		},
		{
			name:     "Solution method returning a list",
			solution: "from typing import List\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i",
			fn:       "twoSum", stdin: strp("[2, 7, 11, 15]\n9"), wantOut: "[0, 1]\n",
		},
		{
			name:     "global function preferred over Solution",
			solution: "def f():\n    return 'global'\nclass Solution:\n    def f(self):\n        return 'method'",
			fn:       "f", stdin: strp(""), wantOut: "global\n",
		},
		{
			name:     "missing function",
			solution: "def other():\n    return 1",
			fn:       "wanted", stdin: strp("1"), wantStderr: "wanted",
		},
		{
			name:     "Solution without the method",
			solution: "class Solution:\n    def other(self):\n        return 1",
			fn:       "wanted", stdin: strp("1"), wantStderr: "AttributeError",
		},
		{
			name:     "exception in the function",
			solution: "def f(x):\n    return 1 / x",
			fn:       "f", stdin: strp("0"), wantStderr: "ZeroDivisionError",
		},
		{
			name:     "trailing newline fails decoding",
			solution: "def f(a, b):\n    return a + b",
			fn:       "f", stdin: strp("1\n2\n"), wantStderr: "not JSON",
		},
		{
			name:     "blank stdin calls without arguments",
			solution: "def f():\n    return 'none given'",
			fn:       "f", stdin: strp("  \n"), wantOut: "none given\n",
		},
		{
			name:     "no stdin at all",
			solution: "def f():\n    return 7",
			fn:       "f", stdin: nil, wantOut: "7\n",
		},
		{
			name:     "dict result as JSON",
			solution: "def f():\n    return {'a': 1, 'b': [True, None]}",
			fn:       "f", stdin: strp(""), wantOut: "{\"a\": 1, \"b\": [true, null]}\n",
		},
		{
			name:     "tuple result as JSON",
			solution: "def f():\n    return (1, 'x')",
			fn:       "f", stdin: strp(""), wantOut: "[1, \"x\"]\n",
		},
		{
			name:     "bool result as JSON",
			solution: "def f():\n    return False",
			fn:       "f", stdin: strp(""), wantOut: "false\n",
		},
		{
			name:     "None result as JSON",
			solution: "def f():\n    pass",
			fn:       "f", stdin: strp(""), wantOut: "null\n",
		},
		{
			name:     "str result with str()",
			solution: "def f(s):\n    return s[::-1]",
			fn:       "f", stdin: strp(`"abc"`), wantOut: "cba\n",
		},
		{
			name:     "int and float results with str()",
			solution: "def f(a, b):\n    return a / b",
			fn:       "f", stdin: strp("5\n2"), wantOut: "2.5\n",
		},
		{
			name:     "other objects with str()",
			solution: "def f():\n    return {3}",
			fn:       "f", stdin: strp(""), wantOut: "{3}\n",
		},
		{
			name:     "non-ASCII strings in JSON are escaped",
			solution: "def f():\n    return ['é']",
			fn:       "f", stdin: strp(""), wantOut: "[\"\\u00e9\"]\n",
		},
		{
			name:     "standard names available without import",
			solution: "def f(a, b):\n    q = deque([a, b])\n    return gcd(q[0], q[1]) + pow(2, 3, 5) + datetime.date(2020, 1, 2).day + len(ascii_lowercase)",
			fn:       "f", stdin: strp("12\n18"), wantOut: "37\n",
		},
		{
			name:     "star-imported builtins count as globals",
			solution: "class Solution:\n    def max(self, xs):\n        return -1",
			fn:       "max", stdin: strp("[3, 1, 2]"), wantOut: "3\n",
		},
		{
			name:     "unsafe name stays a literal",
			solution: "def f():\n    return 1",
			fn:       "a\"b\\'\nc", stdin: strp(""), wantStderr: "no function",
		},
		{
			name:     "sys.exit in the function is not caught",
			solution: "import sys\ndef f():\n    sys.exit(3)",
			fn:       "f", stdin: strp(""), wantCode: 3,
		},
		{
			name:     "unserialisable list result is a runtime error",
			solution: "def f():\n    return [object()]",
			fn:       "f", stdin: strp(""), wantCode: 1, wantStderr: "TypeError",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, code := runPythonCode(t, WrapFnName(tt.solution, tt.fn), tt.stdin)
			if out != tt.wantOut || code != tt.wantCode {
				t.Errorf("stdout, exit = %q, %d, want %q, %d (stderr %q)", out, code, tt.wantOut, tt.wantCode, stderr)
			}
			if tt.wantStderr == "" && stderr != "" {
				t.Errorf("stderr = %q, want it empty", stderr)
			}
			if tt.wantStderr != "" && !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}

// TestProgramRunsAsserts runs Program's text for assert cases: a passing
// assert exits 0, a failing one exits 1.
func TestProgramRunsAsserts(t *testing.T) {
	needPython(t)
	set, err := Parse([]byte(`{"assert_case": ["assert f(2) == 4", "assert f(2) == 5"]}`))
	if err != nil {
		t.Fatal(err)
	}
	sol := "def f(x):\n    return x * x"
	for i, want := range []int{0, 1} {
		_, stderr, code := runPythonCode(t, set.Program(sol, i, "python"), set.Cases[i].Stdin)
		if code != want {
			t.Errorf("case %d: exit %d, want %d (stderr %q)", i, code, want, stderr)
		}
	}
}
