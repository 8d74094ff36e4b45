package score

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/verdict"
)

// SWERunner runs one rollout of a repository task: the patch applied in the
// instance's environment and its tests graded (the embedded sandbox's SWE).
// Its failures are outcomes (swe.EnvironmentError, swe.SandboxError).
type SWERunner interface {
	Evaluate(ctx context.Context, inst *swe.Instance, plan *swe.Plan, patch string) *swe.Outcome
}

// SWEPrefetcher is an SWERunner that can ready an instance's environment
// ahead of its rollout (pull and unpack its image in the background): the
// engine tells it of each rollout as it enters the window, so the images
// of the rows ahead are ready when their rollouts get a slot.
type SWEPrefetcher interface {
	Prefetch(inst *swe.Instance)
}

// SWE rewards (Options.SWEReward).
const (
	// SWERewardResolved is 1 for a resolved instance, else 0 (SWE-bench,
	// SkyRL, rllm).
	SWERewardResolved = "resolved"
	// SWERewardF2P is the share of FAIL_TO_PASS tests that pass.
	SWERewardF2P = "f2p"
	// SWERewardPartial is 1 when resolved, the FAIL_TO_PASS share when
	// SWE-bench says RESOLVED_PARTIAL (some pass, every PASS_TO_PASS test
	// too), else 0.
	SWERewardPartial = "partial"
)

// SWEResult is what a rollout of a repository task records beside its
// cases: its outcome and SWE-bench's report of it.
type SWEResult struct {
	InstanceID   string     `json:"instance_id"`
	Outcome      string     `json:"outcome"`
	Why          string     `json:"why,omitempty"`
	Rules        string     `json:"rules"`
	Resolved     bool       `json:"resolved"`
	Resolution   string     `json:"resolution,omitempty"`
	PatchApplied bool       `json:"patch_applied"`
	AppliedBy    string     `json:"applied_by,omitempty"`
	F2PPassed    int        `json:"f2p_passed"`
	F2PTotal     int        `json:"f2p_total"`
	P2PPassed    int        `json:"p2p_passed"`
	P2PTotal     int        `json:"p2p_total"`
	ExitCode     int        `json:"test_exit_code"`
	Flags        []swe.Flag `json:"flags,omitempty"`
	ApplyOutput  string     `json:"apply_output,omitempty"`
	Log          string     `json:"log,omitempty"`
	// Plan is where the evaluation script came from.
	Plan string `json:"plan,omitempty"`
}

// maxSWEText bounds the apply output and the log a result keeps (the
// cases-out's bound cuts them further).
const maxSWEText = 64 << 10

