// Package explain says why a case failed, in the terms an engineer looks
// for: the first line where the output differs from the expected one, the
// exception and the frame it came from, the compiler's first error, the
// last line a timed-out program printed. Reports group failures by these
// causes and show them beside the code.
package explain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/verl-score/verl-score/verdict"
)

// Diff is where an output first differs from the expected one.
type Diff struct {
	Line     int    // 1-based
	Expected string // the expected line ("" past its end)
	Got      string // the output's line ("" past its end)
	// Missing and Extra are set when one side ended before the other.
	Missing, Extra bool
}

// FirstDiff compares got with want line by line, after the trailing
// newlines verl's comparison ignores; ok is false when they are equal.
func FirstDiff(want, got string) (d Diff, ok bool) {
	want, got = strings.TrimRight(want, "\n"), strings.TrimRight(got, "\n")
	if want == got {
		return Diff{}, false
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; ; i++ {
		switch {
		case i >= len(w):
			return Diff{Line: i + 1, Got: g[i], Extra: true}, true
		case i >= len(g):
			return Diff{Line: i + 1, Expected: w[i], Missing: true}, true
		case w[i] != g[i]:
			return Diff{Line: i + 1, Expected: w[i], Got: g[i]}, true
		}
	}
}

// String says the difference in one line.
func (d Diff) String() string {
	switch {
	case d.Missing:
		return fmt.Sprintf("line %d: expected %s, got nothing more", d.Line, quote(d.Expected))
	case d.Extra:
		return fmt.Sprintf("line %d: expected nothing more, got %s", d.Line, quote(d.Got))
	}
	return fmt.Sprintf("line %d: expected %s, got %s", d.Line, quote(d.Expected), quote(d.Got))
}

// maxQuoted bounds a line quoted in a cause.
const maxQuoted = 60

func quote(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// pyFrame is a Python traceback's frame line.
var pyFrame = regexp.MustCompile(`^\s*File "[^"]*", line (\d+), in (\S+)`)

// exceptionLine is the last line of a traceback: "Name: message" or "Name".
var exceptionLine = regexp.MustCompile(
	`^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault)|[A-Z][\w.]*Error)\b`,
)

// RuntimeError names a runtime error by its exception type and the last
// frame of its traceback where stderr has one (Python: "ZeroDivisionError
// at line 3 in f"), else by stderr's last line.
func RuntimeError(stderr string) string {
	lines := nonEmpty(stderr)
	if len(lines) == 0 {
		return "no stderr"
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	frame := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if m := pyFrame.FindStringSubmatch(lines[i]); m != nil {
			frame = fmt.Sprintf(" at line %s in %s", m[1], m[2])
			break
		}
	}
	if m := exceptionLine.FindStringSubmatch(last); m != nil {
		return m[1] + frame
	}
	return cut(last) + frame
}

// CompileError is the compiler's first error line, else its first line.
func CompileError(stderr string) string {
	lines := nonEmpty(stderr)
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "error") {
			return cut(strings.TrimSpace(l))
		}
	}
	if len(lines) > 0 {
		return cut(strings.TrimSpace(lines[0]))
	}
	return "no compiler output"
}

// Timeout describes a timed-out run by the last line it printed.
func Timeout(stdout string) string {
	lines := nonEmpty(stdout)
	if len(lines) == 0 {
		return "no output"
	}
	return "last output " + quote(strings.TrimSpace(lines[len(lines)-1]))
}

// Cause is a failing case's cause, the key failures are grouped by; ""
// for a case that passed.
func Cause(c *verdict.Case) string {
	switch c.Status {
	case "", verdict.StatusSuccess:
		return ""
	case verdict.StatusWrongAnswer:
		if c.Stdout != nil {
			if d, ok := FirstDiff(c.ExpectedOutput, *c.Stdout); ok {
				return "wrong answer, " + d.String()
			}
		}
		return "wrong answer"
	case verdict.StatusRuntimeError:
		return "runtime error: " + RuntimeError(deref(c.Stderr))
	case verdict.StatusCompileError:
		return "compile error: " + CompileError(deref(c.CompileStderr))
	case verdict.StatusCompileTimeout:
		return "compile timeout"
	case verdict.StatusTimeout:
		return "timeout, " + Timeout(deref(c.Stdout))
	case verdict.StatusCompileErrorSkipped:
		return "not run: an earlier case did not compile"
	}
	if c.APIRequestError != nil && *c.APIRequestError != "" {
		return c.Status + ": " + cut(*c.APIRequestError)
	}
	return c.Status
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func nonEmpty(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// maxCause bounds a cause's text.
const maxCause = 160

func cut(s string) string {
	if len(s) > maxCause {
		return s[:maxCause] + "…"
	}
	return s
}
