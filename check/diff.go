package check

import (
	"errors"
	"fmt"
	"io"

	"github.com/verl-score/verl-score/rollout"
)

// DiffOptions configure Diff.
type DiffOptions struct {
	Reader      rollout.Options // DataSourceKey and ScoreKey are used
	Tolerance   float64
	MaxMismatch float64
	KeepItems   bool // keep every response in Report.Items (for JUnit output)
}

// Diff compares two outputs of `verl-score run` (parquet or JSONL, in any
// mix), A the reference and B the new one, response by response and case
// by case. Rows are matched by position and responses by index; a row or
// response present on one side only is Missing, a mismatch. There are no
// reruns: a diff has no flaky outcome.
func Diff(a, b string, opts DiffOptions) (*Report, error) {
	if err := validate(opts.Tolerance, opts.MaxMismatch, 0); err != nil {
		return nil, err
	}
	ra, err := rollout.OpenScored(a, opts.Reader)
	if err != nil {
		return nil, err
	}
	defer ra.Close()
	rb, err := rollout.OpenScored(b, opts.Reader)
	if err != nil {
		return nil, err
	}
	defer rb.Close()

	rep := &Report{Command: "diff", Reference: a, New: b, Tolerance: opts.Tolerance, MaxMismatch: opts.MaxMismatch}
	bd := newBuilder(rep, opts.KeepItems)
	var rowsA, rowsB int
	for {
		x, errA := next(ra, a)
		y, errB := next(rb, b)
		if errA != nil {
			return nil, errA
		}
		if errB != nil {
			return nil, errB
		}
		if x == nil && y == nil {
			break
		}
		if x != nil {
			rowsA++
		}
		if y != nil {
			rowsB++
		}
		diffRow(bd, x, y, opts.Tolerance)
	}
	if rowsA != rowsB {
		bd.note("rows", "A has %d rows, B has %d: the %d rows beyond the shorter one are missing", rowsA, rowsB, abs(rowsA-rowsB))
	}
	return bd.finish(), nil
}

func next(r rollout.ScoredReader, name string) (*rollout.ScoredRow, error) {
	row, err := r.Next()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return row, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// diffRow compares row x of A with row y of B; either may be nil.
func diffRow(bd *builder, x, y *rollout.ScoredRow, tol float64) {
	var na, nb int
	anchor := x
	if x != nil {
		na = len(x.Rewards)
	}
	if y != nil {
		nb = len(y.Rewards)
		if anchor == nil {
			anchor = y
		}
	}
	if x != nil && y != nil && na != nb {
		bd.note("response count", "row %d: A has %d responses, B has %d", x.Index, na, nb)
	}
	if x != nil && y != nil && x.DataSource != y.DataSource && x.DataSource != "" && y.DataSource != "" {
		bd.note("data source", "row %d: data source %q in A, %q in B", x.Index, x.DataSource, y.DataSource)
	}
	for j := 0; j < max(na, nb); j++ {
		it := &Item{Row: anchor.Index, Response: j, File: anchor.File, Line: anchor.Line, DataSource: anchor.DataSource}
		if it.DataSource == "" && y != nil {
			it.DataSource = y.DataSource
		}
		if y != nil {
			// Point at B: it is the newer output, the one to inspect.
			it.File, it.Line = y.File, y.Line
		}
		if j < na {
			it.Reference = fptr(x.Rewards[j])
			it.RefVerdicts = verdictsAt(x, j)
		}
		if j < nb {
			it.New = fptr(y.Rewards[j])
			it.NewVerdicts = verdictsAt(y, j)
			if j < len(y.Errors) && y.Errors[j] != nil {
				it.Err = *y.Errors[j]
			}
		}
		classify(it, tol)
		if (j < na) != (j < nb) {
			it.Outcome = Missing
		}
		bd.add(it, true)
	}
}

func verdictsAt(r *rollout.ScoredRow, j int) Verdicts {
	if j < len(r.CaseResults) && r.CaseResults[j] != nil {
		return r.CaseResults[j]
	}
	return Verdicts{}
}
