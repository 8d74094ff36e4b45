//go:build linux

package sandbox

import (
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandboxclient"
)

// Each way a step ends becomes SandboxFusion's step status, with its
// times in seconds and the code only of a step that exited.
func TestStepResultFromTheJail(t *testing.T) {
	zero, killed := 0, -9
	tests := []struct {
		in   jail.Result
		want sandboxclient.StepResult
	}{
		{
			jail.Result{
				Outcome:  jail.Exited,
				ExitCode: &zero,
				Elapsed:  1500 * time.Millisecond,
				Stdout:   "out",
				Stderr:   "err",
				CPU:      time.Second,
			},
			sandboxclient.StepResult{
				Status:        sandboxclient.StepFinished,
				ReturnCode:    &zero,
				ExecutionTime: 1.5,
				Stdout:        "out",
				Stderr:        "err",
				CPUTime:       1,
			},
		},
		{jail.Result{Outcome: jail.Exited, ExitCode: &killed},
			sandboxclient.StepResult{Status: sandboxclient.StepFinished, ReturnCode: &killed}},
		{
			jail.Result{
				Outcome: jail.TimedOut,
				Elapsed: 3 * time.Second,
				Starved: true,
				Waited:  2 * time.Second,
				CPU:     time.Second,
			},
			sandboxclient.StepResult{
				Status:        sandboxclient.StepTimeLimitExceeded,
				ExecutionTime: 3,
				Starved:       true,
				CPUWait:       2,
				CPUTime:       1,
			},
		},
		{jail.Result{Outcome: jail.NotStarted, Stderr: "no such file"},
			sandboxclient.StepResult{Status: sandboxclient.StepError, Stderr: "no such file"}},
	}
	for _, tt := range tests {
		got := stepResult(&tt.in)
		if got.Status != tt.want.Status || got.ExecutionTime != tt.want.ExecutionTime ||
			got.Stdout != tt.want.Stdout || got.Stderr != tt.want.Stderr ||
			got.Starved != tt.want.Starved || got.CPUTime != tt.want.CPUTime ||
			got.CPUWait != tt.want.CPUWait ||
			(got.ReturnCode == nil) != (tt.want.ReturnCode == nil) ||
			(got.ReturnCode != nil && *got.ReturnCode != *tt.want.ReturnCode) {
			t.Errorf("%s: got %+v, want %+v", tt.in.Outcome, got, tt.want)
		}
	}
}
