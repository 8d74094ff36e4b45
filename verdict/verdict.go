// Package verdict holds what a case's run means: verl's verdict codes, the
// statuses that explain them, and a case's result with its metadata. The
// sandbox client, the engine, the job, check and report all speak in these
// terms; the package imports none of them.
package verdict

import "strconv"

// Code is the outcome of one test case, as verl records it: True (1),
// False (0), or one of the negative error codes.
type Code int8

// Verdict codes (docs/semantics.md §5).
const (
	False        Code = 0
	True         Code = 1
	APIError     Code = -1 // request failed, sandbox error, unknown state
	RuntimeError Code = -2
	Timeout      Code = -3
	CompileError Code = -4
)

// String renders the verdict the way verl's result lists print it.
func (v Code) String() string {
	switch v {
	case True:
		return "True"
	case False:
		return "False"
	default:
		return strconv.Itoa(int(v))
	}
}

// Case statuses (docs/semantics.md §5 and 6).
const (
	StatusSuccess        = "success"
	StatusWrongAnswer    = "wrong_answer"
	StatusAPIError       = "api_error"
	StatusSandboxError   = "sandbox_error"
	StatusCompileError   = "compile_error"
	StatusCompileTimeout = "compile_timeout"
	// StatusStarved: a step waited for a CPU past its grace, twice: the
	// machine's time, not the program's.
	StatusStarved                = "starved"
	StatusCompileErrorSkipped    = "compile_error_skipped"
	StatusTimeout                = "timeout"
	StatusRuntimeError           = "runtime_error"
	StatusUnknownFailure         = "unknown_failure"
	StatusUnknownFailureState    = "unknown_failure_state"
	StatusUnexpectedSuccessState = "unexpected_success_state"
	StatusUnknownAPIPrefix       = "unknown_api_status_"
)

// Case is the verdict of one test case with verl's per-case metadata
// (same field names), plus the number of HTTP attempts and a flag telling
// infrastructure failures apart from verdicts about the code.
type Case struct {
	Verdict Code `json:"verdict"`

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
	VerdictExact *Code `json:"verdict_exact,omitempty"`
	// Checker is what the problem's checker said, when it ran: its exit
	// code, its output, or why it failed.
	Checker *Checker `json:"checker,omitempty"`
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
func (r *Case) ExactVerdict() Code {
	if r.VerdictExact != nil {
		return *r.VerdictExact
	}
	return r.Verdict
}

// Checker is one run of a problem's checker on a case's output.
type Checker struct {
	ExitCode *int   `json:"exit_code"`
	Output   string `json:"output,omitempty"` // its stdout and stderr, cut
	Error    string `json:"error,omitempty"`  // why it failed, when it did
}

// StatusCheckerError is the status of a case whose checker failed: an
// infrastructure error, not a wrong answer. A rejected output is a
// wrong_answer.
const StatusCheckerError = "checker_error"

// StatusReferenceError is the status of a case whose reference program
// (a ground truth that computes its expected outputs) did not finish:
// the dataset's fault, counted as an infrastructure error.
const StatusReferenceError = "reference_error"
