// Package feed is the loop that run and check share: it reads an input's
// rows, turns each into the engine's solutions (Solutions, the one rule),
// feeds them to the engine, and hands every result back with the row it
// came from. What a row and a result mean to the command is its hooks'.
package feed

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
)

// Hooks are a command's part of the loop, typed by the tag T it keeps per
// fed row. Batch, Row, Fed and End run on the feeding goroutine, in input
// order; Result on the engine's emitting goroutine. Only Row and Result
// are required.
type Hooks[T any] struct {
	// Batch is called with each batch before its rows.
	Batch func(b *rollout.Batch) error
	// Row is called for row i of b with the solutions it gives (IDs
	// assigned; none for an empty response list). It returns the tag its
	// results come back with, and whether to score them: false skips the
	// row (finished already). It may block (a bound on work not yet
	// written), returning when ctx ends.
	Row func(ctx context.Context, b *rollout.Batch, i int, sols []score.Solution) (tag T, send bool, err error)
	// Fed is called once every row of b has been fed.
	Fed func(b *rollout.Batch) error
	// End is called after the last row, when the input was read to its end.
	End func() error
	// Result is called with each finished result, its row's tag and its
	// index among the row's responses. A result the engine aborted (the
	// run was cut off or stopped with its cases unsent) is not passed on:
	// its row stays unfinished.
	Result func(r *score.Result, tag T, j int) error
}

// Options configure Run.
type Options struct {
	// DataSource is the data source of rows that have none.
	DataSource string
	// InOrder emits results in input order (Engine.RunInOrder) rather than
	// as they finish (Engine.Run).
	InOrder bool
}

// Outcome is how a loop ended.
type Outcome struct {
	// Interrupted is set when the loop ended before the input did: ctx
	// was cancelled, the engine was stopped, or a result was aborted.
	Interrupted bool
	// Infra counts the responses sent and their infrastructure failures.
	Infra Tally
}

// Tally counts the responses that reached the sandbox (had cases) and
// those among them with an infrastructure failure.
type Tally struct {
	Sent, Failed int
	First        string // the first failure's status and message
}

// Add counts one result.
func (t *Tally) Add(r *score.Result) {
	if len(r.Cases) == 0 {
		return
	}
	t.Sent++
	for i := range r.Cases {
		c := &r.Cases[i]
		if !c.Infra {
			continue
		}
		t.Failed++
		if t.First == "" {
			t.First = c.Status
			if c.APIRequestError != nil {
				t.First += ": " + *c.APIRequestError
			}
		}
		return
	}
}

// Unusable is score.Unusable of the tally.
func (t Tally) Unusable() error { return score.Unusable(t.Sent, t.Failed, t.First) }

// ref is where a solution's result goes.
type ref[T any] struct {
	tag T
	j   int
}

// Run feeds every row of rd to eng and returns when the input is done or
// the loop was interrupted. The error is a hook's, or the reader's when
// the loop was not interrupted (an interrupted loop's read error is the
// interruption's). rd is read under a context that ends with ctx or at
// eng.Stop.
func Run[T any](ctx context.Context, eng *score.Engine, rd rollout.Reader, opts Options, h Hooks[T]) (Outcome, error) {
	var (
		mu      sync.Mutex
		refs    = map[int64]ref[T]{}
		out     Outcome
		aborted bool
	)
	in := make(chan score.Solution, 64)
	readErr := make(chan error, 1)
	// The reader stops with ctx, when the engine is stopped, or when a
	// hook gave up: nothing more would be kept.
	feedCtx, stopFeed := eng.UntilStopped(ctx)
	defer stopFeed()
	go func() {
		defer close(in)
		readErr <- feedRows(feedCtx, rd, in, opts.DataSource, h, func(id int64, r ref[T]) {
			mu.Lock()
			refs[id] = r
			mu.Unlock()
		})
	}()
	emit := func(r *score.Result) error {
		mu.Lock()
		rf, ok := refs[r.ID]
		delete(refs, r.ID)
		if r.Aborted {
			aborted = true
		} else {
			out.Infra.Add(r)
		}
		mu.Unlock()
		if !ok {
			return fmt.Errorf("internal error: result for unknown solution %d", r.ID)
		}
		if r.Aborted {
			return nil
		}
		return h.Result(r, rf.tag, rf.j)
	}
	run := eng.Run
	if opts.InOrder {
		run = eng.RunInOrder
	}
	runErr := run(ctx, in, emit)
	if runErr != nil {
		stopFeed()
	}
	rerr := <-readErr
	out.Interrupted = ctx.Err() != nil || eng.WasStopped() || aborted
	switch {
	case runErr != nil:
		return out, runErr
	case rerr != nil && !out.Interrupted:
		return out, rerr
	}
	return out, nil
}

// feedRows reads rd to its end and sends every row's solutions to in,
// recording where each one's result goes with keep.
func feedRows[T any](
	ctx context.Context,
	rd rollout.Reader,
	in chan<- score.Solution,
	source string,
	h Hooks[T],
	keep func(int64, ref[T]),
) error {
	var id int64
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if h.Batch != nil {
			if err := h.Batch(b); err != nil {
				return err
			}
		}
		for i := range b.Rows {
			sols := Solutions(&b.Rows[i], source, id)
			tag, send, err := h.Row(ctx, b, i, sols)
			if err != nil {
				return err
			}
			if !send {
				continue
			}
			id += int64(len(sols))
			for j, sol := range sols {
				keep(sol.ID, ref[T]{tag: tag, j: j})
				select {
				case in <- sol:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if h.Fed != nil {
			if err := h.Fed(b); err != nil {
				return err
			}
		}
	}
	if h.End != nil {
		return h.End()
	}
	return nil
}
