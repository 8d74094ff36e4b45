// Package check compares rewards: a fresh scoring of an input against the
// rewards it already carries (a rollout dump's score field, a score column
// or a previous output of `verl-score run`), and two outputs of `run`
// against each other. It classifies every response (equal, regressed,
// improved, flaky, missing), counts verdict transitions case by case, and
// renders the result as text, JSON, Markdown or JUnit XML for CI.
package check

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/verl-score/verl-score/verdict"
)

// Outcome is how one response's new reward compares with its reference.
type Outcome string

// Outcomes. Regressed, Improved and Missing are mismatches: they count
// against the allowed fraction. Flaky and NoReference do not.
const (
	Equal       Outcome = "equal"        // within the tolerance
	Regressed   Outcome = "regressed"    // new < reference beyond the tolerance, reproducibly
	Improved    Outcome = "improved"     // new > reference beyond the tolerance, reproducibly
	Flaky       Outcome = "flaky"        // a mismatch whose verdicts changed between runs (see Check)
	Missing     Outcome = "missing"      // the response exists on one side only
	NoReference Outcome = "no_reference" // the reference is null or absent: not compared
)

// Mismatch reports whether o counts against the allowed fraction.
func (o Outcome) Mismatch() bool { return o == Regressed || o == Improved || o == Missing }

// Verdicts are case verdict codes; they encode in JSON as verl prints
// them ("True", "False", "-3").
type Verdicts []int8

// MarshalJSON writes the verdicts as strings.
func (v Verdicts) MarshalJSON() ([]byte, error) {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = label(x)
	}
	return json.Marshal(s)
}

