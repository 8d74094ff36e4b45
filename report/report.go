// Package report renders scored outputs, and the comparisons of check and
// diff, as one self-contained HTML page: inline SVG charts, no script, no
// network.
package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/verdict"
)

// Report is what the page of a scored output shows.
type Report struct {
	Scored string   // the scored output
	Cases  string   // the --cases-out file, "" when not given
	Groups []*Group // per data source, sorted; then "overall" when there are several

	// DetailsJSON are the responses the page details (details.go), for
	// its script; Detailed of ResponsesTotal, the rest left out.
	DetailsJSON                    template.JS
	Detailed, ResponsesTotal       int
	LeftOutFailing, LeftOutPassing int
}

// Group holds one data source's figures (or all of them).
type Group struct {
	Name      string
	Prompts   int // rows
	Responses int
	// MeanScore is the mean over rows of their responses' mean, as the
	// summary's mean_score; MeanOverResponses the plain mean.
	MeanScore         float64
	MeanOverResponses float64
	// Histogram counts rewards: bin 0 is exactly 0, bin 11 exactly 1,
	// bins 1..10 the tenths in between.
	Histogram [12]int
	Verdicts  []Count // in verdict order: True, False, -1 .. -4
	// SWEOutcomes count repository tasks' rollouts by outcome.
	SWEOutcomes []Count
	PassAtK     []PassK
	// InfraResponses have a case with an infrastructure status.
	InfraResponses int
	InfraRate      float64
	// With reward_exact: the mean over rows under verl's exact rule, and
	// the responses whose reward differs from it.
	HasExact       bool
	MeanScoreExact float64
	Flips          []Listed // Text: "exact → reward"
	FlipCount      int
	// From the cases file: the slowest cases, the most common failure
	// messages, and the responses the audit flagged.
	Slowest    []Slow
	Failures   []Count
	HasAudit   bool
	Flagged    []Listed // Text: the flags; the first maxListed
	FlagCount  int      // responses flagged
	FlagCounts []Count

	sumRowMeans, sumExactMeans, sumRewards float64
	meanRows, kept                         int
	passSum                                map[int]float64
	passN                                  map[int]int
	ks                                     []int // nil: 1 and the powers of two
	verdicts                               map[string]int
	sweOutcomes                            map[string]int
}

// Count is a named count.
type Count struct {
	Name  string
	Count int
}

// PassK is pass@k and the prompts behind it (those with at least k
// responses).
type PassK struct {
	K       int
	Value   float64
	Prompts int
}

// Listed is a response named in a list of the page, with what it is
// listed for.
type Listed struct {
	Row, Response int
	Text          string
}

// Slow is one case and its run time.
type Slow struct {
	Where         string // "row 3 response 0 case 2"
	Row, Response int
	Seconds       float64
	Status        string
}

// maxListed bounds the lists of the page.
const maxListed = 15

var verdictNames = []string{"True", "False", "-1", "-2", "-3", "-4"}

// infraStatuses are the case statuses of infrastructure failures.
var infraStatuses = map[string]bool{
	"api_error": true, "sandbox_error": true, "checker_error": true, "reference_error": true, "unknown_failure": true,
	"unknown_failure_state": true, "unexpected_success_state": true, "unknown_api_state": true,
	"swe_environment_error": true, "swe_sandbox_error": true,
}

func isInfra(status string) bool {
	return infraStatuses[status] || strings.HasPrefix(status, "unknown_api_status_")
}

func newGroup(name string, ks []int) *Group {
	return &Group{Name: name, ks: ks, passSum: map[int]float64{}, passN: map[int]int{}, verdicts: map[string]int{},
		sweOutcomes: map[string]int{}}
}

