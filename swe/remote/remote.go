// Package remote runs repository tasks' rollouts on verl-score serve
// endpoints: swe's outcomes to and from /run_swe's wire form
// (sandboxclient's SWE types), and the engine's SWE runner over a fleet.
package remote

import (
	"context"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/swe"
)

// Response is an outcome as /run_swe answers it.
func Response(o *swe.Outcome) *sandboxclient.SWEResponse {
	r := &sandboxclient.SWEResponse{Outcome: o.Kind, Why: o.Why, PatchApplied: o.PatchApplied, AppliedBy: o.AppliedBy,
		ApplyOutput: o.ApplyOutput, Log: o.Log, ExitCode: o.ExitCode}
	for _, f := range o.Flags {
		r.Flags = append(r.Flags, sandboxclient.SWEFlag{Kind: f.Kind, Path: f.Path})
	}
	if rep := o.Report; rep != nil {
		r.Resolution = rep.Resolution
		conv := func(ts []swe.TestResult) []sandboxclient.SWETest {
			out := make([]sandboxclient.SWETest, len(ts))
			for i, t := range ts {
				out[i] = sandboxclient.SWETest{Name: t.Name, Status: t.Status, Passed: t.Passed, Failed: t.Failed}
			}
			return out
		}
		r.FailToPass, r.PassToPass = conv(rep.FailToPass), conv(rep.PassToPass)
	}
	return r
}

// Outcome is an answer of /run_swe as the engine records it.
func Outcome(r *sandboxclient.SWEResponse) *swe.Outcome {
	o := &swe.Outcome{Kind: r.Outcome, Why: r.Why, PatchApplied: r.PatchApplied, AppliedBy: r.AppliedBy,
		ApplyOutput: r.ApplyOutput, Log: r.Log, ExitCode: r.ExitCode}
	for _, f := range r.Flags {
		o.Flags = append(o.Flags, swe.Flag{Kind: f.Kind, Path: f.Path})
	}
	if r.Resolution != "" {
		conv := func(ts []sandboxclient.SWETest) []swe.TestResult {
			out := make([]swe.TestResult, len(ts))
			for i, t := range ts {
				out[i] = swe.TestResult{Name: t.Name, Status: t.Status, Passed: t.Passed, Failed: t.Failed}
			}
			return out
		}
		o.Report = &swe.Report{FailToPass: conv(r.FailToPass), PassToPass: conv(r.PassToPass),
			Resolution: r.Resolution}
	}
	return o
}

// Fleet runs rollouts on a fleet's /run_swe under the run's rules: the
// engine's SWE runner with --sandbox-url.
type Fleet struct {
	F     *sandboxclient.SWEFleet
	Rules swe.Rules
}

// Evaluate sends one rollout; when no endpoint ran it, the outcome is a
// sandbox error (infrastructure, never the model's 0).
func (f *Fleet) Evaluate(ctx context.Context, inst *swe.Instance, _ *swe.Plan, patch string) *swe.Outcome {
	resp, err := f.F.Send(ctx, inst.ImageRef(), &sandboxclient.SWERequest{Instance: inst.Fields(), Patch: patch,
		Rules: string(f.Rules.Version)})
	if err != nil {
		return &swe.Outcome{Kind: swe.SandboxError, Why: err.Error(), ExitCode: -1}
	}
	return Outcome(resp)
}
