package lang

import "regexp"

// pytestFile: code that imports pytest and defines a test function is a
// pytest file.
var pytestFile = regexp.MustCompile(`(?m)^\s*(import pytest|from pytest import)`)
var pytestTest = regexp.MustCompile(`(?m)^def test_\w*\(`)

func init() {
	Register(&Language{
		Name:   "python",
		Fences: []string{"python", "py", "python3", "py3"},
		Detect: func(code string) string {
			if pytestFile.MatchString(code) && pytestTest.MatchString(code) {
				return "pytest"
			}
			return ""
		},
		Tools:  []Tool{{"python3", "python3"}},
		Runner: interpreted("python3", "solution.py").with(func(r *Runner) { r.Forkable = true }),
		Cases: func() []Case {
			return []Case{
				sumCase("python", "correct", "a, b = map(int, input().split())\nprint(a + b)\n", wantT),
				sumCase("python", "wrong", "a, b = map(int, input().split())\nprint(a - b)\n", wantF),
				sumCase("python", "runtime", "raise ValueError('boom')\n", wantRE),
				timeoutCase("python", "while True:\n    pass\n", 1),
				sumCase("python", "syntax", "def f(:\n", wantRE),
				{
					Name:     "python/null-stdin",
					Language: "python",
					Code:     "import sys\nprint(repr(sys.stdin.read()))\n",
					Expected: optStr("''"),
					Want:     wantT,
				},
			}
		},
	})
	Register(&Language{
		Name:   "pytest",
		Fences: []string{"pytest"},
		Tools:  []Tool{{"pytest", "python3-pytest"}},
		Runner: interpreted("pytest", "test_solution.py"),
		Cases: func() []Case {
			return []Case{
				{
					Name:     "pytest/pass",
					Language: "pytest",
					Code:     "def add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(2, 3) == 5\n",
					Want:     wantT,
				},
				{
					Name:     "pytest/fail",
					Language: "pytest",
					Code:     "def add(a, b):\n    return a - b\n\ndef test_add():\n    assert add(2, 3) == 5\n",
					Want:     wantRE,
				},
				{
					Name:       "pytest/timeout",
					Language:   "pytest",
					Code:       "def test_forever():\n    while True:\n        pass\n",
					RunTimeout: 2,
					Want:       wantTO,
				},
			}
		},
	})
	Register(&Language{Name: "python_gpu", Needs: "a GPU python runtime", Note: "a GPU Python runtime"})
}
