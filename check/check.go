package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/feed"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/verdict"
)

// Options configure Check.
type Options struct {
	Input string    // dataset, JSONL file, dump directory or dump file; "-" reads Stdin
	Stdin io.Reader // read when Input is "-"
	// Baseline, when set, is a previous output of `verl-score run` on the
	// same input (parquet or JSONL); its rewards and verdicts are the
	// reference, matched by row index and response index. Otherwise the
	// reference is each row's score field or column (Reader.ScoreKey).
	Baseline string

	Reader     rollout.Options
	DataSource string // for rows that have none (dumps)

	Tolerance   float64 // absolute; |new - reference| <= Tolerance is equal
	MaxMismatch float64 // allowed fraction of mismatches, 0..1
	// Reruns is how many more times a mismatch whose new verdicts include
	// an API/sandbox error (-1) or a timeout (-3) is scored again.
	Reruns int
	// KeepItems keeps every response in Report.Items (for JUnit output).
	KeepItems bool
}

// DefaultTolerance is the default absolute tolerance between two rewards.
const DefaultTolerance = 1e-6

// ErrNoReference is returned when the input carries no reference score
// for any response: there is nothing to check against.
var ErrNoReference = errors.New("no response has a reference score")

// ErrInterrupted is returned (wrapped) when the context was cancelled
// before every response was scored.
var ErrInterrupted = errors.New("check interrupted")

func validate(tol, maxMismatch float64, reruns int) error {
	switch {
	case tol < 0 || tol != tol:
		return fmt.Errorf("tolerance must be >= 0, got %g", tol)
	case maxMismatch < 0 || maxMismatch > 1 || maxMismatch != maxMismatch:
		return fmt.Errorf("max mismatch must be a fraction between 0 and 1, got %g", maxMismatch)
	case reruns < 0:
		return fmt.Errorf("reruns must be >= 0, got %d", reruns)
	}
	return nil
}

// pending is a response sent to the engine, waiting for its result.
type pending struct {
	item   *Item
	sol    score.Solution
	noBase bool // the baseline lacks this response
}

// Check scores every response of opts.Input and compares the new rewards
// with the reference. Mismatches with flaky-looking verdicts (-1, -3) are
// scored again up to opts.Reruns times; one whose verdicts change between
// runs is Flaky, one whose verdicts repeat is a Regressed or Improved
// mismatch. The report is returned whenever the check ran to its end;
// the caller decides the exit code from Report.Regression. Stopping eng
// or cancelling ctx ends the check with ErrInterrupted.
func Check(ctx context.Context, eng *score.Engine, opts Options) (*Report, error) {
	if err := validate(opts.Tolerance, opts.MaxMismatch, opts.Reruns); err != nil {
		return nil, err
	}
	rd, err := rollout.OpenInput(opts.Input, opts.Stdin, opts.Reader)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var base rollout.ScoredReader
	refDesc := "the score field"
	if opts.Baseline != "" {
		if base, err = rollout.OpenScored(opts.Baseline, opts.Reader); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		defer base.Close()
		refDesc = "baseline " + opts.Baseline
	}

	rep := &Report{Command: "check", Reference: refDesc, New: opts.Input, Tolerance: opts.Tolerance,
		MaxMismatch: opts.MaxMismatch, Reruns: opts.Reruns}
	b := newBuilder(rep, opts.KeepItems)
	withTransitions := base != nil
	c := &checker{opts: opts, b: b, base: base, baseDone: base == nil}
	var rerun []*pending
	out, err := feed.Run(ctx, eng, rd, feed.Options{DataSource: opts.DataSource, InOrder: true}, feed.Hooks[[]*pending]{
		Row: c.row,
		End: c.end,
		Result: func(r *score.Result, row []*pending, j int) error {
			p := row[j]
			it := p.item
			it.New = fptr(r.Score)
			it.NewVerdicts = r.Verdicts()
			it.Err = r.Err
			classify(it, opts.Tolerance)
			if p.noBase {
				it.Outcome = Missing
			}
			mismatch := it.Outcome == Regressed || it.Outcome == Improved
			if mismatch || it.Outcome == Missing {
				it.Reason, it.Code = reasonOf(r), excerpt(p.sol.Completion)
			}
			switch {
			case mismatch && noisyReference(it):
				it.Outcome, it.FlakyReason = Flaky, reasonReference
			case mismatch && mayNotRepeat(r) && opts.Reruns > 0:
				rerun = append(rerun, p)
				return nil
			}
			b.add(it, withTransitions)
			return nil
		},
	})
	if out.Interrupted {
		return nil, fmt.Errorf("%w: %d responses scored", ErrInterrupted, rep.Counts.Responses+len(rerun))
	}
	if err != nil {
		return nil, err
	}
	if err := out.Infra.Unusable(); err != nil {
		return nil, err
	}

	// Rerun the suspicious mismatches; once a response's verdicts change
	// it is flaky and needs no further run.
	for round := 0; round < opts.Reruns && len(rerun) > 0; round++ {
		var still []*pending
		results, err := rescore(ctx, eng, rerun)
		if err != nil {
			return nil, err
		}
		for i, p := range rerun {
			r := results[i]
			p.item.Runs = append(p.item.Runs, r.Score)
			if !sameVerdicts(r.Verdicts(), p.item.NewVerdicts) {
				p.item.Outcome, p.item.FlakyReason = Flaky, reasonReruns
				b.add(p.item, withTransitions)
				continue
			}
			still = append(still, p)
		}
		rerun = still
	}
	for _, p := range rerun {
		b.add(p.item, withTransitions) // reproducible: keeps its mismatch outcome
	}
	if rep.Counts.Compared+rep.Counts.Missing == 0 {
		if base != nil {
			return nil, fmt.Errorf("%w: the baseline %s matched no response of %s", ErrNoReference, opts.Baseline, opts.Input)
		}
		return nil, fmt.Errorf("%w in %s (no %q field or column; pass --baseline with a previous output of run)",
			ErrNoReference, opts.Input, opts.Reader.ScoreKey)
	}
	return b.finish(), nil
}

