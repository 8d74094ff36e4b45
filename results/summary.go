package results

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/text"
	"github.com/verl-score/verl-score/verdict"
)

// Summary is what a run reports, per data source and overall.
type Summary struct {
	Input       string `json:"input"`
	Output      string `json:"output"`
	InfraErrors string `json:"infra_errors"` // score or mask
	Interrupted bool   `json:"interrupted"`
	Shard       string `json:"shard,omitempty"` // K/N of a --shard run
	// Compare is the compare mode when not verl's exact one, and Checker
	// the ground-truth field of checkers when there is one.
	Compare string `json:"compare,omitempty"`
	// SWERules are the SWE-bench rules repository tasks were graded by.
	SWERules    string            `json:"swe_rules,omitempty"`
	Checker     string            `json:"checker_key,omitempty"`
	WallSeconds float64           `json:"wall_seconds"`
	CasesPerSec float64           `json:"cases_per_second"`
	Overall     *Group            `json:"overall"`
	BySource    map[string]*Group `json:"by_data_source"`
	Resumed     int               `json:"rows_resumed"`
	// Rows whose line held invalid UTF-8, and the bytes replaced by U+FFFD.
	InvalidUTF8Rows  int `json:"rows_with_invalid_utf8"`
	InvalidUTF8Bytes int `json:"invalid_utf8_bytes_replaced"`
	// FirstInfraError is the first infrastructure error seen, for the
	// message that says the sandbox is unusable.
	FirstInfraError string `json:"first_infra_error,omitempty"`
	// FirstInputError is the first response that could not be run for an
	// input reason (a bad row or ground truth), with its row.
	FirstInputError string `json:"first_input_error,omitempty"`
	// PassK are the k of pass@k asked for (--pass-k); empty: 1 and the
	// powers of two.
	PassK []int `json:"pass_k,omitempty"`
	// Provenance says how the output was made (run sets it).
	Provenance *Provenance `json:"provenance,omitempty"`
	// UnreadableRows are input rows that could not be read at all (a line
	// that is not JSON): each has its output row with reward 0 and the
	// reason, and none counts in the prompts, responses or means.
	UnreadableRows  int    `json:"unreadable_rows"`
	FirstUnreadable string `json:"first_unreadable_row,omitempty"`
	// Endpoints are the figures of each sandbox endpoint of a fleet.
	Endpoints []sandboxclient.EndpointStats `json:"endpoints,omitempty"`
	// CrashedAtStart lists the languages all of whose responses were
	// killed by one signal before writing anything: the sandbox, not the
	// code, is then the likely cause.
	CrashedAtStart []CrashNote `json:"crashed_at_start,omitempty"`
	languages      map[string]*langCrashes
	// ResumedCases are the cases of the rows taken from the journal: they
	// were not run by this process and do not count in CasesPerSec.
	ResumedCases int `json:"-"`
	order        []string
	// Dump rows that share a prompt, gathered until finish, in the order
	// their prompts first came.
	prompts     map[string]*Row
	promptOrder []string
	promptGroup []*Group
}

