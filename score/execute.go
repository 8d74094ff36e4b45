package score

import (
	"context"
	"fmt"
	"strings"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// Cache keeps sandbox answers across runs (resultcache.Dir); the key is a
// digest of the execution, to which the cache adds the sandbox's identity.
type Cache interface {
	Get(key [32]byte) (*sandboxclient.Response, bool)
	Put(key [32]byte, resp *sandboxclient.Response) error
}

// source says where the answer to a case came from.
type source int

const (
	sent   source = iota // a request was made for it
	shared               // an identical execution of this run answered it
	cached               // the cache had it
)

// send runs case i; the caller hands it the case's slot of the limit,
// held, which send gives back when the case is settled: only then, so that
// a compile error is known before the next case of this solution can take
// the slot. A ground truth with a reference program has it run first, on
// the same input and files: its output is the case's expected output.
func (e *Engine) send(ctx context.Context, st *solState, i int, sl *slot) {
	defer st.pending.Done()
	defer sl.release()
	extra := 0
	if st.set.Reference != nil {
		extra++
		if failed := e.runReference(ctx, st, i, sl); failed != nil {
			e.progress.InFlight.Add(-1)
			e.record(ctx, st, i, *failed, sent, extra)
			return
		}
	}
	req := e.request(st, i)
	resp, src, err := e.execute(ctx, st, i, req, sl)
	e.progress.InFlight.Add(-1)
	cr := e.judge(st, i, resp, err)
	cr.Shared, cr.Cached = src == shared, src == cached
	if src == sent && err == nil && e.opts.Cache != nil && !st.fresh && e.storable(cr) {
		_ = e.opts.Cache.Put(keyOf(req), resp) // a cache that cannot write only costs speed
	}
	if st.set.Checker != nil || !e.opts.Compare.Exact() {
		extra += e.rejudge(ctx, st, i, &cr, sl)
	}
	e.record(ctx, st, i, cr, src, extra)
}

// record keeps case i's result; extra counts the requests made for it
// beside its own (a checker's, a reference program's).
func (e *Engine) record(ctx context.Context, st *solState, i int, cr verdict.Case, src source, extra int) {
	e.progress.CasesDone.Add(1)
	if cr.Infra {
		e.progress.InfraErrs.Add(1)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.res.Cases[i] = cr
	st.res.CheckerRuns += extra
	switch src {
	case shared:
		st.res.Deduped++
	case cached:
		st.res.Cached++
	default:
		st.res.Requests++
	}
	if cr.Attempts > 1 {
		st.res.Retries += cr.Attempts - 1
	}
	if cr.Verdict == verdict.CompileError && (st.firstCE < 0 || i < st.firstCE) {
		st.firstCE = i
	}
	if ctx.Err() != nil && cr.Status == verdict.StatusAPIError {
		st.res.Aborted = true
	}
}

// runReference runs the ground truth's reference program on case i's
// input and keeps its output as the case's expected output. It returns
// the case's result when the reference did not finish: an error of the
// dataset, not of the response, recorded as an infrastructure failure.
func (e *Engine) runReference(ctx context.Context, st *solState, i int, sl *slot) *verdict.Case {
	ref := st.set.Reference
	req := e.request(st, i)
	req.Code, req.Language = ref.Code, ref.Language
	resp, _, err := e.execute(ctx, st, i, req, sl)
	var why string
	switch {
	case err != nil:
		why = err.Error()
	case resp.Status == sandboxclient.StatusSuccess && resp.RunResult != nil &&
		resp.RunResult.Status == sandboxclient.StepFinished:
		out := resp.RunResult.Stdout
		st.mu.Lock()
		if st.refOut == nil {
			st.refOut = make([]*string, len(st.set.Cases))
		}
		st.refOut[i] = &out
		st.mu.Unlock()
		return nil
	case resp.CompileResult != nil && resp.CompileResult.Stderr != "" &&
		resp.CompileResult.Status != sandboxclient.StepFinished:
		why = resp.Status + ": " + resp.CompileResult.Stderr
	case resp.RunResult != nil:
		why = fmt.Sprintf("%s (%s): %s", resp.Status, resp.RunResult.Status, resp.RunResult.Stderr)
	default:
		why = resp.Status
	}
	c := &st.set.Cases[i]
	msg := "the reference program (" + ref.Language + ") did not finish: " + strings.TrimSpace(why)
	if ctx.Err() != nil {
		msg = "not sent: run interrupted"
		return &verdict.Case{Verdict: verdict.APIError, CaseIndex: i, Input: c.Input, ExpectedOutput: c.ExpectedText,
			Status: verdict.StatusAPIError, APIRequestError: &msg, Infra: true}
	}
	return &verdict.Case{Verdict: verdict.APIError, CaseIndex: i, Input: c.Input, ExpectedOutput: c.ExpectedText,
		Status: verdict.StatusReferenceError, APIRequestError: &msg, Infra: true}
}

// storable reports whether a verdict is deterministic enough to keep its
// answer across runs.
func (e *Engine) storable(cr verdict.Case) bool {
	switch {
	case cr.Infra || cr.Verdict == verdict.APIError:
		return false
	case cr.Verdict == verdict.Timeout, cr.Status == verdict.StatusCompileTimeout:
		// A run or compile that reached its limit may not on a quieter
		// machine: a verdict of the moment, not of the code.
		return e.opts.CacheTimeouts
	}
	return true
}

// execute gets the answer to req, case i of st: from the cache, shared
// with an identical execution of this run, or from the client. An answer
// not sent for comes with Attempts 0. The caller holds a slot of the
// limit, sl; while waiting for another case's answer execute gives it
// back (and takes it again if that execution failed and it must send its
// own). A Fresh solution always sends.
func (e *Engine) execute(
	ctx context.Context,
	st *solState,
	i int,
	req *sandboxclient.Request,
	sl *slot,
) (resp *sandboxclient.Response, src source, err error) {
	if st.fresh || (e.shared == nil && e.opts.Cache == nil) {
		resp, err := e.client.Run(ctx, req)
		return resp, sent, err
	}
	k := keyOf(req)
	if e.opts.Cache != nil {
		if resp, ok := e.opts.Cache.Get(k); ok {
			resp.Attempts = 0
			return resp, cached, nil
		}
	}
	if e.shared == nil {
		resp, err := e.client.Run(ctx, req)
		return resp, sent, err
	}
	for {
		fl, lead := e.shared.join(k)
		if lead {
			resp, err := e.client.Run(ctx, req)
			if err != nil || ctx.Err() != nil {
				e.shared.land(k, fl, nil)
			} else {
				e.shared.land(k, fl, resp)
			}
			return resp, sent, err
		}
		select {
		case <-fl.done: // answered already: no wait, keep the slot
		default:
			sl.release()
		}
		if resp := fl.wait(ctx); resp != nil {
			c := *resp
			c.Attempts = 0
			return &c, shared, nil
		}
		if ctx.Err() != nil {
			return nil, sent, &sandboxclient.APIError{Err: fmt.Errorf("request not sent: %w", ctx.Err())}
		}
		// That execution failed: try again, perhaps leading this time.
		if err := sl.acquire(ctx); err != nil {
			return nil, sent, &sandboxclient.APIError{Err: fmt.Errorf("request not sent: %w", err)}
		}
	}
}
