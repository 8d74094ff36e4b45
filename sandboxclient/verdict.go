package sandboxclient

import (
	"errors"
	"strconv"
	"strings"
)

// Verdict is the outcome code of one test case, as verl records it:
// True (1), False (0), or one of the negative error codes.
type Verdict int8

// Verdict codes (docs/semantics.md §5).
const (
	VerdictFalse        Verdict = 0
	VerdictTrue         Verdict = 1
	VerdictAPIError     Verdict = -1 // request failed, sandbox error, unknown state
	VerdictRuntimeError Verdict = -2
	VerdictTimeout      Verdict = -3
	VerdictCompileError Verdict = -4
)

// String renders the verdict the way verl's result lists print it.
func (v Verdict) String() string {
	switch v {
	case VerdictTrue:
		return "True"
	case VerdictFalse:
		return "False"
	default:
		return strconv.Itoa(int(v))
	}
}

// Case statuses (docs/semantics.md §5 and 6).
const (
	CaseSuccess                = "success"
	CaseWrongAnswer            = "wrong_answer"
	CaseAPIError               = "api_error"
	CaseSandboxError           = "sandbox_error"
	CaseCompileError           = "compile_error"
	CaseCompileTimeout         = "compile_timeout"
	CaseStarved                = "starved" // a step waited for a CPU past its grace, twice: the machine's, not the program's
	CaseCompileErrorSkipped    = "compile_error_skipped"
	CaseTimeout                = "timeout"
	CaseRuntimeError           = "runtime_error"
	CaseUnknownFailure         = "unknown_failure"
	CaseUnknownFailureState    = "unknown_failure_state"
	CaseUnexpectedSuccessState = "unexpected_success_state"
	CaseUnknownAPIStatusPrefix = "unknown_api_status_"
)

// CaseResult is the verdict of one test case with verl's per-case metadata
// (same field names), plus the number of HTTP attempts and a flag telling
// infrastructure failures apart from verdicts about the code.
type CaseResult struct {
	Verdict Verdict `json:"verdict"`

	CaseIndex       int      `json:"case_index"`
	Input           string   `json:"input"`
	ExpectedOutput  string   `json:"expected_output"`
	APIRequestError *string  `json:"api_request_error"`
	Status          string   `json:"status"`
	Stdout          *string  `json:"stdout"`
	Stderr          *string  `json:"stderr"`
	ExitCode        *int     `json:"exit_code"`
	Duration        *float64 `json:"duration"`
	CompileDuration *float64 `json:"compile_duration"`
	CompileStderr   *string  `json:"compile_stderr"`
	APIStatus       *string  `json:"api_status"`
	CompileStatus   *string  `json:"compile_status"`
	RunStatus       *string  `json:"run_status"`

	// VerdictExact is the verdict under verl's exact comparison, set only
	// when a compare mode or a checker gave another.
	VerdictExact *Verdict `json:"verdict_exact,omitempty"`
	// Checker is what the problem's checker said, when it ran: its exit
	// code, its output, or why it failed.
	Checker *CheckerResult `json:"checker,omitempty"`
	// Audit lists the loopholes the audit's probe of this case caught.
	Audit []string `json:"audit,omitzero"` // empty, not nil, for a probed case without flags

	Attempts int  `json:"attempts"`
	Infra    bool `json:"infra_error"`
	// Shared is set when no request was made for this case: an identical
	// execution of the same run answered it (Attempts is then 0).
	Shared bool `json:"shared,omitempty"`
	// Cached is set when the answer came from the result cache of an
	// earlier run (Attempts is then 0).
	Cached bool `json:"cached,omitempty"`
	// StarvedReruns counts the embedded sandbox's reruns of a request
	// whose step was starved for a CPU (sandbox/jail/starve.go).
	StarvedReruns int `json:"starved_reruns,omitempty"`
	// CPUTime and CompileCPUTime are the CPU seconds the run and the
	// compile used, and CPUWait the seconds the run's busiest thread
	// waited for a CPU by its limit, where the embedded sandbox measured
	// them (docs/semantics.md §8.2).
	CPUTime        *float64 `json:"cpu_time,omitempty"`
	CompileCPUTime *float64 `json:"compile_cpu_time,omitempty"`
	CPUWait        *float64 `json:"cpu_wait,omitempty"`
}

