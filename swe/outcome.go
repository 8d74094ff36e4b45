package swe

import (
	"strings"

	"github.com/verl-score/verl-score/explain"
)

// The outcomes of one rollout of a repository task. Environment and
// sandbox errors are the infrastructure's, never the model's: they are
// scored as infrastructure errors, not as 0.
const (
	Resolved         = "resolved"
	TestsFailed      = "tests_failed"
	PatchMissing     = "patch_missing"
	PatchApplyFailed = "patch_apply_failed"
	Timeout          = "timeout"
	EnvironmentError = "environment_error"
	SandboxError     = "sandbox_error"
)

// The statuses of a rollout's cases (one per FAIL_TO_PASS and PASS_TO_PASS
// test): the test's grade, or, when nothing was graded, CaseStatus of the
// outcome. All begin "swe_", so that a reader of the statuses alone (the
// report) tells a repository task's cases from a program's.
const (
	StatusPassedTest = "swe_passed"
	StatusFailedTest = "swe_failed"
	StatusNotCounted = "swe_not_counted" // in neither of SWE-bench's lists (skipped, under 4.1.0)
)

// CaseStatus is the status of the cases of a rollout with that outcome
// when nothing was graded ("swe_timeout", "swe_patch_missing", ...).
func CaseStatus(kind string) string { return "swe_" + kind }

// OutcomeOf is the outcome of a rollout told from its cases' statuses and
// verdicts alone: the outcome its statuses name, else resolved when every
// case is True (no test in SWE-bench's failure list), else tests_failed.
// ok is false when the statuses are not a repository task's.
func OutcomeOf(statuses []string, verdicts []int8) (kind string, ok bool) {
	all := len(verdicts) > 0
	for _, v := range verdicts {
		all = all && v == 1
	}
	for _, st := range statuses {
		rest, isSWE := strings.CutPrefix(st, "swe_")
		if !isSWE {
			return "", false
		}
		switch rest {
		case "passed", "failed", "not_counted":
		default:
			return rest, true
		}
	}
	if len(statuses) == 0 {
		return "", false
	}
	if all {
		return Resolved, true
	}
	return TestsFailed, true
}

// Infra reports whether an outcome is the infrastructure's fault.
func Infra(kind string) bool { return kind == EnvironmentError || kind == SandboxError }

// An Outcome is what one rollout came to.
type Outcome struct {
	Kind string
	// Why says more, for the outcomes that are not a grade (an apply that
	// failed, an image not found, a log SWE-bench grades nothing from).
	Why          string
	PatchApplied bool
	// AppliedBy is the command that applied the patch.
	AppliedBy   string
	ApplyOutput string
	// Log is the evaluation's output (the test log), cut where it was long.
	Log string
	// ExitCode is the test command's own exit status, -1 when unknown.
	ExitCode int
	Report   *Report
	// Flags are what the audit found in the patch (see Audit).
	Flags []Flag
}

// StepOutput is what the sandbox hands back of one rollout's run: the
// apply script's exit status and output, the evaluation's output, and
// whether the run hit its timeout.
type StepOutput struct {
	ApplyExit   int // -1: the apply script did not report (the run ended first)
	ApplyOutput string
	EvalOutput  string
	TimedOut    bool
}

// Judge turns a rollout's run into its outcome under the rules: the apply
// first, then the log read and graded as SWE-bench does.
func Judge(inst *Instance, plan *Plan, patch string, out StepOutput, r Rules) *Outcome {
	o := &Outcome{ExitCode: -1, ApplyOutput: out.ApplyOutput, Log: out.EvalOutput, Flags: Audit(inst, patch)}
	switch {
	case out.ApplyExit == 3:
		o.Kind, o.Why = EnvironmentError, firstLine(out.ApplyOutput)
		return o
	case out.ApplyExit < 0 && out.TimedOut:
		o.Kind, o.Why = Timeout, "the run's time ran out while the patch was applied"
		return o
	case out.ApplyExit < 0:
		o.Kind, o.Why = SandboxError, "the apply step did not report"
		return o
	case out.ApplyExit != 0:
		o.Kind, o.Why = PatchApplyFailed, explain.Tail(out.ApplyOutput, 3)
		return o
	}
	o.PatchApplied = true
	if i := strings.LastIndex(out.ApplyOutput, markApplied+" ("); i >= 0 {
		o.AppliedBy = strings.TrimSuffix(strings.SplitN(out.ApplyOutput[i+len(markApplied)+2:], "\n", 2)[0], ")")
	}
	if out.TimedOut {
		o.Kind, o.Why = Timeout, "the tests' time ran out"
		return o
	}
	l := ReadLog(out.EvalOutput, plan.Parser, r)
	o.ExitCode = l.ExitCode
	if !l.Graded {
		// SWE-bench's own verdict on such a log: not resolved, nothing
		// graded (its report has no test lists).
		o.Kind, o.Why = TestsFailed, l.Why
		o.Report = Grade(inst, newStatusMap(), r)
		o.Report.Resolution = ResolvedNo
		return o
	}
	o.Report = Grade(inst, l.Statuses, r)
	o.Kind = TestsFailed
	if o.Report.Resolved() {
		o.Kind = Resolved
	}
	return o
}

func firstLine(s string) string { return strings.SplitN(strings.TrimSpace(s), "\n", 2)[0] }