// Build reads a scored output (and, when casesPath is not "", its
// --cases-out file) into a Report. opts are the reader options the run
// used (the data source key).
//
// ks are the k of pass@k (none: 1 and the powers of two), as run's --pass-k.
func Build(scoredPath, casesPath string, opts rollout.Options, ks ...int) (*Report, error) {
	rd, err := rollout.OpenScored(scoredPath, opts)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	r := &Report{Scored: scoredPath, Cases: casesPath}
	groups := map[string]*Group{}
	overall := newGroup("overall", ks)
	prompts := map[string]*rollout.ScoredRow{}
	var promptOrder []string
	var promptGroup []*Group
	for {
		row, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := row.DataSource
		if name == "" {
			name = "(none)"
		}
		g, ok := groups[name]
		if !ok {
			g = newGroup(name, ks)
			groups[name] = g
		}
		if row.Prompt != "" {
			// A dump's lines of one prompt are folded into one row at the
			// end, so that prompts, their means and pass@k are run's.
			key := name + "\x00" + row.Prompt
			if p, ok := prompts[key]; ok {
				foldInto(p, row)
			} else {
				prompts[key] = row
				promptOrder = append(promptOrder, key)
				promptGroup = append(promptGroup, g)
			}
			continue
		}
		g.addRow(row)
		overall.addRow(row)
	}
	for i, key := range promptOrder {
		promptGroup[i].addRow(prompts[key])
		overall.addRow(prompts[key])
	}
	if casesPath != "" {
		if err := readCases(casesPath, groups, overall); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.Groups = append(r.Groups, groups[n])
	}
	if len(names) != 1 {
		r.Groups = append(r.Groups, overall)
	}
	for _, g := range append(r.Groups, overall) {
		g.finish()
	}
	if err := r.details(opts); err != nil {
		return nil, err
	}
	return r, nil
}

func (g *Group) addRow(row *rollout.ScoredRow) {
	g.Prompts++
	var sum, sumExact float64
	correct := 0
	for j, reward := range row.Rewards {
		g.Responses++
		if math.IsNaN(reward) {
			reward = 0
		}
		sum += reward
		g.sumRewards += reward
		g.Histogram[bin(reward)]++
		var verdicts []int8
		if j < len(row.CaseResults) {
			verdicts = row.CaseResults[j]
		}
		all := len(verdicts) > 0
		for _, v := range verdicts {
			g.verdicts[verdictName(v)]++
			all = all && v == 1
		}
		if all {
			correct++
		}
		if j < len(row.CaseStatus) {
			if kind, ok := swe.OutcomeOf(row.CaseStatus[j], verdicts); ok {
				g.sweOutcomes[kind]++
			}
			for _, s := range row.CaseStatus[j] {
				if isInfra(s) {
					g.InfraResponses++
					break
				}
			}
		}
		exact := reward
		if j < len(row.RewardsExact) {
			g.HasExact = true
			exact = row.RewardsExact[j]
			if exact != reward {
				g.FlipCount++
				if len(g.Flips) < maxListed {
					g.Flips = append(g.Flips, Listed{Row: row.Index, Response: j, Text: fmt.Sprintf("%g → %g", exact, reward)})
				}
			}
		}
		sumExact += exact
	}
	n := len(row.Rewards)
	g.kept += n
	if n == 0 {
		return
	}
	g.sumRowMeans += sum / float64(n)
	g.sumExactMeans += sumExact / float64(n)
	g.meanRows++
	for _, k := range results.KsUpTo(g.ks, n) {
		g.passSum[k] += results.PassAtK(n, correct, k)
		g.passN[k]++
	}
}

// foldInto appends the responses of row (a dump line) to p, the first
// line of the same prompt.
func foldInto(p, row *rollout.ScoredRow) {
	p.ResponseIsList = true
	p.Rewards = append(p.Rewards, row.Rewards...)
	p.CaseResults = append(p.CaseResults, row.CaseResults...)
	p.CaseStatus = append(p.CaseStatus, row.CaseStatus...)
	p.Errors = append(p.Errors, row.Errors...)
	p.RewardsExact = append(p.RewardsExact, row.RewardsExact...)
	p.RefScores = append(p.RefScores, row.RefScores...)
}

// bin is a reward's histogram bin.
func bin(r float64) int {
	switch {
	case r <= 0:
		return 0
	case r >= 1:
		return 11
	}
	return 1 + min(int(r*10), 9)
}

func verdictName(v int8) string { return verdict.Code(v).String() }