// Group aggregates the responses of one data source (or all).
type Group struct {
	Prompts   int `json:"prompts"`
	Responses int `json:"responses"`
	// MeanScore is verl's test_score/<data_source>: the mean over prompts
	// of the mean score of the prompt's responses.
	MeanScore float64 `json:"mean_score"`
	// MeanOverResponses is the plain mean of the responses' scores (what
	// differs from MeanScore when prompts have different numbers of
	// responses).
	MeanOverResponses float64 `json:"mean_over_responses"`
	// PassAtK is the unbiased pass@k ("all cases True") for k = 1 and the
	// powers of two up to the responses per prompt.
	PassAtK map[string]float64 `json:"pass_at_k"`
	// PassAtKPrompts is how many prompts each pass@k covers: those with at
	// least k responses.
	PassAtKPrompts map[string]int `json:"pass_at_k_prompts"`
	Verdicts       map[string]int `json:"verdicts"`
	// SWEOutcomes counts the outcomes of repository tasks' rollouts
	// (resolved, tests_failed, patch_missing, patch_apply_failed, timeout,
	// environment_error, sandbox_error).
	SWEOutcomes    map[string]int `json:"swe_outcomes,omitempty"`
	Cases          int            `json:"cases"`
	Requests       int            `json:"requests"`
	SavedByCompile int            `json:"requests_saved_by_compile_skip"`
	SavedByDedup   int            `json:"requests_saved_by_dedup"`
	SavedByCache   int            `json:"requests_saved_by_cache"`
	Retries        int            `json:"retries"`
	// StarvedReruns counts the requests run again because a step waited
	// for a CPU past the time given back for it (embedded sandbox).
	StarvedReruns  int     `json:"starved_reruns"`
	InfraResponses int     `json:"responses_with_infra_error"`
	InfraErrorRate float64 `json:"infra_error_rate"`
	Masked         int     `json:"responses_masked"`
	ResponseErrors int     `json:"responses_with_error"`
	// InputErrors are the responses of ResponseErrors that could not be
	// run for an input reason: a bad row or ground truth.
	InputErrors int `json:"responses_with_input_error"`
	// With a compare mode or a checker: the mean score under verl's exact
	// comparison, and the responses whose reward differs from that one.
	MeanScoreExact  *float64 `json:"mean_score_exact,omitempty"`
	DifferFromExact *int     `json:"rewards_differ_from_exact,omitempty"`
	// Differing lists the responses whose reward differs from the exact
	// one (up to maxListed), as "row/response".
	Differing []string `json:"rewards_differing,omitempty"`
	// With --audit: the responses probed, the probe requests (apart from
	// Requests), those without a usable answer, the passing cases that
	// could not be probed, and the flagged responses, listed (up to
	// maxListed) as "row/response: flags".
	Audited       *int           `json:"audited_responses,omitempty"`
	AuditProbes   int            `json:"audit_probes,omitempty"`
	AuditErrors   int            `json:"audit_probe_errors,omitempty"`
	AuditUnprobed int            `json:"audit_unprobed_cases,omitempty"`
	AuditFlagged  *int           `json:"audit_flagged,omitempty"`
	AuditFlags    map[string]int `json:"audit_flags,omitempty"`
	FlaggedList   []string       `json:"audit_flagged_responses,omitempty"`
	// ExecutionAccuracy is, under --compare rows (result sets, as
	// text-to-SQL compares them), the share of the responses whose every
	// case's result set matched: the execution accuracy of text-to-SQL.
	ExecutionAccuracy *float64 `json:"execution_accuracy,omitempty"`

	correctResponses int
	sumPromptMeans   float64
	sumExactMeans    float64
	hasExact         bool
	meanPrompts      int
	sumScores        float64
	keptResponses    int
	passSum          map[int]float64
	passN            map[int]int
	ks               []int // the k of pass@k; nil: 1 and the powers of two
}

func newGroup(ks []int) *Group {
	return &Group{
		ks:             ks,
		Verdicts:       map[string]int{},
		PassAtK:        map[string]float64{},
		PassAtKPrompts: map[string]int{},
		passSum:        map[int]float64{},
		passN:          map[int]int{},
	}
}

func NewSummary(input, output string, mask bool, ks []int) *Summary {
	s := &Summary{
		Input:       input,
		Output:      output,
		InfraErrors: "score",
		Overall:     newGroup(ks),
		BySource:    map[string]*Group{},
		PassK:       ks,
	}
	if mask {
		s.InfraErrors = "mask"
	}
	return s
}

// CrashNote is a language whose every response crashed at start alike.
type CrashNote struct {
	Language  string `json:"language"`
	Responses int    `json:"responses"`
	Signal    string `json:"signal"`
	// Cause is the known reason, where there is one.
	Cause string `json:"cause,omitempty"`
}

type langCrashes struct {
	responses int
	bySignal  map[string]int
}

