package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
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
	c := &checker{opts: opts, b: b, base: base, pend: map[int64]*pending{}}

	in := make(chan score.Solution, 64)
	feedErr := make(chan error, 1)
	feedCtx, stopFeed := eng.UntilStopped(ctx)
	defer stopFeed()
	go func() {
		defer close(in)
		feedErr <- c.feed(feedCtx, rd, in)
	}()
	var rerun []*pending
	runErr := eng.Run(ctx, in, func(r *score.Result) error {
		p := c.take(r.ID)
		if p == nil {
			return fmt.Errorf("internal error: result for unknown response %d", r.ID)
		}
		if r.Aborted {
			c.aborted = true
			return nil
		}
		c.tallyInfra(r)
		it := p.item
		it.New = fptr(r.Score)
		it.NewVerdicts = r.Verdicts()
		it.Err = r.Err
		classify(it, opts.Tolerance)
		if p.noBase {
			it.Outcome = Missing
		}
		mismatch := it.Outcome == Regressed || it.Outcome == Improved
		switch {
		case mismatch && noisyReference(it):
			it.Outcome, it.FlakyReason = Flaky, reasonReference
		case mismatch && mayNotRepeat(r) && opts.Reruns > 0:
			rerun = append(rerun, p)
			return nil
		}
		b.add(it, withTransitions)
		return nil
	})
	ferr := <-feedErr
	if runErr != nil {
		return nil, runErr
	}
	if c.aborted || ctx.Err() != nil || eng.WasStopped() {
		return nil, fmt.Errorf("%w: %d responses scored", ErrInterrupted, rep.Counts.Responses+len(rerun))
	}
	if ferr != nil {
		return nil, ferr
	}
	if c.withCases > 0 && c.allInfra == c.withCases {
		return nil, fmt.Errorf("%w: every case failed with an infrastructure error (%d responses; first error: %s)", score.ErrSandboxUnusable, c.withCases, c.firstInfra)
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

// checker holds the state shared by the feeding goroutine and the
// engine's emit callback.
type checker struct {
	opts Options
	b    *builder
	base rollout.ScoredReader

	mu      sync.Mutex
	pend    map[int64]*pending
	aborted bool

	// Infrastructure health, to tell a broken sandbox from moved rewards.
	withCases, allInfra int
	firstInfra          string
}

func (c *checker) take(id int64) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pend[id]
	delete(c.pend, id)
	return p
}

func (c *checker) tallyInfra(r *score.Result) {
	if len(r.Cases) == 0 {
		return
	}
	c.withCases++
	for i := range r.Cases {
		if !r.Cases[i].Infra {
			return
		}
	}
	c.allInfra++
	if c.firstInfra == "" {
		cs := &r.Cases[0]
		c.firstInfra = cs.Status
		if cs.APIRequestError != nil {
			c.firstInfra += ": " + *cs.APIRequestError
		}
	}
}

// feed reads the input (and the baseline alongside) and sends every
// response to the engine.
func (c *checker) feed(ctx context.Context, rd rollout.Reader, in chan<- score.Solution) error {
	var id int64
	baseDone := c.base == nil
	rows := 0
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		batch, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for i := range batch.Rows {
			row := &batch.Rows[i]
			rows++
			ds := row.SourceOr(c.opts.DataSource)
			sols := score.RowSolutions(row, c.opts.DataSource, id)
			id += int64(len(sols))
			ref, err := c.reference(row, len(sols), &baseDone)
			if err != nil {
				return err
			}
			for j, sol := range sols {
				it := &Item{Row: row.Index, Response: j, File: row.File, Line: row.Line, DataSource: ds}
				if j < len(ref.scores) {
					it.Reference = fptr(ref.scores[j])
				}
				if j < len(ref.verdicts) {
					it.RefVerdicts = ref.verdicts[j]
					if it.RefVerdicts == nil {
						it.RefVerdicts = Verdicts{}
					}
				}
				c.mu.Lock()
				c.pend[sol.ID] = &pending{item: it, sol: sol, noBase: ref.noBase || (ref.row != nil && j >= len(ref.scores))}
				c.mu.Unlock()
				select {
				case in <- sol:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			// Baseline responses beyond the input's are missing from it.
			for j := len(sols); j < len(ref.scores); j++ {
				c.missingFromInput(ref.row, j)
			}
		}
	}
	// Baseline rows beyond the input's.
	if !baseDone {
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
			c.b.note("rows", "the baseline has %d rows, the input %d: the baseline's last %d rows are missing from the input", rows+extra, rows, extra)
		}
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
func (c *checker) reference(row *rollout.Row, n int, baseDone *bool) (ref, error) {
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
	if *baseDone {
		c.b.note("baseline rows", "row %d (%s:%d) is missing from the baseline", row.Index, row.File, row.Line)
		return ref{noBase: true}, nil
	}
	br, err := c.base.Next()
	if err == io.EOF {
		*baseDone = true
		c.b.note("baseline rows", "the baseline ends before row %d of the input: the input's rows from there on are missing from it", row.Index)
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
	err := eng.Run(ctx, in, func(r *score.Result) error {
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