// instance reads the truth as an SWE instance: ok is false for a truth of
// another shape (test cases), err is set for an SWE instance that is not
// whole.
func (t *Truth) instance() (inst *swe.Instance, ok bool, err error) {
	t.sweOnce.Do(func() {
		raw := bytes.TrimSpace(t.raw)
		if !bytes.Contains(raw, []byte("FAIL_TO_PASS")) || !bytes.Contains(raw, []byte("instance_id")) {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		if s, isStr := v.(string); isStr {
			if json.Unmarshal([]byte(s), &v) != nil {
				return
			}
		}
		m, isObj := v.(map[string]any)
		if !isObj || !swe.IsInstance(m) {
			return
		}
		t.isSWE = true
		t.swe, t.sweErr = swe.ParseInstance(m)
	})
	return t.swe, t.isSWE, t.sweErr
}

// startSWE prepares a rollout of a repository task: a case per FAIL_TO_PASS
// and PASS_TO_PASS test, the patch, the plan. It finishes st itself where
// nothing is to run.
func (e *Engine) startSWE(st *solState, sol Solution, inst *swe.Instance, err error) *solState {
	st.res.Language = "swe"
	if err != nil {
		st.res.Err, st.res.InputErr, st.finished = err.Error(), true, true
		close(st.done)
		return st
	}
	st.swe = &sweState{inst: inst}
	var cases []verdict.Case
	for _, list := range []struct {
		names []string
		kind  string
	}{{inst.FailToPass, "FAIL_TO_PASS"}, {inst.PassToPass, "PASS_TO_PASS"}} {
		for _, n := range list.names {
			cases = append(cases, verdict.Case{CaseIndex: len(cases), Input: n, ExpectedOutput: list.kind})
		}
	}
	st.res.Cases = cases
	e.progress.CasesTotal.Add(int64(len(cases)))
	plan, err := swe.PlanFor(inst, "")
	if err != nil {
		st.res.Err, st.res.InputErr = err.Error(), true
		e.endSWE(st, &swe.Outcome{Kind: swe.EnvironmentError, Why: err.Error(), ExitCode: -1})
		return st
	}
	st.swe.plan = plan
	patch, ok := swe.ExtractPatch(sol.Completion)
	if !ok {
		e.endSWE(st, &swe.Outcome{Kind: swe.PatchMissing, Why: "the response holds no patch", ExitCode: -1})
		return st
	}
	st.swe.patch = patch
	if e.opts.SWE == nil {
		e.endSWE(st, &swe.Outcome{Kind: swe.SandboxError, ExitCode: -1,
			Why: "repository tasks run in the embedded sandbox only, with --images naming their images"})
		return st
	}
	if p, ok := e.opts.SWE.(SWEPrefetcher); ok {
		p.Prefetch(inst)
	}
	return st
}

type sweState struct {
	inst  *swe.Instance
	plan  *swe.Plan
	patch string
	res   *SWEResult
}

// dispatchSWE runs the rollout under one slot of the global limit.
func (e *Engine) dispatchSWE(ctx, reqCtx context.Context, st *solState) {
	sl := e.lim.slot(st.res.ID, 0)
	if ctx.Err() != nil || sl.acquire(ctx) != nil || ctx.Err() != nil {
		sl.release()
		st.mu.Lock()
		st.res.Aborted = true
		st.mu.Unlock()
		return
	}
	st.pending.Add(1)
	e.progress.InFlight.Add(1)
	go func() {
		defer st.pending.Done()
		defer sl.release()
		defer e.progress.InFlight.Add(-1)
		o := e.opts.SWE.Evaluate(reqCtx, st.swe.inst, st.swe.plan, st.swe.patch)
		st.res.Requests++
		if reqCtx.Err() != nil {
			st.mu.Lock()
			st.res.Aborted = true
			st.mu.Unlock()
		}
		e.recordSWE(st, o)
	}()
}

// endSWE records an outcome reached without a run and finishes st.
func (e *Engine) endSWE(st *solState, o *swe.Outcome) {
	e.recordSWE(st, o)
	e.finish(st)
}

// recordSWE turns an outcome into the rollout's cases and its result.
func (e *Engine) recordSWE(st *solState, o *swe.Outcome) {
	st.mu.Lock()
	defer st.mu.Unlock()
	inst := st.swe.inst
	r := &SWEResult{InstanceID: inst.InstanceID, Outcome: o.Kind, Why: o.Why, Rules: string(e.opts.SWERules.Version),
		PatchApplied: o.PatchApplied, AppliedBy: o.AppliedBy, ExitCode: o.ExitCode, Flags: o.Flags,
		ApplyOutput: o.ApplyOutput, Log: o.Log,
		F2PTotal: len(inst.FailToPass), P2PTotal: len(inst.PassToPass)}
	if st.swe.plan != nil {
		r.Plan = st.swe.plan.Source
	}
	infra := swe.Infra(o.Kind)
	var tests []swe.TestResult
	if o.Report != nil {
		r.Resolution, r.Resolved = o.Report.Resolution, o.Report.Resolved()
		tests = append(append(tests, o.Report.FailToPass...), o.Report.PassToPass...)
		for _, t := range o.Report.FailToPass {
			if t.Passed {
				r.F2PPassed++
			}
		}
		for _, t := range o.Report.PassToPass {
			if t.Passed {
				r.P2PPassed++
			}
		}
	}
	for i := range st.res.Cases {
		c := &st.res.Cases[i]
		switch {
		case infra:
			msg := o.Kind + ": " + o.Why
			c.Verdict, c.Status, c.Infra, c.APIRequestError = verdict.APIError, swe.CaseStatus(o.Kind), true, &msg
		case i < len(tests):
			t := tests[i]
			c.Stdout = &t.Status
			c.Verdict, c.Status = verdict.False, swe.StatusFailedTest
			if !t.Failed {
				c.Verdict, c.Status = verdict.True, swe.StatusPassedTest
				if !t.Passed {
					c.Status = swe.StatusNotCounted // skipped, under v4.1.0
				}
			}
		default:
			c.Verdict, c.Status = verdict.False, swe.CaseStatus(o.Kind)
		}
	}
	e.progress.CasesDone.Add(int64(len(st.res.Cases)))
	if infra {
		e.progress.InfraErrs.Add(int64(len(st.res.Cases)))
	}
	r = r.Trimmed(maxSWEText)
	st.swe.res = r
	st.res.SWE = r
	// A response with no patch has a reward_error, as one with no code;
	// an environment's or the sandbox's failure is in its cases (-1, infra),
	// counted against --max-infra-errors as the sandbox's are.
	if o.Kind == swe.PatchMissing && st.res.Err == "" {
		st.res.Err = o.Kind + ": " + o.Why
	}
}

// sweScore is a rollout's reward under Options.SWEReward.
func (e *Engine) sweScore(r *SWEResult) float64 {
	if r == nil {
		return 0
	}
	if e.opts.Audit && e.opts.AuditFail && len(r.Flags) > 0 {
		return 0 // the stricter rule: a flagged patch earns nothing
	}
	f2p := 1.0
	if r.F2PTotal > 0 {
		f2p = float64(r.F2PPassed) / float64(r.F2PTotal)
	}
	switch e.opts.SWEReward {
	case SWERewardF2P:
		if r.Outcome == swe.TestsFailed || r.Outcome == swe.Resolved {
			return f2p
		}
		return 0
	case SWERewardPartial:
		switch r.Resolution {
		case swe.ResolvedFull:
			return 1
		case swe.ResolvedPartial:
			return f2p
		}
		return 0
	}
	if r.Resolved {
		return 1
	}
	return 0
}

// Trimmed is r with its apply output and log cut to their last max bytes
// each (the end, where the summary and the errors are); r itself when they
// fit or max is 0.
func (r *SWEResult) Trimmed(max int) *SWEResult {
	if r == nil || max <= 0 || len(r.ApplyOutput) <= max && len(r.Log) <= max {
		return r
	}
	c := *r
	for _, t := range []*string{&c.ApplyOutput, &c.Log} {
		if len(*t) > max {
			*t = (*t)[len(*t)-max:]
		}
	}
	return &c
}