// noteLanguages counts the responses of each language and their crashes
// at start.
func (s *Summary) noteLanguages(rec *Row) {
	for _, r := range rec.Responses {
		if r.Language == "" || r.Err != nil {
			continue
		}
		if s.languages == nil {
			s.languages = map[string]*langCrashes{}
		}
		lc := s.languages[r.Language]
		if lc == nil {
			lc = &langCrashes{bySignal: map[string]int{}}
			s.languages[r.Language] = lc
		}
		lc.responses++
		if r.Crash != "" {
			lc.bySignal[r.Crash]++
		}
	}
}

// Languages are the languages the run's responses used, sorted.
func (s *Summary) Languages() []string {
	return slices.Sorted(maps.Keys(s.languages))
}

// crashNotes lists the languages whose every response crashed at start
// with one signal.
func (s *Summary) crashNotes() []CrashNote {
	var out []CrashNote
	for name, lc := range s.languages {
		for sig, n := range lc.bySignal {
			if n != lc.responses {
				continue
			}
			note := CrashNote{Language: name, Responses: n, Signal: sig}
			if l := lang.Get(name); l != nil {
				note.Cause = l.StartCrash[sig]
			}
			out = append(out, note)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Language < out[j].Language })
	return out
}

// CrashAtStart returns the signal that killed every case of a response
// before it wrote anything, or "".
func CrashAtStart(cases []verdict.Case) string {
	sig := ""
	for i, c := range cases {
		if c.Verdict != verdict.RuntimeError || c.ExitCode == nil || *c.ExitCode >= 0 ||
			(c.Stdout != nil && *c.Stdout != "") ||
			(c.Stderr != nil && *c.Stderr != "") {
			return ""
		}
		name := signalName(-*c.ExitCode)
		if i > 0 && name != sig {
			return ""
		}
		sig = name
	}
	return sig
}

