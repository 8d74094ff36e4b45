//go:build !linux

package sandbox

import (
	"context"
	"errors"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/seccomp"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/sandboxclient"
)

// ErrNeedsLinux is New's error where the embedded sandbox cannot run.
var ErrNeedsLinux = errors.New(
	"the embedded sandbox needs Linux (namespaces, per-run users, cgroups); use --sandbox-url or SANDBOX_FUSION_URL to " +
		"run the code on a SandboxFusion server",
)

// Local is the embedded sandbox; on this system New never returns one.
type Local struct{}

// New says that the embedded sandbox needs Linux.
func New(Options) (*Local, error) { return nil, ErrNeedsLinux }

// Run fails: there is no embedded sandbox here.
func (*Local) Run(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error) {
	return nil, ErrNeedsLinux
}

// Close does nothing.
func (*Local) Close() error { return nil }

// Stats are zero.
func (*Local) Stats() Stats { return Stats{} }

// Prepare has nothing to prepare.
func (*Local) Prepare(context.Context) []Protection { return nil }

// IsolationSummary says there is no sandbox.
func (*Local) IsolationSummary() string { return "none: " + ErrNeedsLinux.Error() }

// RunnableLanguages are none.
func (*Local) RunnableLanguages() []string { return nil }

// Protections has one row: the sandbox needs Linux.
func Protections() []Protection {
	return []Protection{{Name: "embedded sandbox", Detail: ErrNeedsLinux.Error()}}
}

// Prepare has nothing to prepare.
func Prepare(context.Context) []Protection { return nil }

// Filter: there is no seccomp filter without Linux.
func Filter() (*seccomp.Filter, error) { return nil, ErrNeedsLinux }

// FastPaths are none.
func FastPaths() []Protection { return nil }

// Languages lists verl's languages, none of them runnable here.
func Languages() []Protection {
	var out []Protection
	for _, l := range lang.All() {
		out = append(out, Protection{Name: l.Name, Detail: "needs Linux, or a SandboxFusion server (--sandbox-url)"})
	}
	return out
}

// NewSWE says that repository tasks need Linux.
func NewSWE(*Local, string, string, swerun.Options) (*swerun.Runner, error) {
	return nil, ErrNeedsLinux
}