// String renders the verdicts compactly, at most 24 of them.
func (v Verdicts) String() string {
	const max = 24
	var b strings.Builder
	for i, x := range v {
		if i == max {
			fmt.Fprintf(&b, " …(%d cases)", len(v))
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(label(x))
	}
	return b.String()
}

// noCase labels the missing side of a case present on one side only.
const noCase = "none"

func label(v int8) string { return verdict.Code(v).String() }

// CaseChange is one case whose verdict differs between the reference and
// the new result.
type CaseChange struct {
	Case int    `json:"case"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Item is the comparison of one response.
type Item struct {
	Row        int    `json:"row"`      // 0-based row index
	Response   int    `json:"response"` // 0-based response index in the row
	File       string `json:"file,omitempty"`
	Line       int    `json:"line,omitempty"`
	DataSource string `json:"data_source"`
	// Reference and New are nil on the side where the response is absent
	// (or, for Reference, null).
	Reference *float64 `json:"reference"`
	New       *float64 `json:"new"`
	Delta     float64  `json:"delta"` // New - Reference, 0 unless both are set
	// Runs are the scores of the reruns of a check (the first run is New).
	Runs        []float64    `json:"reruns,omitempty"`
	RefVerdicts Verdicts     `json:"reference_verdicts,omitempty"`
	NewVerdicts Verdicts     `json:"new_verdicts,omitempty"`
	Changes     []CaseChange `json:"case_changes,omitempty"`
	Err         string       `json:"error,omitempty"` // the new result's reward error
	// ID is the dataset's task id of the row ("" when it has none).
	ID string `json:"id,omitempty"`
	// Reason says why a mismatch's new verdicts are what they are: its
	// first failing case's cause (the first differing line, the exception,
	// the compiler's error), stderr's tail, or the reward error; Code is
	// the start of its code (diff: in B).
	Reason      string  `json:"reason,omitempty"`
	Code        string  `json:"code,omitempty"`
	Outcome     Outcome `json:"outcome"`
	bRow        int     // diff: 1 + the row's index in B, 0 when B lacks it
	FlakyReason string  `json:"flaky_reason,omitempty"`
}

// Name identifies the response in reports: by the dataset's task id and
// the response's index when the row has an id ("653#0"), else by
// row:response ("12:0").
func (it *Item) Name() string {
	if it.ID != "" {
		return fmt.Sprintf("%s#%d", it.ID, it.Response)
	}
	return fmt.Sprintf("%d:%d", it.Row, it.Response)
}

// Where is "file:line" when known.
func (it *Item) Where() string {
	if it.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", it.File, it.Line)
}

// Counts are the responses by outcome.
type Counts struct {
	Responses   int `json:"responses"`
	Compared    int `json:"compared"` // equal + regressed + improved + flaky
	Equal       int `json:"equal"`
	Regressed   int `json:"regressed"`
	Improved    int `json:"improved"`
	Flaky       int `json:"flaky"`
	Missing     int `json:"missing"`
	NoReference int `json:"no_reference"`
	Mismatches  int `json:"mismatches"` // regressed + improved + missing
}

func (c *Counts) add(o Outcome) {
	c.Responses++
	switch o {
	case Equal:
		c.Equal++
	case Regressed:
		c.Regressed++
	case Improved:
		c.Improved++
	case Flaky:
		c.Flaky++
	case Missing:
		c.Missing++
	case NoReference:
		c.NoReference++
	}
	c.Compared = c.Equal + c.Regressed + c.Improved + c.Flaky
	c.Mismatches = c.Regressed + c.Improved + c.Missing
}

// SourceStats are the counts and mean rewards of one data source.
type SourceStats struct {
	DataSource string `json:"data_source"`
	Counts
	// MeanReference and MeanNew are the means over the responses that
	// have both scores.
	MeanReference float64 `json:"mean_reference"`
	MeanNew       float64 `json:"mean_new"`
	// The same over prompts (rows): the mean of each row's mean, as verl's
	// test_score/<data_source> and run's mean_score are.
	PromptMeanReference float64 `json:"mean_over_prompts_reference"`
	PromptMeanNew       float64 `json:"mean_over_prompts_new"`
	sumRef              float64
	sumNew              float64
	both                int
	rows                map[int]*rowMeans
}

// rowMeans sums the scores of one row's responses that have both.
type rowMeans struct {
	ref, new float64
	n        int
}

// Transition counts the cases whose verdict went From one value To
// another ("none" when the case exists on one side only). Unchanged
// verdicts are counted too (True→True), so the matrix is complete.
type Transition struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// Report is the result of a check or a diff.
type Report struct {
	Command     string  `json:"command"`   // "check" or "diff"
	Reference   string  `json:"reference"` // what the new scores are compared with
	New         string  `json:"new"`       // the input re-scored, or B
	Tolerance   float64 `json:"tolerance"`
	MaxMismatch float64 `json:"max_mismatch"`
	Reruns      int     `json:"reruns"`

	Counts Counts `json:"counts"`
	// MismatchFraction is mismatches / (compared + missing).
	MismatchFraction float64 `json:"mismatch_fraction"`
	// Regression is set when the mismatches exceed the allowed fraction:
	// the exit code is then 3.
	Regression bool `json:"regression"`

	BySource    []*SourceStats `json:"by_data_source"`
	Transitions []Transition   `json:"verdict_transitions,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	// Mismatches lists every regressed, improved and missing response,
	// worst first; Flaky the flaky ones.
	Mismatches []*Item `json:"mismatches"`
	Flaky      []*Item `json:"flaky"`

	// Items holds every response in input order when the report was built
	// with all items kept (JUnit output needs them); nil otherwise.
	Items []*Item `json:"-"`
}

// Summary is a one-line verdict for logs and error messages.
func (r *Report) Summary() string {
	den := r.Counts.Compared + r.Counts.Missing
	switch {
	case r.Regression:
		return fmt.Sprintf(
			"regression: %d of %d responses moved beyond the tolerance %g (%s; allowed %s): %d regressed, %d improved, %d "+
				"missing",
			r.Counts.Mismatches,
			den,
			r.Tolerance,
			pct(r.MismatchFraction),
			pct(r.MaxMismatch),
			r.Counts.Regressed,
			r.Counts.Improved,
			r.Counts.Missing,
		)
	case r.Counts.Mismatches > 0:
		return fmt.Sprintf("consistent within the allowance: %d of %d responses moved (%s; allowed %s)",
			r.Counts.Mismatches, den, pct(r.MismatchFraction), pct(r.MaxMismatch))
	}
	s := fmt.Sprintf("consistent: %d of %d responses equal within %g", r.Counts.Equal, den, r.Tolerance)
	if r.Counts.Flaky > 0 {
		s += fmt.Sprintf(", %d flaky", r.Counts.Flaky)
	}
	return s
}

func pct(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*f), "0"), ".") + "%"
}

