package toolcall

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/sandboxclient"
)

// Outcome is what replaying one call found.
type Outcome string

const (
	Identical     Outcome = "identical"
	Differs       Outcome = "differs"
	NotReplayable Outcome = "not_replayable"
)

// Result is one call replayed.
type Result struct {
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Step     *int64  `json:"step,omitempty"`
	Call     int     `json:"call"`
	Outcome  Outcome `json:"outcome"`
	Recorded string  `json:"recorded,omitempty"`
	Now      string  `json:"now,omitempty"`
	// DiffLine is the first line (1-based) where Now leaves Recorded;
	// 0 when they differ only in trailing newlines.
	DiffLine int    `json:"diff_line,omitempty"`
	Why      string `json:"why,omitempty"` // not replayable: why
}

// Replay runs every call of trajs again through client, at most
// concurrency at once, and compares each new observation with the
// recorded one. The results are in the trajectories' order. done, when
// not nil, is called as each call is settled.
func Replay(
	ctx context.Context,
	client sandboxclient.Client,
	trajs []Trajectory,
	o Options,
	concurrency int,
	done func(),
) ([]Result, error) {
	var results []Result
	type job struct {
		at  int
		req *sandboxclient.Request
	}
	var jobs []job
	for _, t := range trajs {
		for _, c := range t.Calls {
			r := Result{File: t.File, Line: t.Line, Step: t.Step, Call: c.Index, Recorded: c.Recorded}
			req, why := o.Request(c)
			if req == nil {
				r.Outcome, r.Why = NotReplayable, why
				if done != nil {
					done()
				}
			} else {
				jobs = append(jobs, job{len(results), req})
			}
			results = append(results, r)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for _, j := range jobs {
		g.Go(func() error {
			resp, err := client.Run(gctx, j.req)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := &results[j.at]
			r.Now = Observe(resp, err)
			r.Outcome = Identical
			if r.Now != r.Recorded {
				r.Outcome = Differs
				if d, ok := explain.FirstDiff(r.Recorded, r.Now); ok {
					r.DiffLine = d.Line
				}
			}
			if done != nil {
				done()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return results, nil
}

// Tally counts results by outcome.
func Tally(results []Result) map[Outcome]int {
	n := map[Outcome]int{}
	for _, r := range results {
		n[r.Outcome]++
	}
	return n
}

// WriteText writes one line per call (file, line, step, call, outcome),
// with both texts' first differing line under each that differs, and the
// tally.
func WriteText(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, r := range results {
		step := "-"
		if r.Step != nil {
			step = strconv.FormatInt(*r.Step, 10)
		}
		fmt.Fprintf(
			&b,
			"%s:%d step %s call %d: %s",
			r.File,
			r.Line,
			step,
			r.Call,
			strings.ReplaceAll(string(r.Outcome), "_", " "),
		)
		switch r.Outcome {
		case NotReplayable:
			fmt.Fprintf(&b, " (%s)", r.Why)
		case Differs:
			if r.DiffLine == 0 {
				b.WriteString(" (only in trailing newlines)")
			} else {
				fmt.Fprintf(&b, " at line %d\n  recorded: %q\n  now:      %q",
					r.DiffLine, lineOf(r.Recorded, r.DiffLine), lineOf(r.Now, r.DiffLine))
			}
		}
		b.WriteByte('\n')
	}
	n := Tally(results)
	fmt.Fprintf(
		&b,
		"%d calls: %d identical, %d differ, %d not replayable\n",
		len(results),
		n[Identical],
		n[Differs],
		n[NotReplayable],
	)
	_, err := io.WriteString(w, b.String())
	return err
}

// lineOf is line n (1-based) of s, "" past its end.
func lineOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if n-1 < len(lines) {
		return lines[n-1]
	}
	return ""
}