// checker holds what the feeding goroutine keeps between rows.
type checker struct {
	opts     Options
	b        *builder
	base     rollout.ScoredReader
	baseDone bool // the baseline is read to its end (or there is none)
	rows     int
}

// row pairs an input row with its reference and makes an item of each
// response.
func (c *checker) row(_ context.Context, b *rollout.Batch, i int, sols []score.Solution) ([]*pending, bool, error) {
	row := &b.Rows[i]
	c.rows++
	ds := row.SourceOr(c.opts.DataSource)
	ref, err := c.reference(row, len(sols))
	if err != nil {
		return nil, false, err
	}
	ps := make([]*pending, len(sols))
	for j, sol := range sols {
		it := &Item{Row: row.Index, Response: j, File: row.File, Line: row.Line, DataSource: ds, ID: row.TaskID}
		if j < len(ref.scores) {
			it.Reference = fptr(ref.scores[j])
		}
		if j < len(ref.verdicts) {
			it.RefVerdicts = ref.verdicts[j]
			if it.RefVerdicts == nil {
				it.RefVerdicts = Verdicts{}
			}
		}
		ps[j] = &pending{item: it, sol: sol, noBase: ref.noBase || (ref.row != nil && j >= len(ref.scores))}
	}
	// Baseline responses beyond the input's are missing from it.
	for j := len(sols); j < len(ref.scores); j++ {
		c.missingFromInput(ref.row, j)
	}
	return ps, len(ps) > 0, nil
}

// end counts the baseline's rows beyond the input's as missing from it.
func (c *checker) end() error {
	if c.baseDone {
		return nil
	}
	extra := 0
	for {
		br, err := c.base.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		extra++
		for j := range br.Rewards {
			c.missingFromInput(br, j)
		}
	}
	if extra > 0 {
		c.b.note(
			"rows",
			"the baseline has %d rows, the input %d: the baseline's last %d rows are missing from the input",
			c.rows+extra,
			c.rows,
			extra,
		)
	}
	return nil
}

// ref is the reference of one input row.
type ref struct {
	row      *rollout.ScoredRow // baseline row, nil without a baseline
	scores   []float64          // per response, NaN when null
	verdicts []Verdicts         // per response (baseline only)
	// noBase is set when the baseline has no row for this input row: its
	// responses are missing from the baseline, a mismatch.
	noBase bool
}

// reference finds the reference scores of row: the baseline's row of the
// same index, or the row's own score field.
func (c *checker) reference(row *rollout.Row, n int) (ref, error) {
	if c.base == nil {
		if row.RefScores == nil {
			return ref{}, nil
		}
		if len(row.RefScores) != n {
			c.b.note("score count", "row %d (%s:%d): %d reference scores for %d responses; its responses are not compared",
				row.Index, row.File, row.Line, len(row.RefScores), n)
			return ref{}, nil
		}
		return ref{scores: row.RefScores}, nil
	}
	if c.baseDone {
		c.b.note("baseline rows", "row %d (%s:%d) is missing from the baseline", row.Index, row.File, row.Line)
		return ref{noBase: true}, nil
	}
	br, err := c.base.Next()
	if err == io.EOF {
		c.baseDone = true
		c.b.note(
			"baseline rows",
			"the baseline ends before row %d of the input: the input's rows from there on are missing from it",
			row.Index,
		)
		return ref{noBase: true}, nil
	}
	if err != nil {
		return ref{}, fmt.Errorf("baseline: %w", err)
	}
	if len(br.Rewards) != n {
		c.b.note("response count", "row %d: the input has %d responses, the baseline %d", row.Index, n, len(br.Rewards))
	}
	r := ref{row: br, scores: br.Rewards}
	for j := range br.Rewards {
		var v Verdicts
		if j < len(br.CaseResults) {
			v = br.CaseResults[j]
		}
		r.verdicts = append(r.verdicts, v)
	}
	return r, nil
}

