package explain

import (
	"testing"

	"github.com/verl-score/verl-score/verdict"
)

func sp(s string) *string { return &s }

func TestFirstDiff(t *testing.T) {
	tests := []struct {
		want, got string
		diff      string // "" when equal
	}{
		{"1\n2\n3\n", "1\n2\n3", ""},
		{"1\n2\n3", "1\n5\n3", `line 2: expected "2", got "5"`},
		{"1\n2", "1", `line 2: expected "2", got nothing more`},
		{"1", "1\n2\n", `line 2: expected nothing more, got "2"`},
		{"a b ", "a b", `line 1: expected "a b ", got "a b"`},
	}
	for _, tt := range tests {
		d, ok := FirstDiff(tt.want, tt.got)
		if got := map[bool]string{true: d.String(), false: ""}[ok]; got != tt.diff {
			t.Errorf("FirstDiff(%q, %q): got %q, want %q", tt.want, tt.got, got, tt.diff)
		}
	}
}

func TestCause(t *testing.T) {
	traceback := "Traceback (most recent call last):\n  File \"/tmp/x/main.py\", line 7, in <module>\n    print(f(0))\n  File \"/tmp/x/main.py\", line 3, in f\n    return 1 / x\nZeroDivisionError: division by zero\n"
	tests := []struct {
		name string
		c    verdict.Case
		want string
	}{
		{"passed", verdict.Case{Status: verdict.StatusSuccess}, ""},
		{
			"wrong answer",
			verdict.Case{Status: verdict.StatusWrongAnswer, ExpectedOutput: "3\n4", Stdout: sp("3\n5\n")},
			`wrong answer, line 2: expected "4", got "5"`,
		},
		{
			"python exception",
			verdict.Case{Status: verdict.StatusRuntimeError, Stderr: sp(traceback)},
			"runtime error: ZeroDivisionError at line 3 in f",
		},
		{
			"other crash",
			verdict.Case{Status: verdict.StatusRuntimeError, Stderr: sp("terminate called\nAborted (core dumped)\n")},
			"runtime error: Aborted (core dumped)",
		},
		{
			"compile error",
			verdict.Case{
				Status:        verdict.StatusCompileError,
				CompileStderr: sp("main.cpp: In function 'int main()':\nmain.cpp:3:5: error: 'x' was not declared in this scope\n"),
			},
			"compile error: main.cpp:3:5: error: 'x' was not declared in this scope",
		},
		{
			"timeout",
			verdict.Case{Status: verdict.StatusTimeout, Stdout: sp("step 1\nstep 2\n")},
			`timeout, last output "step 2"`,
		},
		{"silent timeout", verdict.Case{Status: verdict.StatusTimeout}, "timeout, no output"},
		{
			"sandbox",
			verdict.Case{Status: verdict.StatusAPIError, APIRequestError: sp("connection refused")},
			"api_error: connection refused",
		},
	}
	for _, tt := range tests {
		if got := Cause(&tt.c); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