func (g *Group) finish() {
	if g.meanRows > 0 {
		g.MeanScore = g.sumRowMeans / float64(g.meanRows)
		g.MeanScoreExact = g.sumExactMeans / float64(g.meanRows)
	}
	if g.kept > 0 {
		g.MeanOverResponses = g.sumRewards / float64(g.kept)
	}
	if g.Responses > 0 {
		g.InfraRate = float64(g.InfraResponses) / float64(g.Responses)
	}
	g.SWEOutcomes = g.SWEOutcomes[:0]
	for _, k := range []string{swe.Resolved, swe.TestsFailed, swe.PatchMissing, swe.PatchApplyFailed, swe.Timeout,
		swe.EnvironmentError, swe.SandboxError} {
		if n := g.sweOutcomes[k]; n > 0 {
			g.SWEOutcomes = append(g.SWEOutcomes, Count{k, n})
		}
	}
	g.Verdicts = g.Verdicts[:0]
	for _, v := range verdictNames {
		g.Verdicts = append(g.Verdicts, Count{v, g.verdicts[v]})
	}
	var ks []int
	for k := range g.passN {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	g.PassAtK = g.PassAtK[:0]
	for _, k := range ks {
		g.PassAtK = append(g.PassAtK, PassK{K: k, Value: g.passSum[k] / float64(g.passN[k]), Prompts: g.passN[k]})
	}
}

// readCases adds the slowest cases, the failure messages and the audit's
// flags of the cases file to the groups.
func readCases(path string, groups map[string]*Group, overall *Group) error {
	type acc struct {
		slow     []Slow
		failures map[string]int
		flags    map[string]map[string]bool // "row/response" -> flags
		audited  bool
	}
	accs := map[*Group]*acc{}
	get := func(g *Group) *acc {
		a, ok := accs[g]
		if !ok {
			a = &acc{failures: map[string]int{}, flags: map[string]map[string]bool{}}
			accs[g] = a
		}
		return a
	}
	handle := func(c *results.Case) error {
		name := c.DataSource
		if name == "" {
			name = "(none)"
		}
		g := groups[name]
		if g == nil {
			return fmt.Errorf("data source %q is not in the scored output: not its cases file?", c.DataSource)
		}
		for _, gg := range []*Group{g, overall} {
			a := get(gg)
			if c.Duration != nil {
				a.slow = append(
					a.slow,
					Slow{
						Where:    fmt.Sprintf("row %d response %d case %d", c.Row, c.ResponseIndex, c.CaseIndex),
						Row:      c.Row,
						Response: c.ResponseIndex,
						Seconds:  *c.Duration,
						Status:   c.Status,
					},
				)
			}
			if msg := explain.Cause(&c.Case); msg != "" {
				a.failures[msg]++
			}
			if c.Audit != nil {
				a.audited = true
				key := fmt.Sprintf("%d/%d", c.Row, c.ResponseIndex)
				if len(c.Audit) > 0 && a.flags[key] == nil {
					a.flags[key] = map[string]bool{}
				}
				for _, fl := range c.Audit {
					a.flags[key][fl] = true
				}
			}
		}
		return nil
	}
	if _, err := results.ReadCases(path, handle); err != nil {
		return err
	}
	audited := false
	for _, a := range accs {
		audited = audited || a.audited
	}
	for _, g := range groups {
		g.HasAudit = audited
	}
	overall.HasAudit = audited
	for g, a := range accs {
		sort.SliceStable(a.slow, func(i, j int) bool { return a.slow[i].Seconds > a.slow[j].Seconds })
		g.Slowest = a.slow[:min(len(a.slow), 10)]
		g.Failures = topCounts(a.failures, 10)
		kinds := map[string]int{}
		var keys []string
		for k := range a.flags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var fl []string
			for f := range a.flags[k] {
				fl = append(fl, f)
				kinds[strings.SplitN(f, " ", 2)[0]]++
			}
			sort.Strings(fl)
			g.FlagCount++
			if len(g.Flagged) < maxListed {
				it := Listed{Text: strings.Join(fl, ", ")}
				fmt.Sscanf(k, "%d/%d", &it.Row, &it.Response)
				g.Flagged = append(g.Flagged, it)
			}
		}
		g.FlagCounts = topCounts(kinds, 10)
	}
	return nil
}

func topCounts(m map[string]int, n int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(len(out), n)]
}