// ExactVerdict is the case's verdict under verl's exact comparison.
func (r *CaseResult) ExactVerdict() Verdict {
	if r.VerdictExact != nil {
		return *r.VerdictExact
	}
	return r.Verdict
}

// CheckerResult is one run of a problem's checker on a case's output.
type CheckerResult struct {
	ExitCode *int   `json:"exit_code"`
	Output   string `json:"output,omitempty"` // its stdout and stderr, cut
	Error    string `json:"error,omitempty"`  // why it failed, when it did
}

// CaseCheckerError is the status of a case whose checker failed: an
// infrastructure error, not a wrong answer. A rejected output is a
// wrong_answer.
const CaseCheckerError = "checker_error"

// Judge turns the outcome of one request into the case's verdict and
// metadata, row for row as docs/semantics.md §5 says. input and expectedText are the
// case's input and expected output as verl prints them (Python str());
// expected is the expected output, nil when the ground truth has null
// (any finished run then passes).
func Judge(caseIndex int, input, expectedText string, expected *string, resp *Response, err error) CaseResult {
	r := CaseResult{CaseIndex: caseIndex, Input: input, ExpectedOutput: expectedText, Verdict: VerdictAPIError}
	if err != nil {
		msg := err.Error()
		r.APIRequestError = &msg
		r.Status = CaseAPIError
		r.Infra = true
		var apiErr *APIError
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
	case status == StatusFailed && ((cr != nil && cr.Starved) || (rr != nil && rr.Starved)):
		msg := "starved: a step reached its time limit waiting for a CPU, twice (the second time alone among the sandbox's runs)"
		r.APIRequestError = &msg
		r.Status = CaseStarved
		r.Infra = true
		return r
	}
	switch status {
	case StatusSandboxError:
		r.Status = CaseSandboxError
		r.Infra = true
	case StatusFailed:
		switch {
		case cr != nil && (cr.Status == StepError || cr.Status == StepTimeLimitExceeded ||
			(cr.Status == StepFinished && !isZero(cr.ReturnCode))):
			r.Verdict = VerdictCompileError
			if cr.Status == StepTimeLimitExceeded {
				r.Status = CaseCompileTimeout
			} else {
				r.Status = CaseCompileError
			}
		case rr != nil:
			switch {
			case rr.Status == StepTimeLimitExceeded:
				r.Verdict, r.Status = VerdictTimeout, CaseTimeout
			case rr.Status == StepError || (rr.Status == StepFinished && !isZero(rr.ReturnCode)):
				r.Verdict, r.Status = VerdictRuntimeError, CaseRuntimeError
			default:
				r.Status = CaseUnknownFailure
				r.Infra = true
			}
		default:
			r.Status = CaseUnknownFailureState
			r.Infra = true
		}
	case StatusSuccess:
		if rr != nil && rr.Status == StepFinished {
			if expected == nil || strings.TrimRight(rr.Stdout, "\n") == strings.TrimRight(*expected, "\n") {
				r.Verdict, r.Status = VerdictTrue, CaseSuccess
			} else {
				r.Verdict, r.Status = VerdictFalse, CaseWrongAnswer
			}
		} else {
			r.Status = CaseUnexpectedSuccessState
			r.Infra = true
		}
	default:
		r.Status = CaseUnknownAPIStatusPrefix + status
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

// APIError is a request that got no usable response: a transport error, a
// non-2xx status after the retries allowed, or a body that is not JSON.
type APIError struct {
	Attempts   int   // HTTP requests made
	StatusCode int   // last HTTP status, 0 if none was received
	Err        error // what went wrong last
}

func (e *APIError) Error() string { return "api call failed: " + e.Err.Error() }

func (e *APIError) Unwrap() error { return e.Err }