// builder accumulates items into a Report.
type builder struct {
	mu       sync.Mutex // add and note are called from the reader and the engine
	r        *Report
	keep     bool
	sources  map[string]*SourceStats
	trans    map[[2]string]int
	noteSeen map[string]int
}

func newBuilder(r *Report, keepItems bool) *builder {
	return &builder{
		r:        r,
		keep:     keepItems,
		sources:  map[string]*SourceStats{},
		trans:    map[[2]string]int{},
		noteSeen: map[string]int{},
	}
}

// note records a message; repeated kinds are counted rather than listed
// after the first few.
func (b *builder) note(kind, format string, args ...any) {
	const maxPerKind = 5
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteSeen[kind]++
	if n := b.noteSeen[kind]; n <= maxPerKind {
		b.r.Notes = append(b.r.Notes, fmt.Sprintf(format, args...))
	}
}

// classify sets it.Outcome and it.Delta from the scores (flakiness is
// decided by the caller).
func classify(it *Item, tol float64) {
	switch {
	case it.Reference == nil && it.New == nil:
		it.Outcome = NoReference
	case it.New == nil:
		it.Outcome = Missing
	case it.Reference == nil:
		it.Outcome = NoReference
	default:
		it.Delta = *it.New - *it.Reference
		switch {
		case math.Abs(it.Delta) <= tol:
			it.Outcome = Equal
		case it.Delta < 0:
			it.Outcome = Regressed
		default:
			it.Outcome = Improved
		}
	}
}

// caseChanges lists the cases whose verdicts differ and counts every
// case's transition into b.
func (b *builder) caseChanges(it *Item) {
	if it.RefVerdicts == nil && it.NewVerdicts == nil {
		return
	}
	n := max(len(it.RefVerdicts), len(it.NewVerdicts))
	for i := 0; i < n; i++ {
		from, to := noCase, noCase
		if i < len(it.RefVerdicts) {
			from = label(it.RefVerdicts[i])
		}
		if i < len(it.NewVerdicts) {
			to = label(it.NewVerdicts[i])
		}
		b.trans[[2]string{from, to}]++
		if from != to {
			it.Changes = append(it.Changes, CaseChange{Case: i, From: from, To: to})
		}
	}
}

// add records a classified item.
func (b *builder) add(it *Item, withTransitions bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if withTransitions {
		b.caseChanges(it)
	}
	b.r.Counts.add(it.Outcome)
	s := b.sources[it.DataSource]
	if s == nil {
		s = &SourceStats{DataSource: it.DataSource}
		b.sources[it.DataSource] = s
	}
	s.Counts.add(it.Outcome)
	if it.Reference != nil && it.New != nil {
		s.sumRef += *it.Reference
		s.sumNew += *it.New
		s.both++
		if s.rows == nil {
			s.rows = map[int]*rowMeans{}
		}
		rm := s.rows[it.Row]
		if rm == nil {
			rm = &rowMeans{}
			s.rows[it.Row] = rm
		}
		rm.ref += *it.Reference
		rm.new += *it.New
		rm.n++
	}
	switch {
	case it.Outcome.Mismatch():
		b.r.Mismatches = append(b.r.Mismatches, it)
	case it.Outcome == Flaky:
		b.r.Flaky = append(b.r.Flaky, it)
	}
	if b.keep {
		if it.Outcome == Equal || it.Outcome == NoReference {
			// Nobody reads the verdicts of an unremarkable response;
			// do not keep them for every response of a large input.
			it.RefVerdicts, it.NewVerdicts, it.Changes = nil, nil, nil
		}
		b.r.Items = append(b.r.Items, it)
	}
}

