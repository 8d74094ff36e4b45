//go:build !linux

package swerun

import (
	"context"
	"errors"
	"time"

	"github.com/verl-score/verl-score/swe"
)

// Runner runs no repository task where there is no Linux.
type Runner struct {
	Notify    func(msg string)                                     // unused here
	Unpacking func(ref string) (progress func(int64), done func()) // unused here
	Pulling   func(ref string) (progress func(int64), done func()) // unused here
}

// Waited is nothing here.
func (*Runner) Waited() time.Duration { return 0 }

// WaitedFirst is nothing here.
func (*Runner) WaitedFirst() time.Duration { return 0 }

// FirstReady is nothing here.
func (*Runner) FirstReady() time.Duration { return 0 }

// IdleWaiting is nothing here.
func (*Runner) IdleWaiting() time.Duration { return 0 }

// StoreUsage is nothing here.
func (*Runner) StoreUsage() (int, int64, error) {
	return 0, 0, errors.New("repository tasks need Linux")
}

// Close does nothing here.
func (*Runner) Close() {}

// Used is none here.
func (*Runner) Used() []Used { return nil }

// Evaluate is never called: no Runner is made here.
func (*Runner) Evaluate(context.Context, *swe.Instance, *swe.Plan, string) *swe.Outcome {
	return &swe.Outcome{Kind: swe.SandboxError, Why: "repository tasks need Linux", ExitCode: -1}
}

// EvaluateUnder is never called either.
func (r *Runner) EvaluateUnder(ctx context.Context, inst *swe.Instance, plan *swe.Plan, patch string,
	_ swe.Rules) *swe.Outcome {
	return r.Evaluate(ctx, inst, plan, patch)
}

// New says that repository tasks need Linux.
func New(any, string, string, Options) (*Runner, error) {
	return nil, errors.New("repository tasks need Linux")
}
