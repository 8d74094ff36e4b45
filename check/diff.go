package check

import (
	"errors"
	"fmt"
	"io"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/verdict"
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
// by case. Rows are matched by identity (their id with Reader.IDKey, else
// their prompt and ground truth; the k-th row of an identity on one side
// with the k-th on the other), in A's order, and responses by index; a row
// or response present on one side only is Missing, a mismatch. Where a
// row has no identity, rows are matched by position, and the report says
// so. When fewer than half the rows match, the two are not outputs of one
// input and Diff refuses (ErrNotSameInput). There are no reruns: a diff
// has no flaky outcome.
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
	xs, err := readAll(ra, a)
	if err != nil {
		return nil, err
	}
	ys, err := readAll(rb, b)
	if err != nil {
		return nil, err
	}
	positional := false
	for _, r := range append(xs[:len(xs):len(xs)], ys...) {
		if r.Identity == "" {
			positional = true
			break
		}
	}
	if positional {
		for i := range max(len(xs), len(ys)) {
			var x, y *rollout.ScoredRow
			if i < len(xs) {
				x = xs[i]
			}
			if i < len(ys) {
				y = ys[i]
			}
			diffRow(bd, x, y, opts.Tolerance)
		}
		bd.note("rows", "rows matched by position: some rows have no id (--id-key), prompt or ground truth to match them by")
		if len(xs) != len(ys) {
			bd.note(
				"rows",
				"A has %d rows, B has %d: the %d rows beyond the shorter one are missing",
				len(xs),
				len(ys),
				abs(len(xs)-len(ys)),
			)
		}
		return withCode(bd.finish(), b, opts.Reader), nil
	}
	byID := map[string][]int{}
	for j, y := range ys {
		byID[y.Identity] = append(byID[y.Identity], j)
	}
	used := make([]bool, len(ys))
	matched, moved := 0, 0
	type pair struct{ x, y *rollout.ScoredRow }
	pairs := make([]pair, 0, len(xs))
	for _, x := range xs {
		q := byID[x.Identity]
		if len(q) == 0 {
			pairs = append(pairs, pair{x, nil})
			continue
		}
		byID[x.Identity] = q[1:]
		used[q[0]] = true
		matched++
		if q[0] != x.Index {
			moved++
		}
		pairs = append(pairs, pair{x, ys[q[0]]})
	}
	if n := max(len(xs), len(ys)); n > 0 && 2*matched < n {
		return nil, fmt.Errorf(
			"%w: only %d of %d rows of %s and %d of %s have a counterpart with the same prompt and ground truth (or --id-key)",
			ErrNotSameInput,
			matched,
			len(xs),
			a,
			len(ys),
			b,
		)
	}
	for _, p := range pairs {
		diffRow(bd, p.x, p.y, opts.Tolerance)
	}
	for j, y := range ys {
		if !used[j] {
			diffRow(bd, nil, y, opts.Tolerance)
		}
	}
	if moved > 0 {
		bd.note(
			"rows",
			"%d rows of B are at other positions than in A; rows are matched by their prompt and ground truth (or --id-key)",
			moved,
		)
	}
	if onlyA, onlyB := len(xs)-matched, len(ys)-matched; onlyA+onlyB > 0 {
		bd.note("rows", "%d rows of A and %d of B have no counterpart: they are missing", onlyA, onlyB)
	}
	return withCode(bd.finish(), b, opts.Reader), nil
}

// withCode gives each mismatch of r the start of its code in B (the newer
// output). A B whose responses cannot be read leaves them without.
func withCode(r *Report, b string, ro rollout.Options) *Report {
	want := map[int][]*Item{} // B's row index -> its mismatched responses
	for _, it := range r.Mismatches {
		if it.bRow > 0 {
			want[it.bRow-1] = append(want[it.bRow-1], it)
		}
	}
	if len(want) == 0 {
		return r
	}
	ro.Scored = true
	rd, err := rollout.OpenInput(b, nil, ro)
	if err != nil {
		return r
	}
	defer rd.Close()
	for len(want) > 0 {
		batch, err := rd.Next()
		if err != nil {
			return r
		}
		for i := range batch.Rows {
			row := &batch.Rows[i]
			for _, it := range want[row.Index] {
				if it.Response < len(row.Responses) {
					it.Code = excerpt(row.Responses[it.Response])
				}
			}
			delete(want, row.Index)
		}
	}
	return r
}

// ErrNotSameInput: the two outputs diff was given were not made from the
// same input.
var ErrNotSameInput = errors.New("not outputs of the same input")

// readAll reads every row of a scored output.
func readAll(r rollout.ScoredReader, name string) ([]*rollout.ScoredRow, error) {
	var out []*rollout.ScoredRow
	for {
		row, err := next(r, name)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return out, nil
		}
		out = append(out, row)
	}
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
		it := &Item{
			Row:        anchor.Index,
			Response:   j,
			File:       anchor.File,
			Line:       anchor.Line,
			DataSource: anchor.DataSource,
			ID:         anchor.TaskID,
		}
		if it.DataSource == "" && y != nil {
			it.DataSource = y.DataSource
		}
		if y != nil {
			// Point at B: it is the newer output, the one to inspect.
			it.File, it.Line, it.bRow = y.File, y.Line, y.Index+1
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
		if it.Outcome.Mismatch() && y != nil && j < nb {
			it.Reason = scoredReason(y, j)
		}
		bd.add(it, true)
	}
}

// scoredReason says why response j of a scored row has its verdicts, from
// what an output keeps: its reward error, or its first failing case's
// status.
func scoredReason(r *rollout.ScoredRow, j int) string {
	if j < len(r.Errors) && r.Errors[j] != nil {
		return "reward_error: " + *r.Errors[j]
	}
	if j < len(r.CaseStatus) {
		for i, st := range r.CaseStatus[j] {
			if st != verdict.StatusSuccess {
				return fmt.Sprintf("case %d: %s", i, st)
			}
		}
	}
	return ""
}

func verdictsAt(r *rollout.ScoredRow, j int) Verdicts {
	if j < len(r.CaseResults) && r.CaseResults[j] != nil {
		return r.CaseResults[j]
	}
	return Verdicts{}
}