var signalNames = map[int]string{4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV",
	13: "SIGPIPE", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"}

// signalName is a Linux signal's name (the numbers a sandbox reports as
// negative return codes).
func signalName(n int) string {
	if name, ok := signalNames[n]; ok {
		return name
	}
	return "signal " + strconv.Itoa(n)
}

// Warnings are what the summary found that a person should hear about.
func (s *Summary) Warnings() []string {
	var out []string
	if s.UnreadableRows > 0 {
		out = append(
			out,
			fmt.Sprintf(
				"%s could not be read (first: %s): each has its output row with reward 0 and the reason in reward_error, "+
					"and none counts in the prompts or the means",
				text.Count(s.UnreadableRows, "input row"),
				s.FirstUnreadable,
			),
		)
	}
	for _, c := range s.CrashedAtStart {
		w := fmt.Sprintf(
			"every %s response (%d) crashed at start with %s and no output: the sandbox, not the code, is the likely cause",
			c.Language,
			c.Responses,
			c.Signal,
		)
		if c.Cause != "" {
			w += ": " + c.Cause
		}
		out = append(out, w)
	}
	return out
}

// add folds one finished row into the summary.
func (s *Summary) Add(rec *Row, mask bool) {
	if rec.Unreadable != "" {
		s.UnreadableRows++
		if s.FirstUnreadable == "" {
			s.FirstUnreadable = rec.Unreadable
		}
		return
	}
	s.noteFirstErrors(rec)
	s.noteLanguages(rec)
	src := rec.DataSource
	if src == "" {
		src = "(none)"
	}
	g, ok := s.BySource[src]
	if !ok {
		g = newGroup(s.PassK)
		s.BySource[src] = g
		s.order = append(s.order, src)
	}
	if rec.Prompt != "" {
		// Rows of one prompt are folded together at the end, so that
		// per-prompt means and pass@k see all its responses.
		key := src + "\x00" + rec.Prompt
		pr, ok := s.prompts[key]
		if !ok {
			pr = &Row{DataSource: rec.DataSource}
			if s.prompts == nil {
				s.prompts = map[string]*Row{}
			}
			s.prompts[key] = pr
			s.promptOrder = append(s.promptOrder, key)
			s.promptGroup = append(s.promptGroup, g)
		}
		pr.Responses = append(pr.Responses, rec.Responses...)
		return
	}
	for _, grp := range []*Group{g, s.Overall} {
		grp.addRow(rec, mask)
	}
}

// noteFirstErrors keeps the first input error and the first
// infrastructure error, in input order.
func (s *Summary) noteFirstErrors(rec *Row) {
	for j := range rec.Responses {
		r := &rec.Responses[j]
		if r.InputErr && r.Err != nil && s.FirstInputError == "" {
			s.FirstInputError = fmt.Sprintf("row %d response %d: %s", rec.Index, j, *r.Err)
		}
		if r.FirstInfra != "" && s.FirstInfraError == "" {
			s.FirstInfraError = r.FirstInfra
		}
		if r.SWE != nil && s.SWERules == "" {
			s.SWERules = r.SWE.Rules
		}
	}
}

// foldPrompts adds the prompts whose rows were gathered (dumps).
func (s *Summary) foldPrompts() {
	for i, key := range s.promptOrder {
		for _, grp := range []*Group{s.promptGroup[i], s.Overall} {
			grp.addRow(s.prompts[key], s.InfraErrors == "mask")
		}
	}
	s.prompts, s.promptOrder, s.promptGroup = nil, nil, nil
}

func (g *Group) addRow(rec *Row, mask bool) {
	g.Prompts++
	var sum, sumExact float64
	n, correct, kept := 0, 0, 0
	for j, r := range rec.Responses {
		g.Responses++
		n++
		g.Requests += r.Requests
		g.SavedByCompile += r.Saved
		g.SavedByDedup += r.Deduped
		g.SavedByCache += r.Cached
		g.Retries += r.Retries
		g.StarvedReruns += r.StarvedReruns
		g.Cases += len(r.Verdicts)
		if r.SWE != nil {
			if g.SWEOutcomes == nil {
				g.SWEOutcomes = map[string]int{}
			}
			g.SWEOutcomes[r.SWE.Outcome]++
		}
		if r.Err != nil {
			g.ResponseErrors++
			if r.InputErr {
				g.InputErrors++
			}
		}
		if r.Audit != nil {
			g.noteAudit(rec, j, r.Audit)
		}
		for _, v := range r.Verdicts {
			g.Verdicts[verdictName(v)]++
		}
		if r.Infra {
			g.InfraResponses++
			if mask {
				g.Masked++
				continue
			}
		}
		kept++
		sum += r.Reward
		sumExact += r.Exact()
		if r.RewardExact != nil {
			g.noteExact(rec, j, r)
		}
		if allTrue(r.Verdicts) {
			correct++
		}
	}
	g.sumScores += sum
	g.keptResponses += kept
	g.correctResponses += correct
	if kept > 0 {
		g.sumPromptMeans += sum / float64(kept)
		g.sumExactMeans += sumExact / float64(kept)
		g.meanPrompts++
		for _, k := range KsUpTo(g.ks, kept) {
			g.passSum[k] += PassAtK(kept, correct, k)
			g.passN[k]++
		}
	}
}

// maxListed bounds the responses a summary lists by name.
const maxListed = 50

// noteExact counts a response whose exact reward was kept.
func (g *Group) noteExact(rec *Row, j int, r Response) {
	g.hasExact = true
	if g.DifferFromExact == nil {
		g.DifferFromExact = new(int)
	}
	if *r.RewardExact != r.Reward {
		*g.DifferFromExact++
		if len(g.Differing) < maxListed {
			g.Differing = append(g.Differing, fmt.Sprintf("%d/%d", rec.Index, j))
		}
	}
}

// noteAudit counts a response the audit probed.
func (g *Group) noteAudit(rec *Row, j int, a *score.Audit) {
	if g.Audited == nil {
		g.Audited, g.AuditFlagged, g.AuditFlags = new(int), new(int), map[string]int{}
	}
	if a.Probes+a.Unprobed == 0 {
		return // nothing passed: nothing to probe
	}
	*g.Audited++
	g.AuditProbes += a.Probes
	g.AuditErrors += a.Errors
	g.AuditUnprobed += a.Unprobed
	if !a.Flagged() {
		return
	}
	*g.AuditFlagged++
	for _, f := range a.Flags {
		g.AuditFlags[strings.SplitN(f, " ", 2)[0]]++
	}
	if len(g.FlaggedList) < maxListed {
		g.FlaggedList = append(g.FlaggedList, fmt.Sprintf("%d/%d: %s", rec.Index, j, strings.Join(a.Flags, ", ")))
	}
}

func (g *Group) finish() {
	if g.meanPrompts > 0 {
		g.MeanScore = g.sumPromptMeans / float64(g.meanPrompts)
		if g.hasExact {
			m := g.sumExactMeans / float64(g.meanPrompts)
			g.MeanScoreExact = &m
		}
	}
	if g.keptResponses > 0 {
		g.MeanOverResponses = g.sumScores / float64(g.keptResponses)
	}
	if g.Responses > 0 {
		g.InfraErrorRate = float64(g.InfraResponses) / float64(g.Responses)
	}
	for k, sum := range g.passSum {
		g.PassAtK[fmt.Sprintf("pass@%d", k)] = sum / float64(g.passN[k])
		g.PassAtKPrompts[fmt.Sprintf("pass@%d", k)] = g.passN[k]
	}
}

func (s *Summary) Finish(wall time.Duration) {
	s.WallSeconds = wall.Seconds()
	s.CrashedAtStart = s.crashNotes()
	s.foldPrompts()
	s.Overall.finish()
	for _, g := range s.BySource {
		g.finish()
	}
	if s.WallSeconds > 0 {
		s.CasesPerSec = float64(s.Overall.Cases-s.ResumedCases) / s.WallSeconds
	}
	sort.Strings(s.order)
}

// NoteExecutionAccuracy sets each group's execution accuracy when the
// run compared result sets.
func (s *Summary) NoteExecutionAccuracy() {
	if !strings.HasPrefix(s.Compare, "rows") {
		return
	}
	for _, g := range append([]*Group{s.Overall}, mapValues(s.BySource)...) {
		if g.keptResponses > 0 {
			ea := float64(g.correctResponses) / float64(g.keptResponses)
			g.ExecutionAccuracy = &ea
		}
	}
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func allTrue(v []int8) bool {
	if len(v) == 0 {
		return false
	}
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return true
}

// Ks are 1 and the powers of two up to n.
func Ks(n int) []int {
	var out []int
	for k := 1; k <= n; k *= 2 {
		out = append(out, k)
	}
	return out
}

// KsUpTo are the k of ks (nil: Ks) that n responses allow: pass@k needs at
// least k of them.
func KsUpTo(ks []int, n int) []int {
	if ks == nil {
		return Ks(n)
	}
	var out []int
	for _, k := range ks {
		if k <= n {
			out = append(out, k)
		}
	}
	return out
}

// ParsePassK reads --pass-k: k values separated by commas ("1,5,10,100"),
// each positive, in increasing order once sorted; "" is nil (the default:
// 1 and the powers of two).
func ParsePassK(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("pass_k: want positive whole numbers separated by commas, such as 1,5,10,100; got %q", f)
		}
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks, nil
}

// PassAtK is the unbiased estimator 1 - C(n-c, k) / C(n, k).
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

func verdictName(v int8) string {
	switch v {
	case 1:
		return "True"
	case 0:
		return "False"
	}
	return fmt.Sprint(v)
}

var verdictOrder = []string{"True", "False", "-1", "-2", "-3", "-4"}

// WriteTable prints the summary for people.
func (s *Summary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	maxK := 0
	for k := range s.Overall.passN {
		maxK = max(maxK, k)
	}
	head := []string{"data_source", "prompts", "responses", "mean/prompt", "mean/response"}
	for _, k := range KsUpTo(s.PassK, maxK) {
		head = append(head, fmt.Sprintf("pass@%d", k))
	}
	head = append(head, verdictOrder...)
	head = append(head, "requests", "skipped", "shared", "cached", "retries", "infra%")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	row := func(name string, g *Group) {
		cols := []string{
			name,
			fmt.Sprint(g.Prompts),
			fmt.Sprint(g.Responses),
			fmt.Sprintf("%.4f", g.MeanScore),
			fmt.Sprintf("%.4f", g.MeanOverResponses),
		}
		for _, k := range KsUpTo(s.PassK, maxK) {
			if v, ok := g.PassAtK[fmt.Sprintf("pass@%d", k)]; ok {
				cols = append(cols, fmt.Sprintf("%.4f", v))
			} else {
				cols = append(cols, "-")
			}
		}
		for _, v := range verdictOrder {
			cols = append(cols, fmt.Sprint(g.Verdicts[v]))
		}
		cols = append(
			cols,
			fmt.Sprint(g.Requests),
			fmt.Sprint(g.SavedByCompile),
			fmt.Sprint(g.SavedByDedup),
			fmt.Sprint(g.SavedByCache),
			fmt.Sprint(g.Retries),
			fmt.Sprintf("%.2f", 100*g.InfraErrorRate),
		)
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	for _, src := range s.order {
		row(src, s.BySource[src])
	}
	if len(s.order) != 1 {
		row("overall", s.Overall)
	}
	tw.Flush()
	fmt.Fprintln(
		w,
		"mean/prompt is verl's test_score/<data_source> (mean over prompts of their mean score)"+passNote(
			s.Overall,
			KsUpTo(s.PassK, maxK),
		),
	)
	if ea := s.Overall.ExecutionAccuracy; ea != nil {
		fmt.Fprintf(w, "execution accuracy (result sets compared, --compare %s): %.4f", s.Compare, *ea)
		for _, name := range s.order {
			if g := s.BySource[name]; g.ExecutionAccuracy != nil && len(s.order) > 1 {
				fmt.Fprintf(w, "; %s %.4f", name, *g.ExecutionAccuracy)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(
		w,
		"%s in %.1fs (%.1f cases/s)",
		text.Count(s.Overall.Cases-s.ResumedCases, "case"),
		s.WallSeconds,
		s.CasesPerSec,
	)
	if s.Overall.Masked > 0 {
		fmt.Fprintf(w, "; %s with infrastructure errors left out of the means", text.Count(s.Overall.Masked, "response"))
	}
	if n := s.Overall.ResponseErrors; n > 0 {
		fmt.Fprintf(w, "; %s could not be run (see reward_error)", text.Count(n, "response"))
		if m := s.Overall.InputErrors; m > 0 {
			fmt.Fprintf(w, ", %d of them for an input reason", m)
		}
	}
	if n := s.UnreadableRows; n > 0 {
		fmt.Fprintf(w, "; %s unreadable, left out", text.Count(n, "input row"))
	}
	if n := s.Overall.StarvedReruns; n > 0 {
		fmt.Fprintf(w, "; %s run again: starved for a CPU", text.Count(n, "request"))
	}
	if s.Resumed > 0 {
		fmt.Fprintf(w, "; %s taken from the journal", text.Count(s.Resumed, "row"))
	}
	if s.InvalidUTF8Rows > 0 {
		fmt.Fprintf(
			w,
			"; %s held invalid UTF-8 (%s replaced by U+FFFD)",
			text.Count(s.InvalidUTF8Rows, "row"),
			text.Count(s.InvalidUTF8Bytes, "byte"),
		)
	}
	fmt.Fprintln(w)
	s.writeSWENote(w)
	s.writeExactNote(w)
	s.writeAuditNote(w)
	for _, c := range s.CrashedAtStart {
		fmt.Fprintf(w, "crashed at start: every %s response (%d) with %s and no output\n", c.Language, c.Responses, c.Signal)
	}
	if len(s.Endpoints) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		adaptive := s.Endpoints[0].Adaptive != nil
		swe := false
		for _, e := range s.Endpoints {
			swe = swe || e.SWERollouts > 0 || e.SWEImages > 0
		}
		head := "endpoint\tweight\trequests\terrors\tejections\tmean latency ms\t"
		if adaptive {
			head += "limit: end, mean (lowest-highest)\tshed\t"
		}
		if swe {
			head += "SWE rollouts\timages\tpulled\t"
		}
		fmt.Fprintln(tw, head)
		for _, e := range s.Endpoints {
			name := e.URL
			if e.Ejected {
				name += " (out of rotation at the end)"
			}
			fmt.Fprintf(tw, "%s\t%g\t%d\t%d\t%d\t%.1f\t", name, e.Weight, e.Requests, e.Errors, e.Ejections, e.MeanLatencyMS)
			if a := e.Adaptive; a != nil {
				fmt.Fprintf(tw, "%d, %.1f (%d-%d)\t%d\t", a.Limit, a.Mean, a.Lowest, a.Highest, a.Overloads)
			}
			if swe {
				fmt.Fprintf(tw, "%d\t%d\t%d\t", e.SWERollouts, e.SWEImages, e.SWEPulls)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		if swe {
			var images, pulls int64
			for _, e := range s.Endpoints {
				images, pulls = images+e.SWEImages, pulls+e.SWEPulls
			}
			fmt.Fprintf(w, "repository tasks over %d endpoints: %d images routed, %d pulls (affinity: an image's "+
				"rollouts go to the endpoint that has it)\n", len(s.Endpoints), images, pulls)
		}
	}
}

// writeExactNote says, per data source, how many rewards the compare mode
// or the checkers changed against verl's exact rule.
func (s *Summary) writeExactNote(w io.Writer) {
	if s.Overall.DifferFromExact == nil {
		return
	}
	how := "--compare " + s.Compare
	if s.Compare == "" {
		how = "checkers"
	} else if s.Checker != "" {
		how += " and checkers"
	}
	var parts []string
	for _, src := range s.order {
		g := s.BySource[src]
		if g.DifferFromExact != nil && *g.DifferFromExact > 0 {
			parts = append(
				parts,
				fmt.Sprintf("%s %d (mean %.4f exact, %.4f now)", src, *g.DifferFromExact, *g.MeanScoreExact, g.MeanScore),
			)
		}
	}
	if len(parts) == 0 {
		fmt.Fprintf(w, "%s changed no reward against verl's exact comparison (reward_exact)\n", how)
		return
	}
	fmt.Fprintf(w, "%s changed %s against verl's exact comparison (reward_exact): %s\n",
		how, text.Count(*s.Overall.DifferFromExact, "reward"), strings.Join(parts, "; "))
}

// writeAuditNote lists what the audit flagged.
func (s *Summary) writeAuditNote(w io.Writer) {
	g := s.Overall
	if g.Audited == nil {
		return
	}
	fmt.Fprintf(w, "audit: %s probed with %s (%d without a usable answer, %s not probeable); %s flagged",
		text.Count(*g.Audited, "response"), text.Count(g.AuditProbes, "extra request"), g.AuditErrors,
		text.Count(g.AuditUnprobed, "passing case"), text.Count(*g.AuditFlagged, "response"))
	if *g.AuditFlagged == 0 {
		fmt.Fprintln(w)
		return
	}
	var kinds []string
	for k, n := range g.AuditFlags {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, " (%s):\n", strings.Join(kinds, ", "))
	for _, src := range s.order {
		for _, f := range s.BySource[src].FlaggedList {
			fmt.Fprintf(w, "  %s row/response %s\n", src, f)
		}
	}
}

// sweOutcomeOrder is the order the summary lists repository tasks'
// outcomes in.
var sweOutcomeOrder = []string{"resolved", "tests_failed", "patch_missing", "patch_apply_failed", "timeout",
	"environment_error", "sandbox_error"}

// writeSWENote lists the outcomes of repository tasks' rollouts, per data
// source when there are several.
func (s *Summary) writeSWENote(w io.Writer) {
	line := func(g *Group) string {
		var parts []string
		for _, k := range sweOutcomeOrder {
			if n := g.SWEOutcomes[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), n))
			}
		}
		return strings.Join(parts, ", ")
	}
	if len(s.Overall.SWEOutcomes) == 0 {
		return
	}
	fmt.Fprintf(w, "repository tasks (SWE-bench %s rules): %s", s.SWERules, line(s.Overall))
	if len(s.order) > 1 {
		for _, name := range s.order {
			if g := s.BySource[name]; len(g.SWEOutcomes) > 0 {
				fmt.Fprintf(w, "; %s: %s", name, line(g))
			}
		}
	}
	fmt.Fprintln(w)
	if s.Provenance != nil && len(s.Provenance.Images) > 0 {
		fmt.Fprintln(w, imagesLine(s.Provenance.Images))
	}
}

// imagesLine tells the images used and what their pulls fetched: "images:
// 3 (2 pulled from registries: 12.0 MB fetched of 310.4 MB, 5 of 9 layers
// already in the store)".
func imagesLine(ims []Image) string {
	pulled, layers, shared := 0, 0, 0
	var bytes, fetched int64
	for _, im := range ims {
		if im.Source == "registry" {
			pulled++
			layers, shared, bytes, fetched = layers+im.Layers, shared+im.Shared, bytes+im.Bytes, fetched+im.Fetched
		}
	}
	msg := fmt.Sprintf("images: %d", len(ims))
	if pulled > 0 {
		msg += fmt.Sprintf(" (%d pulled from registries: %.1f MB fetched of %.1f MB, %d of %d layers already in "+
			"the store)", pulled, float64(fetched)/(1<<20), float64(bytes)/(1<<20), shared, layers)
	}
	return msg
}

// ErrTooManyInfraErrors: more responses than allowed had infrastructure
// errors.
var ErrTooManyInfraErrors = errors.New("too many infrastructure errors")

// InfraFraction is the share of the responses sent to the sandbox whose
// cases met an infrastructure failure (verdict -1 from a request that
// failed, not from the code), and how many were sent.
func (s *Summary) InfraFraction() (frac float64, sent int) {
	g := s.Overall
	sent = g.Responses - g.ResponseErrors
	if sent <= 0 {
		return 0, 0
	}
	return float64(g.InfraResponses) / float64(sent), sent
}

// CheckInfra says whether the run's rewards can be trusted: an error
// wrapping score.ErrSandboxUnusable when every response sent failed at the
// infrastructure level, ErrTooManyInfraErrors when more than maxFrac did.
func (s *Summary) CheckInfra(maxFrac float64) error {
	frac, sent := s.InfraFraction()
	if sent == 0 || s.Overall.InfraResponses == 0 {
		return nil
	}
	if err := score.Unusable(sent, s.Overall.InfraResponses, s.FirstInfraError); err != nil {
		return err
	}
	first := ""
	if s.FirstInfraError != "" {
		first = "; first error: " + s.FirstInfraError
	}
	if frac > maxFrac {
		return fmt.Errorf(
			"%w: %d of %d responses (%.1f%%) failed at the infrastructure level, more than --max-infra-errors %g allows%s",
			ErrTooManyInfraErrors,
			s.Overall.InfraResponses,
			sent,
			100*frac,
			maxFrac,
			first,
		)
	}
	return nil
}

// ErrTooManyInputErrors: more responses than --max-input-errors allows
// could not be run for an input reason.
var ErrTooManyInputErrors = errors.New("too many responses could not be run for input reasons")

// CheckInput fails when more than maxFrac of the responses could not be
// run for an input reason (a bad row, a ground truth that does not parse):
// the likely cause is the run's settings (--ground-truth-key) or the
// dataset, not the responses. It names the first.
func (s *Summary) CheckInput(maxFrac float64) error {
	n, all := s.Overall.InputErrors, s.Overall.Responses
	if n == 0 || all == 0 || float64(n) <= maxFrac*float64(all) {
		return nil
	}
	return fmt.Errorf(
		"%w: %d of %d responses (%.1f%%), more than --max-input-errors %g allows; first: %s (is --ground-truth-key right?)",
		ErrTooManyInputErrors,
		n,
		all,
		100*float64(n)/float64(all),
		maxFrac,
		s.FirstInputError,
	)
}

// passNote says how many prompts each pass@k covers when that is fewer
// than all: pass@k needs at least k responses.
func passNote(g *Group, ks []int) string {
	var parts []string
	for _, k := range ks {
		if n := g.passN[k]; n < g.meanPrompts {
			parts = append(parts, fmt.Sprintf("pass@%d over %d", k, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; pass@k covers the prompts with at least k responses: " + strings.Join(parts, ", ") +
		fmt.Sprintf(" of %d prompts", g.meanPrompts)
}
