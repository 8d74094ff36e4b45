//go:build linux

package jail

import "time"

// Outcome is how a step ended.
type Outcome int

const (
	// Exited: the program ran and ended by itself (ExitCode says how).
	Exited Outcome = iota
	// TimedOut: the step reached its time limit and was killed.
	TimedOut
	// NotStarted: the program could not be started (Stderr says why).
	NotStarted
)

func (o Outcome) String() string {
	switch o {
	case Exited:
		return "exited"
	case TimedOut:
		return "timed out"
	case NotStarted:
		return "not started"
	}
	return "unknown"
}

// Result is what one contained step did. It is the jail's own account:
// the sandbox turns it into a protocol's answer once.
type Result struct {
	Outcome Outcome
	// Elapsed is the step's wall time, from the start of the program (not
	// of its init building the view).
	Elapsed time.Duration
	// ExitCode is the program's exit status, or minus the signal that
	// killed it; nil unless it Exited.
	ExitCode *int
	// Stdout and Stderr are the output kept (MaxOutput bytes each), with a
	// note on Stderr of what was cut.
	Stdout, Stderr string
	// CPU is the CPU time the step's processes used, ended ones included
	// where a cgroup counted them; Waited is how long its busiest thread
	// was runnable but waiting for a CPU, measured at its limit.
	CPU, Waited time.Duration
	// Starved marks a TimedOut step that had waited for a CPU past the
	// time given back for it (starve.go): the time was the machine's, not
	// the program's.
	Starved bool
	// Files are the files of Spec.Fetch read back, base64 as the protocol
	// carries them.
	Files map[string]string
}

// Succeeded reports whether the program ran and exited 0.
func (r *Result) Succeeded() bool {
	return r.Outcome == Exited && r.ExitCode != nil && *r.ExitCode == 0
}
