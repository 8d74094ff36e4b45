package score

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/verdict"
)

// maxCheckerOutput bounds the checker output kept with a case.
const maxCheckerOutput = 2000

// rejudge applies the compare mode or the problem's checker to case i,
// whose verdict cr holds under verl's exact rule, and keeps that verdict
// in VerdictExact when the two differ (docs/semantics.md §10). Only a run
// that finished (success or wrong_answer) is judged again; a null expected
// output passes any finished run under every mode, as in verl. A checker
// run needs the case's slot of the limit, sl, which rejudge takes again
// if the caller gave it back; it returns how many checker requests it
// made.
func (e *Engine) rejudge(ctx context.Context, st *solState, i int, cr *verdict.Case, sl *slot) int {
	if cr.Status != verdict.StatusSuccess && cr.Status != verdict.StatusWrongAnswer {
		return 0
	}
	c := &st.set.Cases[i]
	expected := st.expected(i)
	if expected == nil || cr.Stdout == nil {
		return 0
	}
	exact := cr.Verdict
	runs := 0
	switch ch := st.set.Checker; {
	case ch != nil:
		// An output equal to the expected one is accepted without asking.
		if exact == verdict.True && ch.Err == "" {
			break
		}
		if err := sl.acquire(ctx); err != nil {
			e.checkerFailed(cr, fmt.Sprintf("checker not run: %v", err))
			break
		}
		runs = e.runChecker(ctx, ch, c, *expected, cr)
	case exact == verdict.False:
		callBased := st.set.CallBased(st.lang)
		match := e.opts.Compare.Match
		if st.set.Ordered {
			match = e.opts.Compare.MatchOrdered
		}
		if match(*cr.Stdout, *expected, callBased) {
			cr.Verdict, cr.Status = verdict.True, verdict.StatusSuccess
		}
	}
	if cr.Verdict != exact {
		cr.VerdictExact = &exact
	}
	return runs
}

// runChecker runs the problem's checker on case c's output and sets cr's
// verdict from its exit code (testcases.CheckerAccepted and the rest). It
// returns the requests made.
func (e *Engine) runChecker(
	ctx context.Context,
	ch *testcases.Checker,
	c *testcases.Case,
	expected string,
	cr *verdict.Case,
) int {
	if ch.Err != "" {
		e.checkerFailed(cr, ch.Err)
		return 0
	}
	if !sandboxclient.IsSupportedLanguage(ch.Language) {
		e.checkerFailed(cr, fmt.Sprintf("checker language %q is not supported", ch.Language))
		return 0
	}
	in := ""
	if c.Stdin != nil {
		in = *c.Stdin
	}
	req := &sandboxclient.Request{
		CompileTimeout: e.opts.Timeout,
		RunTimeout:     e.opts.Timeout,
		Code:           ch.Program(),
		MemoryLimitMB:  e.opts.MemoryLimitMB,
		Language:       ch.Language,
	}
	if ch.Framed() {
		framed := testcases.Stdin(in, *cr.Stdout, expected)
		req.Stdin = &framed
	} else {
		b64 := base64.StdEncoding.EncodeToString
		req.Files = map[string]string{
			testcases.CheckerInput:  b64([]byte(in)),
			testcases.CheckerOutput: b64([]byte(*cr.Stdout)),
			testcases.CheckerAnswer: b64([]byte(expected)),
		}
	}
	resp, err := e.client.Run(ctx, req)
	res := &verdict.Checker{}
	cr.Checker = res
	if err != nil {
		e.checkerFailed(cr, "checker request failed: "+err.Error())
		return 1
	}
	if cr2 := resp.CompileResult; cr2 != nil &&
		(cr2.Status != sandboxclient.StepFinished || cr2.ReturnCode == nil || *cr2.ReturnCode != 0) {
		res.Output = cut(cr2.Stderr, maxCheckerOutput)
		e.checkerFailed(cr, "checker does not compile")
		return 1
	}
	rr := resp.RunResult
	if rr == nil {
		e.checkerFailed(cr, fmt.Sprintf("checker: sandbox answered %s without a run result", resp.Status))
		return 1
	}
	res.ExitCode = rr.ReturnCode
	res.Output = cut(rr.Stdout+rr.Stderr, maxCheckerOutput)
	switch {
	case rr.Status == sandboxclient.StepTimeLimitExceeded:
		e.checkerFailed(cr, "checker timed out")
	case rr.Status != sandboxclient.StepFinished || rr.ReturnCode == nil:
		e.checkerFailed(cr, fmt.Sprintf("checker run ended as %s", rr.Status))
	case *rr.ReturnCode == testcases.CheckerAccepted:
		cr.Verdict, cr.Status = verdict.True, verdict.StatusSuccess
	case *rr.ReturnCode == testcases.CheckerWrongAnswer || *rr.ReturnCode == testcases.CheckerPresentation:
		cr.Verdict, cr.Status = verdict.False, verdict.StatusWrongAnswer
	default:
		e.checkerFailed(cr, fmt.Sprintf("checker failed with exit code %d", *rr.ReturnCode))
	}
	return 1
}

// checkerFailed makes cr an infrastructure error of the checker.
func (e *Engine) checkerFailed(cr *verdict.Case, msg string) {
	if cr.Checker == nil {
		cr.Checker = &verdict.Checker{}
	}
	cr.Checker.Error = msg
	cr.Verdict, cr.Status, cr.Infra = verdict.APIError, verdict.StatusCheckerError, true
	cr.APIRequestError = &msg
}

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("...[cut, %d bytes in all]", len(s))
}
