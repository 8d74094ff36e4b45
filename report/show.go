package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/verdict"
)

// maxShown bounds the lines of one input, output or stderr shown.
const maxShown = 20

// WriteText writes r for a terminal: its code with line numbers, and each
// case: passing ones in a line, failing ones with their input, the
// expected and the actual output, the first differing line, stderr's tail
// and the compiler's error.
func WriteText(w io.Writer, r *Response) error {
	b := &strings.Builder{}
	title := fmt.Sprintf(
		"%s · row %d response %d · %s · reward %g",
		r.Name(),
		r.Row,
		r.Index,
		orNone(r.DataSource),
		r.Reward,
	)
	fmt.Fprintf(b, "── %s %s\n", title, strings.Repeat("─", max(0, 72-len([]rune(title)))))
	if r.Error != "" {
		fmt.Fprintf(b, "reward_error: %s\n", r.Error)
	}
	if s := r.SWE; s != nil {
		writeSWE(b, s)
	}
	switch {
	case r.Code != "":
		fmt.Fprintf(b, "code (%s):\n", orNone(r.Fence))
		for i, l := range strings.Split(strings.TrimRight(r.Code, "\n"), "\n") {
			fmt.Fprintf(b, "%5d  %s\n", i+1, l)
		}
	case r.Text != "":
		fmt.Fprintf(b, "no code block; the response:\n%s\n", block(r.Text))
	}
	if r.Unscored {
		b.WriteString(
			"not scored by verl-score: the reward is the trainer's score (verl-score run scores it, case by case)\n",
		)
	} else if r.Cases == nil {
		fmt.Fprintf(b, "cases: %s\n", verdictList(r.Verdicts, r.Statuses))
		if len(r.Verdicts) > 0 {
			b.WriteString("(the run's --cases-out file, given with --cases, adds each case's input, output and stderr)\n")
		}
	}
	for i := range r.Cases {
		writeCase(b, &r.Cases[i])
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSWE writes a repository task's outcome: what came of it, how the
// patch applied, the tests' counts, the audit's flags, the log's end.
func writeSWE(b *strings.Builder, s *score.SWEResult) {
	b.WriteString(sweHeadline(s) + "\n")
	for _, f := range s.Flags {
		fmt.Fprintf(b, "  flagged: %s %s\n", f.Kind, f.Path)
	}
	if !s.PatchApplied && s.ApplyOutput != "" {
		fmt.Fprintf(b, "apply output:\n%s\n", block(s.ApplyOutput))
	}
	if s.Log != "" {
		fmt.Fprintf(b, "test log (its end):\n%s\n", block(explain.Tail(s.Log, 15)))
	}
}

// sweHeadline is a repository task's outcome in a line: "calc-1: resolved
// · SWE-bench 4.1.0 rules · applied by git apply --verbose · FAIL_TO_PASS
// 1/1 · PASS_TO_PASS 1/1 · test command exit 0".
func sweHeadline(s *score.SWEResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.InstanceID, strings.ReplaceAll(s.Outcome, "_", " "))
	if s.Why != "" {
		fmt.Fprintf(&b, " (%s)", firstLineOf(s.Why))
	}
	fmt.Fprintf(&b, " · SWE-bench %s rules", s.Rules)
	if s.PatchApplied {
		fmt.Fprintf(&b, " · applied by %s", s.AppliedBy)
	}
	fmt.Fprintf(&b, " · FAIL_TO_PASS %d/%d · PASS_TO_PASS %d/%d", s.F2PPassed, s.F2PTotal, s.P2PPassed, s.P2PTotal)
	if s.ExitCode >= 0 {
		fmt.Fprintf(&b, " · test command exit %d", s.ExitCode)
	}
	return b.String()
}

func firstLineOf(s string) string { return strings.SplitN(strings.TrimSpace(s), "\n", 2)[0] }

func writeCase(b *strings.Builder, c *verdict.Case) {
	fmt.Fprintf(b, "case %d  %s  %s", c.CaseIndex, c.Verdict, c.Status)
	if c.Duration != nil {
		fmt.Fprintf(b, "  %.3f s", *c.Duration)
	}
	b.WriteString("\n")
	if c.Status == verdict.StatusSuccess || c.Status == verdict.StatusCompileErrorSkipped {
		return
	}
	if cause := explain.Cause(c); cause != "" {
		fmt.Fprintf(b, "  why       %s\n", cause)
	}
	field := func(name, text string) {
		if text == "" {
			fmt.Fprintf(b, "  %-9s (empty)\n", name)
			return
		}
		lines := strings.Split(block(text), "\n")
		for i, l := range lines {
			label := ""
			if i == 0 {
				label = name
			}
			fmt.Fprintf(b, "  %-9s │ %s\n", label, l)
		}
	}
	if c.CompileStderr != nil && c.Status == verdict.StatusCompileError {
		field("compiler", explain.Tail(*c.CompileStderr, maxShown))
		return
	}
	field("input", c.Input)
	field("expected", c.ExpectedOutput)
	if c.Stdout != nil {
		got := *c.Stdout
		if d, ok := explain.FirstDiff(c.ExpectedOutput, got); ok && c.Status == verdict.StatusWrongAnswer {
			got = markLine(got, d.Line)
		}
		field("got", got)
	}
	if c.Stderr != nil && strings.TrimSpace(*c.Stderr) != "" {
		field("stderr", explain.Tail(*c.Stderr, 5))
	}
}

// markLine marks line n (1-based) of s with a ◀ at its end; past the end,
// a line saying the output ended.
func markLine(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if n-1 < len(lines) {
		lines[n-1] += "   ◀ first difference"
	} else {
		lines = append(lines, "◀ (the output ends here)")
	}
	return strings.Join(lines, "\n")
}

// block is text as shown: at most maxShown lines, the rest counted.
func block(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > maxShown {
		more := len(lines) - maxShown
		lines = append(lines[:maxShown], fmt.Sprintf("… %d more lines", more))
	}
	return strings.Join(lines, "\n")
}

func verdictList(vs []int8, statuses []string) string {
	if len(vs) == 0 {
		return "none"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = verdict.Code(v).String()
		if i < len(statuses) && v != int8(verdict.True) {
			parts[i] += " (" + statuses[i] + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