// finish sorts and totals the report.
func (b *builder) finish() *Report {
	r := b.r
	for _, kind := range slices.Sorted(maps.Keys(b.noteSeen)) {
		if n := b.noteSeen[kind]; n > 5 {
			r.Notes = append(r.Notes, fmt.Sprintf("(%d more notes like the above: %s)", n-5, kind))
		}
	}
	for _, s := range b.sources {
		if s.both > 0 {
			s.MeanReference = s.sumRef / float64(s.both)
			s.MeanNew = s.sumNew / float64(s.both)
			// In row order: a float sum taken in the map's order would
			// move in its last digit from one run to the next.
			for _, row := range slices.Sorted(maps.Keys(s.rows)) {
				rm := s.rows[row]
				s.PromptMeanReference += rm.ref / float64(rm.n)
				s.PromptMeanNew += rm.new / float64(rm.n)
			}
			s.PromptMeanReference /= float64(len(s.rows))
			s.PromptMeanNew /= float64(len(s.rows))
		}
		r.BySource = append(r.BySource, s)
	}
	sort.Slice(r.BySource, func(i, j int) bool { return r.BySource[i].DataSource < r.BySource[j].DataSource })
	for k, n := range b.trans {
		r.Transitions = append(r.Transitions, Transition{From: k[0], To: k[1], Count: n})
	}
	sort.Slice(r.Transitions, func(i, j int) bool {
		a, c := r.Transitions[i], r.Transitions[j]
		if a.From != c.From {
			return verdictOrder(a.From) < verdictOrder(c.From)
		}
		return verdictOrder(a.To) < verdictOrder(c.To)
	})
	sortWorst(r.Mismatches)
	sortWorst(r.Flaky)
	if r.Items != nil {
		sort.SliceStable(r.Items, func(i, j int) bool {
			if r.Items[i].Row != r.Items[j].Row {
				return r.Items[i].Row < r.Items[j].Row
			}
			return r.Items[i].Response < r.Items[j].Response
		})
	}
	if den := r.Counts.Compared + r.Counts.Missing; den > 0 {
		r.MismatchFraction = float64(r.Counts.Mismatches) / float64(den)
	}
	r.Regression = r.Counts.Mismatches > 0 && r.MismatchFraction > r.MaxMismatch
	if r.Mismatches == nil {
		r.Mismatches = []*Item{}
	}
	if r.Flaky == nil {
		r.Flaky = []*Item{}
	}
	return r
}

// sortWorst orders items by the size of their move, largest first; a
// missing response ranks after every score change.
func sortWorst(items []*Item) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		am, bm := a.Outcome == Missing, b.Outcome == Missing
		if am != bm {
			return bm
		}
		if da, db := math.Abs(a.Delta), math.Abs(b.Delta); da != db {
			return da > db
		}
		if a.Row != b.Row {
			return a.Row < b.Row
		}
		return a.Response < b.Response
	})
}

// verdictLabels is the order verdicts are listed in.
var verdictLabels = []string{"True", "False", "-1", "-2", "-3", "-4", noCase}

func verdictOrder(s string) int {
	for i, l := range verdictLabels {
		if l == s {
			return i
		}
	}
	return len(verdictLabels) // unknown codes last
}

// Matrix returns the transition counts as a square table over the
// verdicts that occur: labels[i] → labels[j] is counts[i][j].
func (r *Report) Matrix() (labels []string, counts [][]int) {
	seen := map[string]bool{}
	for _, t := range r.Transitions {
		seen[t.From], seen[t.To] = true, true
	}
	for l := range seen {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if oi, oj := verdictOrder(labels[i]), verdictOrder(labels[j]); oi != oj {
			return oi < oj
		}
		return labels[i] < labels[j]
	})
	idx := map[string]int{}
	for i, l := range labels {
		idx[l] = i
	}
	counts = make([][]int, len(labels))
	for i := range counts {
		counts[i] = make([]int, len(labels))
	}
	for _, t := range r.Transitions {
		counts[idx[t.From]][idx[t.To]] += t.Count
	}
	return labels, counts
}

// Changed returns the transitions between different verdicts.
func (r *Report) Changed() []Transition {
	var out []Transition
	for _, t := range r.Transitions {
		if t.From != t.To {
			out = append(out, t)
		}
	}
	return out
}

func fptr(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}
