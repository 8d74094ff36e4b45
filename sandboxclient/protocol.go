// Package sandboxclient speaks the SandboxFusion /run_code protocol: the
// request and response bodies, an HTTP client with verl's retry rules (and
// bounded extra retries for overload), and the verdict of one test case.
package sandboxclient

import (
	"bytes"
	"context"
	"encoding/json"
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

// StepResult is the outcome of one compile or run step: what the
// protocol says of it (Status to Stderr) and what the embedded sandbox
// measured besides, which stays off the wire (stepWire is the wire form).
type StepResult struct {
	Status        string
	ExecutionTime float64
	ReturnCode    *int
	Stdout        string
	Stderr        string

	// Starved marks a step that reached its limit having waited for a CPU
	// past the time given back for it (the embedded sandbox's rule, see
	// sandbox/jail/starve.go): the time was the machine's, not the program's.
	// Over HTTP it is TimeLimitExceeded.
	Starved bool
	// CPUTime is the CPU time the step's processes used, dead ones
	// included, and CPUWait the time its busiest thread was runnable but
	// waiting for a CPU, in seconds, where the embedded sandbox measured
	// them (a cgroup per run; the wait at a step's limit).
	CPUTime float64
	CPUWait float64
}

// Response is a SandboxFusion server's answer: what the protocol carries
// (Status to Files; responseWire is its JSON body) and what the client or
// the embedded sandbox learnt getting it, which stays off the wire.
type Response struct {
	Status          string
	Message         string
	CompileResult   *StepResult
	RunResult       *StepResult
	ExecutorPodName *string
	Files           map[string]string

	// Attempts is how many HTTP requests it took to get this response
	// (1 without retries).
	Attempts int
	// StarvedReruns is how many times the embedded sandbox ran the request
	// again because a step was starved.
	StarvedReruns int
	// QueueWait is how long the request waited at the server for a slot,
	// when the server said so (header QueueWaitHeader; serve does);
	// QueueWaitKnown tells.
	QueueWait      time.Duration
	QueueWaitKnown bool
}

// The wire forms: the JSON bodies of SandboxFusion's protocol, and
// nothing else. Response and StepResult encode and decode through them.
type (
	stepWire struct {
		Status        string  `json:"status"`
		ExecutionTime float64 `json:"execution_time"`
		ReturnCode    *int    `json:"return_code"`
		Stdout        string  `json:"stdout"`
		Stderr        string  `json:"stderr"`
	}
	responseWire struct {
		Status          string            `json:"status"`
		Message         string            `json:"message"`
		CompileResult   *StepResult       `json:"compile_result"`
		RunResult       *StepResult       `json:"run_result"`
		ExecutorPodName *string           `json:"executor_pod_name"`
		Files           map[string]string `json:"files"`
	}
)

// MarshalJSON writes the step as the protocol has it.
func (s StepResult) MarshalJSON() ([]byte, error) {
	return marshalRaw(stepWire{s.Status, s.ExecutionTime, s.ReturnCode, s.Stdout, s.Stderr})
}

// marshalRaw encodes v without escaping HTML's characters: the encoder
// that called the MarshalJSON escapes them or not, as it was told, so a
// Response encodes byte for byte as a plain struct would.
func marshalRaw(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads the protocol's step; the measures stay zero.
func (s *StepResult) UnmarshalJSON(b []byte) error {
	var w stepWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = StepResult{
		Status:        w.Status,
		ExecutionTime: w.ExecutionTime,
		ReturnCode:    w.ReturnCode,
		Stdout:        w.Stdout,
		Stderr:        w.Stderr,
	}
	return nil
}

// MarshalJSON writes the response body as the protocol has it.
func (r Response) MarshalJSON() ([]byte, error) {
	return marshalRaw(responseWire{r.Status, r.Message, r.CompileResult, r.RunResult, r.ExecutorPodName, r.Files})
}

// UnmarshalJSON reads the protocol's response body; what the client
// learns besides is set by the client.
func (r *Response) UnmarshalJSON(b []byte) error {
	var w responseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Response{Status: w.Status, Message: w.Message, CompileResult: w.CompileResult, RunResult: w.RunResult,
		ExecutorPodName: w.ExecutorPodName, Files: w.Files}
	return nil
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
