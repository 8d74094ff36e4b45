// Package sandboxclient speaks the SandboxFusion /run_code protocol: the
// request and response bodies, an HTTP client with verl's retry rules (and
// bounded extra retries for overload), and the verdict of one test case.
package sandboxclient

import (
	"context"
	"time"
)

// Request is the JSON body of POST /run_code.
type Request struct {
	CompileTimeout float64           `json:"compile_timeout"`
	RunTimeout     float64           `json:"run_timeout"`
	Code           string            `json:"code"`
	Stdin          *string           `json:"stdin"`
	MemoryLimitMB  int               `json:"memory_limit_MB"`
	Language       string            `json:"language"`
	Files          map[string]string `json:"files"`
	FetchFiles     []string          `json:"fetch_files"`
}

// Top-level response statuses.
const (
	StatusSuccess      = "Success"
	StatusFailed       = "Failed"
	StatusSandboxError = "SandboxError"
)

// Step (compile or run) statuses.
const (
	StepFinished          = "Finished"
	StepError             = "Error"
	StepTimeLimitExceeded = "TimeLimitExceeded"
)

// StepResult is the outcome of one compile or run step.
type StepResult struct {
	Status        string  `json:"status"`
	ExecutionTime float64 `json:"execution_time"`
	ReturnCode    *int    `json:"return_code"`
	Stdout        string  `json:"stdout"`
	Stderr        string  `json:"stderr"`

	// Starved marks a step that reached its limit having waited for a CPU
	// past the time given back for it (the embedded sandbox's rule, see
	// sandbox/jail/starve.go): the time was the machine's, not the program's.
	// Not part of the wire format: over HTTP it is TimeLimitExceeded.
	Starved bool `json:"-"`
	// CPUTime is the CPU time the step's processes used, dead ones
	// included, and CPUWait the time its busiest thread was runnable but
	// waiting for a CPU, in seconds, where the embedded sandbox measured
	// them (a cgroup per run; the wait at a step's limit). Not part of
	// the wire format.
	CPUTime float64 `json:"-"`
	CPUWait float64 `json:"-"`
}

// Response is the JSON body a SandboxFusion server answers with.
type Response struct {
	Status          string            `json:"status"`
	Message         string            `json:"message"`
	CompileResult   *StepResult       `json:"compile_result"`
	RunResult       *StepResult       `json:"run_result"`
	ExecutorPodName *string           `json:"executor_pod_name"`
	Files           map[string]string `json:"files"`

	// Attempts is how many HTTP requests it took to get this response
	// (1 without retries). Not part of the wire format.
	Attempts int `json:"-"`
	// StarvedReruns is how many times the embedded sandbox ran the request
	// again because a step was starved. Not part of the wire format.
	StarvedReruns int `json:"-"`
	// QueueWait is how long the request waited at the server for a slot,
	// when the server said so (header QueueWaitHeader; serve does);
	// QueueWaitKnown tells. Not part of the wire format.
	QueueWait      time.Duration `json:"-"`
	QueueWaitKnown bool          `json:"-"`
}

// The load headers of serve's /run_code answers: its slots, the requests
// running and waiting when it answered, and how long this request waited
// for a slot, in seconds. A client may size its requests in flight by
// them (the fleet's adaptive limit reads QueueWaitHeader).
const (
	SlotsHeader     = "X-Sandbox-Slots"
	RunningHeader   = "X-Sandbox-Running"
	WaitingHeader   = "X-Sandbox-Waiting"
	QueueWaitHeader = "X-Sandbox-Queue-Wait"
)

// Client runs one request and returns one response. An error means no
// usable response was had (an API error, verdict -1); the HTTP client's
// errors are *APIError and carry the number of attempts made.
type Client interface {
	Run(ctx context.Context, req *Request) (*Response, error)
}

// SupportedLanguages are the languages a SandboxFusion server accepts. A
// request for any other language is an API error without a request.
var SupportedLanguages = []string{
	"python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp",
	"bash", "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut",
	"ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest",
	"verilog", "python_gpu", "lean", "swift", "racket",
}

// IsSupportedLanguage reports whether lang is one of SupportedLanguages.
func IsSupportedLanguage(lang string) bool {
	for _, l := range SupportedLanguages {
		if l == lang {
			return true
		}
	}
	return false
}
