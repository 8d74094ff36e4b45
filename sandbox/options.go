// Package sandbox runs untrusted programs on this machine and answers as a
// SandboxFusion server would: compile, then run, with the same statuses and
// return codes, so that a local run and a remote run give the same verdicts.
//
// Each step runs in a fresh directory, with a scrubbed environment, in its
// own process group, under resource limits set by a small /bin/sh wrapper
// (ulimit, then exec), without network where the kernel allows a new network
// namespace, and, when running as root, as a user of its own so that a fork
// bomb is bounded and every process it left behind can be found and killed.
//
// It needs Linux; elsewhere New says so, and every command that runs no
// code (diff, report, merge, check against a server) works.
package sandbox

import (
	"errors"
	"fmt"
	"io"
)

// ErrUnsupportedLanguage is wrapped by Run's error for a language that a
// SandboxFusion server would reject outright (HTTP 422).
var ErrUnsupportedLanguage = errors.New("unsupported language")

// IsolationMode chooses how much containment Local tries to set up.
type IsolationMode int

const (
	// IsolationAuto uses every protection the host allows and warns once
	// about the ones it cannot have.
	IsolationAuto IsolationMode = iota
	// IsolationNone turns off the namespace and user protections (resource
	// limits, process groups and output caps stay).
	IsolationNone
	// IsolationBasic keeps the per-run user and the network namespace but
	// gives runs no filesystem view, PID or IPC namespace of their own:
	// they see the host's world-readable files and processes. It exists
	// to measure what the view costs, and for hosts whose toolchains do
	// not work inside one.
	IsolationBasic
)

// ParseIsolation reads an isolation mode by name: "auto", "basic" or "none".
func ParseIsolation(name string) (IsolationMode, error) {
	switch name {
	case "auto":
		return IsolationAuto, nil
	case "basic":
		return IsolationBasic, nil
	case "none":
		return IsolationNone, nil
	}
	return 0, fmt.Errorf("isolation must be auto, basic or none, got %q", name)
}

// String is the mode's name, as ParseIsolation reads it.
func (m IsolationMode) String() string {
	switch m {
	case IsolationNone:
		return "none"
	case IsolationBasic:
		return "basic"
	}
	return "auto"
}

// DefaultMaxOutputBytes is how much of each of stdout and stderr a run keeps.
const DefaultMaxOutputBytes = 1 << 20

// Options configure a Local sandbox. The zero value is usable.
type Options struct {
	Concurrency    int           // steps running at once; default runtime.NumCPU()
	TempDir        string        // parent of the sandbox's directories; default os.TempDir()
	MaxOutputBytes int           // bytes kept per stream; more is read and discarded; default 1 MiB
	Isolation      IsolationMode // IsolationAuto (default) or IsolationNone
	Warn           io.Writer     // where the one-time notes about missing protections go; default os.Stderr
	// NoFastPaths turns off what makes runs faster without changing their
	// results: Python runs forked from a pre-started interpreter
	// (sandbox/forkserver), C++ compiled against a precompiled bits/stdc++.h
	// (sandbox/toolchain) and javac started from a class-data archive (sandbox/toolchain).
	// Every run then starts and compiles plainly.
	NoFastPaths bool
	// NoSeccomp starts contained programs without the seccomp filter
	// (sandbox/seccomp); they still start with no capability and
	// no_new_privs. For debugging: New warns each time.
	NoSeccomp bool
	// PythonPrelude is import statements that many Python programs begin
	// with (testcases.DriverHead). A program whose text begins with it is
	// forked from a server that has run it already (sandbox/forkserver), so
	// that the modules are imported once, not by every run.
	PythonPrelude string
	// RubyStackMB, when positive, is the stack limit of Ruby runs in
	// place of the memory limit SandboxFusion gives it, under which Ruby
	// cannot start (every Ruby program segfaults there, and verl scores it
	// 0). Verdicts then differ from verl's.
	RubyStackMB int
}

// Stats counts what a Local has done.
type Stats struct {
	Runs             int64 // requests answered by Run
	Compiles         int64 // compilations actually performed
	CompileCacheHits int64 // compilations answered from the cache
	ForkedRuns       int64 // Python runs the fork server started
	// ForkedFaults is the minor page faults of those runs' programs: most
	// of a forked run's cost is pages it copies from the server.
	ForkedFaults int64
	PreludeRuns  int64 // forked runs whose server had run the PythonPrelude
	// StarveGrants counts the times a step at its limit was given back the
	// time it waited for a CPU, and StarvedReruns the requests run again
	// because a step was starved past that (sandbox/jail/starve.go).
	StarveGrants  int64
	StarvedReruns int64
}

// Protection is one containment measure and whether this host allows it.
type Protection struct {
	Name      string
	Available bool
	Detail    string
}