// missingFromInput records a baseline response the input lacks.
func (c *checker) missingFromInput(br *rollout.ScoredRow, j int) {
	it := &Item{Row: br.Index, Response: j, File: br.File, Line: br.Line, DataSource: br.DataSource, Outcome: Missing}
	if j < len(br.Rewards) {
		it.Reference = fptr(br.Rewards[j])
	}
	c.b.add(it, false)
}

// maxExcerpt is how many lines of a mismatch's code reports carry.
const maxExcerpt = 15

// excerpt is the start of the code verl extracts from a completion.
func excerpt(completion string) string {
	code, _, ok := testcases.Extract(completion, testcases.RuleVerl)
	if !ok {
		return ""
	}
	lines := strings.Split(strings.Trim(code, "\n"), "\n")
	if len(lines) > maxExcerpt {
		lines = append(lines[:maxExcerpt], fmt.Sprintf("… (%d more lines)", len(lines)-maxExcerpt))
	}
	return strings.Join(lines, "\n")
}

// reasonOf says why a result's verdicts are what they are: the reward
// error, or its first failing case's cause with stderr's last lines.
func reasonOf(r *score.Result) string {
	if r.Err != "" {
		return "reward_error: " + r.Err
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		cause := explain.Cause(c)
		if cause == "" {
			continue
		}
		why := fmt.Sprintf("case %d: %s", c.CaseIndex, cause)
		if c.Status == verdict.StatusRuntimeError && c.Stderr != nil && strings.TrimSpace(*c.Stderr) != "" {
			why += "\nstderr (tail):\n" + explain.Tail(*c.Stderr, 3)
		}
		return why
	}
	return ""
}

// Why a response is flaky.
const (
	reasonReruns    = "verdicts changed between runs"
	reasonReference = "the reference's changed cases were timeouts or API/sandbox errors"
)

// noisyReference reports whether every case whose verdict differs from
// the baseline's was a timeout or an API/sandbox error in the baseline:
// the baseline's run, not the new one, is then the odd one out. Only
// known with a baseline (reference verdicts).
func noisyReference(it *Item) bool {
	if it.RefVerdicts == nil || len(it.RefVerdicts) != len(it.NewVerdicts) {
		return false
	}
	changed := 0
	for i, r := range it.RefVerdicts {
		if r == it.NewVerdicts[i] {
			continue
		}
		changed++
		if r != int8(verdict.APIError) && r != int8(verdict.Timeout) {
			return false
		}
	}
	return changed > 0
}

// mayNotRepeat reports whether a result has a case whose outcome may not
// repeat: an API or sandbox error (-1), a timeout (-3), or a compile that
// reached its time limit (-4 with status compile_timeout).
func mayNotRepeat(r *score.Result) bool {
	for _, c := range r.Cases {
		if c.Status == verdict.StatusCompileTimeout {
			return true
		}
	}
	return flakyVerdicts(r.Verdicts())
}

// flakyVerdicts reports whether verdicts include an outcome that may not
// repeat: an API or sandbox error (-1) or a timeout (-3).
func flakyVerdicts(v []int8) bool {
	for _, x := range v {
		if x == int8(verdict.APIError) || x == int8(verdict.Timeout) {
			return true
		}
	}
	return false
}

func sameVerdicts[A, B ~[]int8](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rescore scores the solutions of ps again and returns their results in
// the same order.
func rescore(ctx context.Context, eng *score.Engine, ps []*pending) ([]*score.Result, error) {
	in := make(chan score.Solution)
	go func() {
		defer close(in)
		for i, p := range ps {
			sol := p.sol
			sol.ID = int64(i)
			sol.Fresh = true // a rerun asks whether the verdicts repeat
			select {
			case in <- sol:
			case <-ctx.Done():
				return
			}
		}
	}()
	out := make([]*score.Result, 0, len(ps))
	aborted := false
	err := eng.RunInOrder(ctx, in, func(r *score.Result) error {
		if r.Aborted {
			aborted = true
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if aborted || ctx.Err() != nil || eng.WasStopped() || len(out) != len(ps) {
		return nil, fmt.Errorf("%w during the reruns", ErrInterrupted)
	}
	return out, nil
}
