// Package judge turns a sandbox's answer to one request into the case's
// verdict and metadata (docs/semantics.md §5): the one place where the
// protocol's statuses become verl's verdicts.
package judge

import (
	"errors"
	"strings"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// Case turns the outcome of one request into the case's verdict and
// metadata, row for row as docs/semantics.md §5 says. input and expectedText are the
// case's input and expected output as verl prints them (Python str());
// expected is the expected output, nil when the ground truth has null
// (any finished run then passes).
func Case(
	caseIndex int,
	input, expectedText string,
	expected *string,
	resp *sandboxclient.Response,
	err error,
) verdict.Case {
	r := verdict.Case{CaseIndex: caseIndex, Input: input, ExpectedOutput: expectedText, Verdict: verdict.APIError}
	if err != nil {
		msg := err.Error()
		r.APIRequestError = &msg
		r.Status = verdict.StatusAPIError
		r.Infra = true
		var apiErr *sandboxclient.APIError
		if errors.As(err, &apiErr) {
			r.Attempts = apiErr.Attempts
		} else {
			r.Attempts = 1
		}
		return r
	}
	if resp == nil {
		r.Status = "unknown_api_state"
		r.Infra = true
		return r
	}
	r.Attempts = resp.Attempts
	status := resp.Status
	// One allocation holds every value the metadata points to.
	v := &judgeValues{apiStatus: status}
	r.APIStatus = &v.apiStatus
	cr, rr := resp.CompileResult, resp.RunResult
	if cr != nil {
		v.compileStatus, v.compileDuration, v.compileStderr = cr.Status, cr.ExecutionTime, cr.Stderr
		r.CompileStatus, r.CompileDuration, r.CompileStderr = &v.compileStatus, &v.compileDuration, &v.compileStderr
		if cr.CPUTime > 0 {
			r.CompileCPUTime = &cr.CPUTime
		}
	}
	if rr != nil {
		v.runStatus, v.stdout, v.stderr, v.duration = rr.Status, rr.Stdout, rr.Stderr, rr.ExecutionTime
		r.RunStatus, r.Stdout, r.Stderr, r.Duration = &v.runStatus, &v.stdout, &v.stderr, &v.duration
		r.ExitCode = rr.ReturnCode
		if rr.CPUTime > 0 {
			r.CPUTime = &rr.CPUTime
		}
		if rr.CPUWait > 0 {
			r.CPUWait = &rr.CPUWait
		}
	}

	r.StarvedReruns = resp.StarvedReruns
	switch {
	case status == sandboxclient.StatusFailed && ((cr != nil && cr.Starved) || (rr != nil && rr.Starved)):
		msg := "starved: a step reached its time limit waiting for a CPU, twice (the second time alone among the sandbox's " +
			"runs)"
		r.APIRequestError = &msg
		r.Status = verdict.StatusStarved
		r.Infra = true
		return r
	}
	switch status {
	case sandboxclient.StatusSandboxError:
		r.Status = verdict.StatusSandboxError
		r.Infra = true
	case sandboxclient.StatusFailed:
		switch {
		case cr != nil && (cr.Status == sandboxclient.StepError || cr.Status == sandboxclient.StepTimeLimitExceeded ||
			(cr.Status == sandboxclient.StepFinished && !isZero(cr.ReturnCode))):
			r.Verdict = verdict.CompileError
			if cr.Status == sandboxclient.StepTimeLimitExceeded {
				r.Status = verdict.StatusCompileTimeout
			} else {
				r.Status = verdict.StatusCompileError
			}
		case rr != nil:
			switch {
			case rr.Status == sandboxclient.StepTimeLimitExceeded:
				r.Verdict, r.Status = verdict.Timeout, verdict.StatusTimeout
			case rr.Status == sandboxclient.StepError || (rr.Status == sandboxclient.StepFinished && !isZero(rr.ReturnCode)):
				r.Verdict, r.Status = verdict.RuntimeError, verdict.StatusRuntimeError
			default:
				r.Status = verdict.StatusUnknownFailure
				r.Infra = true
			}
		default:
			r.Status = verdict.StatusUnknownFailureState
			r.Infra = true
		}
	case sandboxclient.StatusSuccess:
		if rr != nil && rr.Status == sandboxclient.StepFinished {
			if expected == nil || strings.TrimRight(rr.Stdout, "\n") == strings.TrimRight(*expected, "\n") {
				r.Verdict, r.Status = verdict.True, verdict.StatusSuccess
			} else {
				r.Verdict, r.Status = verdict.False, verdict.StatusWrongAnswer
			}
		} else {
			r.Status = verdict.StatusUnexpectedSuccessState
			r.Infra = true
		}
	default:
		r.Status = verdict.StatusUnknownAPIPrefix + status
		r.Infra = true
	}
	return r
}

// isZero reports whether a return code is present and 0. A missing return
// code counts as non-zero, as Python's `None != 0` does.
func isZero(rc *int) bool { return rc != nil && *rc == 0 }

// judgeValues backs the pointer fields of one CaseResult.
type judgeValues struct {
	apiStatus, compileStatus, compileStderr, runStatus, stdout, stderr string
	compileDuration, duration                                          float64
}
