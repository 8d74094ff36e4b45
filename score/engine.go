// Package score is verl-score's engine: it turns solutions (a completion, its
// ground truth and a scoring mode) into per-case verdicts and a score, with
// every request to the sandbox under one global limit.
package score

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/verl-score/verl-score/judge"
	langs "github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/text"
	"github.com/verl-score/verl-score/verdict"
)

// Mode chooses how a solution's cases become its score.
type Mode int

const (
	// ModeAuto routes by data source as verl's default reward does:
	// codecontests, apps, codeforces and taco are scored continuously,
	// everything else over all cases.
	ModeAuto Mode = iota
	// ModeContinuous scores passed cases among the first min(n, 10).
	ModeContinuous
	// ModeAll scores passed cases among all n.
	ModeAll
)

// ParseMode parses "auto", "continuous" or "all".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return ModeAuto, nil
	case "continuous":
		return ModeContinuous, nil
	case "all":
		return ModeAll, nil
	}
	return 0, fmt.Errorf("mode must be one of auto, continuous, all, got %q", s)
}

func (m Mode) String() string {
	switch m {
	case ModeContinuous:
		return "continuous"
	case ModeAll:
		return "all"
	}
	return "auto"
}

// continuousSources are the data sources verl's default reward sends to the
// sandbox scorer with continuous scoring.
var continuousSources = map[string]bool{"codecontests": true, "apps": true, "codeforces": true, "taco": true}

// Continuous reports whether a solution of dataSource is scored
// continuously under mode m.
func (m Mode) Continuous(dataSource string) bool {
	switch m {
	case ModeContinuous:
		return true
	case ModeAll:
		return false
	}
	return continuousSources[dataSource]
}

// LanguageAuto takes each solution's language from its code fence.
const LanguageAuto = "auto"

// Options configure an Engine. A field that does not change what a
// solution's result holds is tagged fingerprint:"-"; every other field is
// part of a run's journal fingerprint (job), so that a resume under
// another value is refused.
type Options struct {
	MaxConcurrent int     `fingerprint:"-"` // requests in flight across all solutions (verl: 64)
	Timeout       float64 // compile and run timeout of each case, seconds (verl: 10)
	MemoryLimitMB int     // verl: 1024
	Mode          Mode
	Language      string         // default language; "python" as verl, or LanguageAuto
	Extract       testcases.Rule // code extraction rule
	// NoCompileSkip sends every case even after a compile error, as verl
	// does; the verdicts are the same either way.
	NoCompileSkip bool `fingerprint:"-"`
	// NoDedup sends every execution, even one identical to an execution
	// of this run (same code as sent, stdin, language, timeouts, memory
	// limit) whose answer could be shared; the verdicts are the same
	// either way.
	NoDedup bool `fingerprint:"-"`
	// Cache, when set, keeps answers across runs: an execution found in
	// it is not sent. Only answers of deterministic verdicts are stored:
	// never an infrastructure error (-1), a timeout (-3) or a compile
	// timeout (-4, compile_timeout) only with CacheTimeouts.
	Cache         Cache `fingerprint:"-"`
	CacheTimeouts bool  `fingerprint:"-"`
	// Compare is how stdout meets the expected output; the zero value is
	// verl's exact rule. With another mode every case also keeps its
	// exact verdict (Result.ScoreExact).
	Compare testcases.Comparison
	// CheckerKey names the ground-truth field that holds a problem's
	// checker; "" uses none, as verl.
	CheckerKey string
	// Audit probes the passing cases of every response for known
	// loopholes (audit.go); AuditFail then scores a flagged response 0.
	Audit     bool
	AuditFail bool
	// Window bounds the solutions in progress (dispatched but not yet
	// emitted); it keeps memory flat however long the input is. Default
	// 4*MaxConcurrent, at least 64.
	Window int `fingerprint:"-"`
	// SWE runs the rollouts of repository tasks; nil: they are
	// infrastructure errors (the remote sandbox has no repository tasks).
	SWE SWERunner `fingerprint:"-"`
	// SWERules are the SWE-bench release whose rules grade them.
	SWERules swe.Rules
	// SWEReward is their reward: SWERewardResolved ("" too), F2P, Partial.
	SWEReward string
}

// DefaultOptions are verl's defaults.
func DefaultOptions() Options {
	return Options{MaxConcurrent: 64, Timeout: 10, MemoryLimitMB: 1024, Language: "python"}
}

// Solution is one completion to score.
type Solution struct {
	ID          int64  // caller's identifier, handed back in the Result
	Completion  string // the model's response text
	GroundTruth []byte // raw JSON ground truth (see testcases.Parse)
	// Truth, when set, is GroundTruth already parsed, shared by the
	// responses of one prompt so that it is parsed once.
	Truth      *Truth
	DataSource string
	Language   string // overrides Options.Language when not ""
	// Err, when set, is a problem found before scoring (a bad input row):
	// the solution scores 0 with this error and no case is run.
	Err error
	// Fresh sends every case of the solution, taking no answer of an
	// identical execution: a rerun that asks whether a verdict repeats.
	Fresh bool
}

// Truth is a ground truth parsed once for every response of a prompt,
// on first use. Solutions running at once may share it.
type Truth struct {
	raw  []byte
	dir  string // where a database_file is resolved
	once sync.Once
	set  *testcases.Set
	err  error
	// an SWE instance, when the truth is one (swe.go)
	sweOnce sync.Once
	isSWE   bool
	swe     *swe.Instance
	sweErr  error
}

// ParseTruth returns raw as a Truth, to be parsed once when first used.
func ParseTruth(raw []byte) *Truth { return &Truth{raw: raw, dir: "."} }

// ParseTruthIn is ParseTruth for a row of an input in dir: a
// database_file the ground truth names is read from there.
func ParseTruthIn(raw []byte, dir string) *Truth { return &Truth{raw: raw, dir: dir} }

// maxDatabaseBytes bounds a text-to-SQL database file sent with requests.
const maxDatabaseBytes = 64 << 20

// parsed parses the truth (once: every engine of a process has the same
// checker key), and reads the database file it names.
func (t *Truth) parsed(checkerKey string) (*testcases.Set, error) {
	t.once.Do(func() {
		t.set, t.err = testcases.ParseWith(t.raw, checkerKey)
		if t.err != nil || t.set.DatabaseFile == "" {
			return
		}
		path := t.set.DatabaseFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(t.dir, path)
		}
		st, err := os.Stat(path)
		if err == nil && st.Size() > maxDatabaseBytes {
			err = fmt.Errorf("%d bytes, more than the %d a request may carry", st.Size(), maxDatabaseBytes)
		}
		var b []byte
		if err == nil {
			b, err = os.ReadFile(path)
		}
		if err != nil {
			t.set, t.err = nil, fmt.Errorf("%w: database_file %s: %v", testcases.ErrUnusable, path, err)
			return
		}
		t.set.Files = map[string]string{filepath.Base(path): base64.StdEncoding.EncodeToString(b)}
	})
	return t.set, t.err
}

// Result is the outcome of one Solution.
type Result struct {
	ID    int64
	Score float64
	// ScoreExact is the score under verl's exact comparison, which
	// differs from Score only with another compare mode or a checker.
	ScoreExact float64
	Continuous bool
	Language   string
	Cases      []verdict.Case // in case order
	Err        string         // "" when the solution could be scored
	// InputErr marks an Err that is the input's fault, not the response's:
	// a bad row or a ground truth that cannot be parsed.
	InputErr    bool
	Requests    int // requests sent (attempts not counted)
	Saved       int // requests not sent thanks to compile-error skipping
	Deduped     int // requests not sent: an identical execution's answer was shared
	Cached      int // requests not sent: the answer came from the cache
	Retries     int // extra HTTP attempts
	CheckerRuns int // requests that ran the problem's checker (not in Requests)
	// Audit is what the audit's probes found, with Options.Audit.
	Audit *Audit
	// Aborted is set when the context was cancelled while cases were in
	// flight: the verdicts are incomplete and must not be kept.
	Aborted bool
	// SWE is a repository task's outcome, for such a solution.
	SWE *SWEResult
}

// Verdicts returns the verdict codes of r's cases.
func (r *Result) Verdicts() []int8 {
	v := make([]int8, len(r.Cases))
	for i := range r.Cases {
		v[i] = int8(r.Cases[i].Verdict)
	}
	return v
}

// ExactVerdicts returns the verdict codes of r's cases under verl's exact
// comparison.
func (r *Result) ExactVerdicts() []int8 {
	v := make([]int8, len(r.Cases))
	for i := range r.Cases {
		v[i] = int8(r.Cases[i].ExactVerdict())
	}
	return v
}

// Statuses returns the status names of r's cases.
func (r *Result) Statuses() []string {
	s := make([]string, len(r.Cases))
	for i := range r.Cases {
		s[i] = r.Cases[i].Status
	}
	return s
}

// Infra reports whether any case of r ended in an infrastructure failure.
func (r *Result) Infra() bool {
	for i := range r.Cases {
		if r.Cases[i].Infra {
			return true
		}
	}
	return false
}

// ErrSandboxUnusable is wrapped by run and check when every response sent
// to the sandbox failed at the infrastructure level: the rewards then say
// nothing about the code.
var ErrSandboxUnusable = errors.New("sandbox unusable")

// Unusable is the one test of a sandbox that answers nothing about the
// code, for run and check alike: of sent responses (those that had cases
// to run), failed met an infrastructure error, and that is all of them.
// first is the first such error. It returns nil otherwise.
func Unusable(sent, failed int, first string) error {
	if sent == 0 || failed < sent {
		return nil
	}
	if first != "" {
		first = "; first error: " + first
	}
	return fmt.Errorf(
		"%w: all %s sent failed at the infrastructure level, so every reward is 0%s",
		ErrSandboxUnusable,
		text.Count(sent, "response"),
		first,
	)
}

// Errors that end a solution before any case is run.
var (
	// ErrMissingCode's text is verl's own, capital and all: reward_error
	// carries it as verl's scorer reports it.
	ErrMissingCode = errors.New("Invalid completion (missing code block)") //lint:ignore ST1005 verl's literal message
)

// Progress counts the engine's work with atomics, for a progress display.
type Progress struct {
	CasesTotal atomic.Int64 // cases known (grows as solutions are parsed)
	CasesDone  atomic.Int64 // cases with a verdict (skipped ones included)
	Solutions  atomic.Int64 // solutions emitted
	InfraErrs  atomic.Int64 // cases with an infrastructure failure
	InFlight   atomic.Int64 // requests in flight now
}

// Engine scores solutions through a sandbox client.
type Engine struct {
	client   sandboxclient.Client
	opts     Options
	lim      *limiter
	progress *Progress
	shared   *flights // nil with NoDedup
	stop     chan struct{}
	stopOnce sync.Once
}

// New returns an Engine over client. opts.MaxConcurrent must be positive.
func New(client sandboxclient.Client, opts Options) (*Engine, error) {
	if client == nil {
		return nil, errors.New("score: nil sandbox client")
	}
	if opts.MaxConcurrent <= 0 {
		return nil, fmt.Errorf("max concurrent must be positive, got %d", opts.MaxConcurrent)
	}
	if opts.Timeout <= 0 {
		return nil, fmt.Errorf("timeout must be positive, got %g", opts.Timeout)
	}
	if opts.MemoryLimitMB <= 0 {
		return nil, fmt.Errorf("memory limit must be positive, got %d MB", opts.MemoryLimitMB)
	}
	if opts.Language == "" {
		opts.Language = "python"
	}
	opts.Audit = opts.Audit || opts.AuditFail
	if opts.Window <= 0 {
		opts.Window = max(4*opts.MaxConcurrent, 64)
	}
	e := &Engine{
		client:   client,
		opts:     opts,
		lim:      newLimiter(opts.MaxConcurrent),
		progress: &Progress{},
		stop:     make(chan struct{}),
	}
	if !opts.NoDedup {
		e.shared = newFlights()
	}
	return e, nil
}

// Progress returns the engine's live counters.
func (e *Engine) Progress() *Progress { return e.progress }

// Options returns the options the engine runs with, defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Stop makes the engine send nothing more, for good: the requests in
// flight run to their end and keep their verdicts, cases not yet sent are
// not sent, and their solutions come back with Aborted set. Run calls
// after Stop send nothing. It is the gentle interruption; cancelling
// Run's context is the hard one. Stop may be called more than once and
// from any goroutine.
func (e *Engine) Stop() { e.stopOnce.Do(func() { close(e.stop) }) }

// UntilStopped returns a context that ends with ctx or at Stop, whichever
// comes first: the context to read input under while feeding the engine.
// Call cancel once done with it.
func (e *Engine) UntilStopped(ctx context.Context) (_ context.Context, cancel context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-c.Done():
		}
	}()
	return c, cancel
}

// WasStopped reports whether Stop was called.
func (e *Engine) WasStopped() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// solState is one solution on its way through the engine.
type solState struct {
	res      Result
	set      *testcases.Set
	code     string
	program  string // the program of every case when the set has no assert cases
	lang     string
	fresh    bool
	pending  sync.WaitGroup
	mu       sync.Mutex
	firstCE  int // smallest case index known to be -4, or -1
	sent     []bool
	refOut   []*string // per case, the reference program's output (Set.Reference)
	done     chan struct{}
	finished bool
	swe      *sweState // a repository task's rollout (swe.go)
}

// Run scores every solution received from in and calls emit with each
// result as soon as it is finished, one at a time from a single goroutine:
// a solution answered ahead of a slow earlier one is not held back, so a
// caller that journals results loses only what was in flight. At most
// Options.Window solutions are in progress at once. Run returns when in is
// closed and every result is emitted, or when emit fails. Cancelling ctx
// cancels the requests in flight and sends nothing more; every solution
// still comes back, unfinished ones with Aborted set. Stop ends a run
// gently instead, letting the requests in flight finish.
func (e *Engine) Run(ctx context.Context, in <-chan Solution, emit func(*Result) error) error {
	return e.run(ctx, in, emit, false)
}

// RunInOrder is Run with the results emitted in the order the solutions
// arrived: a slow solution holds back the ones after it, up to the window.
func (e *Engine) RunInOrder(ctx context.Context, in <-chan Solution, emit func(*Result) error) error {
	return e.run(ctx, in, emit, true)
}

func (e *Engine) run(ctx context.Context, in <-chan Solution, emit func(*Result) error, inOrder bool) error {
	// sendCtx ends the sending of new cases: on Stop or with ctx.
	sendCtx, stopSending := e.UntilStopped(ctx)
	defer stopSending()
	// A token per solution in progress, taken before it starts and given
	// back once it is emitted: the window. The queue then never holds more
	// than the window, in arrival order or in finishing order.
	tokens := make(chan struct{}, e.opts.Window)
	queue := make(chan *solState, e.opts.Window)
	emitErr := make(chan error, 1)
	stopDispatch := make(chan struct{})
	var dispatchers, finishers sync.WaitGroup
	dispatchers.Add(1)
	go func() {
		defer dispatchers.Done()
		defer func() {
			finishers.Wait()
			close(queue)
		}()
		for sol := range in {
			select {
			case tokens <- struct{}{}:
			case <-stopDispatch:
				return
			}
			st := e.start(sol)
			if inOrder {
				queue <- st
			} else {
				finishers.Add(1)
				go func() {
					defer finishers.Done()
					<-st.done
					queue <- st
				}()
			}
			// Each solution dispatches its own cases; the window bounds
			// how many do at once, the limiter the requests.
			dispatchers.Add(1)
			go func() {
				defer dispatchers.Done()
				e.dispatch(sendCtx, ctx, st)
			}()
		}
	}()
	go func() {
		var err error
		for st := range queue {
			if err == nil {
				<-st.done
				e.progress.Solutions.Add(1)
				if err = emit(&st.res); err != nil {
					close(stopDispatch)
				}
			}
			<-tokens
		}
		emitErr <- err
	}()
	err := <-emitErr
	dispatchers.Wait()
	if err != nil {
		// Drain the input so a producer blocked on it can finish.
		go func() {
			for range in {
			}
		}()
	}
	return err
}

// start parses a solution and decides its language and mode.
func (e *Engine) start(sol Solution) *solState {
	st := &solState{done: make(chan struct{}), firstCE: -1}
	st.res.ID = sol.ID
	st.fresh = sol.Fresh
	st.res.Continuous = e.opts.Mode.Continuous(sol.DataSource)
	if sol.Err != nil {
		st.res.Err = sol.Err.Error()
		st.res.InputErr = true
		st.finished = true
		close(st.done)
		return st
	}
	truth := sol.Truth
	if truth == nil {
		truth = ParseTruth(sol.GroundTruth)
	}
	if inst, isSWE, err := truth.instance(); isSWE {
		return e.startSWE(st, sol, inst, err)
	}
	code, tag, ok := testcases.Extract(sol.Completion, e.opts.Extract)
	lang := sol.Language
	if lang == "" {
		lang = e.opts.Language
	}
	if lang == LanguageAuto {
		lang, code = langs.FromFence(tag, code)
	}
	st.lang = lang
	st.res.Language = lang
	if !ok {
		st.res.Err = ErrMissingCode.Error()
		st.finished = true
		close(st.done)
		return st
	}
	set, err := truth.parsed(e.opts.CheckerKey)
	if err != nil {
		st.res.Err = err.Error()
		st.res.InputErr = true
		st.finished = true
		close(st.done)
		return st
	}
	st.set, st.code = set, code
	if !set.HasAsserts() && len(set.Cases) > 0 {
		st.program = set.Program(code, 0, lang)
	}
	n := len(set.Cases)
	st.res.Cases = make([]verdict.Case, n)
	st.sent = make([]bool, n)
	e.progress.CasesTotal.Add(int64(n))
	if set.Mismatch {
		for i, c := range set.Cases {
			msg := "Input/output count mismatch"
			st.res.Cases[i] = verdict.Case{
				Verdict: verdict.APIError, CaseIndex: i, Input: c.Input,
				ExpectedOutput: c.ExpectedText, Status: "input_output_mismatch", APIRequestError: &msg,
			}
		}
		e.progress.CasesDone.Add(int64(n))
		e.finish(st)
		return st
	}
	if n == 0 {
		e.finish(st)
	}
	return st
}

// dispatch sends st's cases in case order, each after taking a slot of the
// global limit, until ctx ends; the requests run under reqCtx. Once a case
// is known to be a compile error, later cases not yet sent are not sent:
// docs/semantics.md §6 overwrites their verdicts anyway. For a compiled
// language the first case goes alone, so a compile error costs one
// request.
func (e *Engine) dispatch(ctx, reqCtx context.Context, st *solState) {
	defer e.waitAndFinish(ctx, st)
	if st.swe != nil {
		if !st.finished {
			e.dispatchSWE(ctx, reqCtx, st)
		}
		return
	}
	if st.set == nil || st.set.Mismatch || len(st.set.Cases) == 0 {
		return
	}
	if !sandboxclient.IsSupportedLanguage(st.lang) {
		for i := range st.set.Cases {
			err := &sandboxclient.APIError{Err: fmt.Errorf("unsupported language %q", st.lang)}
			st.res.Cases[i] = e.judge(st, i, nil, err)
			e.progress.CasesDone.Add(1)
			e.progress.InfraErrs.Add(1)
		}
		return
	}
	probe := langs.CompiledUpstream(st.lang) && !e.opts.NoCompileSkip
	skip := func(i int) bool {
		return !e.opts.NoCompileSkip && st.skipFrom() >= 0 && st.skipFrom() < i
	}
	for i := range st.set.Cases {
		if skip(i) {
			return
		}
		sl := e.lim.slot(st.res.ID, i)
		if ctx.Err() != nil || sl.acquire(ctx) != nil || ctx.Err() != nil {
			sl.release()
			st.mu.Lock()
			st.res.Aborted = true
			st.mu.Unlock()
			return
		}
		// Check again: a compile error may have come back while waiting.
		if skip(i) {
			sl.release()
			return
		}
		st.sent[i] = true
		st.pending.Add(1)
		e.progress.InFlight.Add(1)
		if i == 0 && probe {
			e.send(reqCtx, st, i, sl)
			continue
		}
		go e.send(reqCtx, st, i, sl)
	}
}

// waitAndFinish completes st once its in-flight cases return (and the
// audit's probes, with Options.Audit), without holding up the dispatch of
// the next solutions.
func (e *Engine) waitAndFinish(ctx context.Context, st *solState) {
	go func() {
		st.pending.Wait()
		if !e.settle(st) {
			return
		}
		if e.opts.Audit && !st.res.Aborted && st.set != nil {
			e.audit(ctx, st)
		}
		close(st.done)
	}()
}

func (st *solState) skipFrom() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.firstCE
}

func (e *Engine) request(st *solState, i int) *sandboxclient.Request {
	c := &st.set.Cases[i]
	code := st.program
	if code == "" {
		code = st.set.Program(st.code, i, st.lang)
	}
	return &sandboxclient.Request{
		CompileTimeout: e.opts.Timeout,
		RunTimeout:     e.opts.Timeout,
		Code:           code,
		Stdin:          c.Stdin,
		MemoryLimitMB:  e.opts.MemoryLimitMB,
		Language:       st.lang,
		// A text-to-SQL database, when the ground truth names one; else
		// Files and FetchFiles stay nil: the HTTP client sends {} and [].
		Files: st.set.Files,
	}
}

func (e *Engine) judge(st *solState, i int, resp *sandboxclient.Response, err error) verdict.Case {
	c := &st.set.Cases[i]
	if exp := st.expected(i); exp != c.Expected {
		return judge.Case(i, c.Input, *exp, exp, resp, err)
	}
	return judge.Case(i, c.Input, c.ExpectedText, c.Expected, resp, err)
}

// expected is case i's expected output: the reference program's, once it
// ran, else the ground truth's.
func (st *solState) expected(i int) *string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.refOut != nil && st.refOut[i] != nil {
		return st.refOut[i]
	}
	return st.set.Cases[i].Expected
}

// finish settles st and releases it.
func (e *Engine) finish(st *solState) {
	if e.settle(st) {
		close(st.done)
	}
}

// settle applies the compile-error rule and the score, once: it reports
// whether this call did, and so must release st.
func (e *Engine) settle(st *solState) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return false
	}
	st.finished = true
	if st.swe != nil {
		st.res.Score = e.sweScore(st.swe.res)
		st.res.ScoreExact = st.res.Score
		return true
	}
	cases := st.res.Cases
	k := -1 // smallest index with a -4 verdict among the cases that have one
	for i := range cases {
		if cases[i].Status != "" && cases[i].Verdict == verdict.CompileError {
			k = i
			break
		}
	}
	for i := range cases {
		if st.sent == nil || st.sent[i] || cases[i].Status != "" {
			continue
		}
		// Never sent.
		c := &st.set.Cases[i]
		if k >= 0 && i > k {
			cases[i] = verdict.Case{
				Verdict: verdict.CompileError, CaseIndex: i, Input: c.Input,
				ExpectedOutput: c.ExpectedText, Status: verdict.StatusCompileErrorSkipped,
			}
			st.res.Saved++
			e.progress.CasesDone.Add(1)
		} else {
			// Not sent because the run was aborted.
			msg := "not sent: run interrupted"
			cases[i] = verdict.Case{
				Verdict: verdict.APIError, CaseIndex: i, Input: c.Input,
				ExpectedOutput: c.ExpectedText, Status: verdict.StatusAPIError, APIRequestError: &msg, Infra: true,
			}
			st.res.Aborted = true
		}
	}
	if k >= 0 {
		for i := k + 1; i < len(cases); i++ {
			if cases[i].Verdict != verdict.CompileError {
				cases[i].Verdict = verdict.CompileError
				cases[i].Status = verdict.StatusCompileErrorSkipped
			}
		}
	}
	st.res.Score = Compute(st.res.Verdicts(), st.res.Continuous)
	st.res.ScoreExact = Compute(st.res.ExactVerdicts(), st.res.Continuous)
	return true
}

// Compute is the score of one solution's verdicts (docs/semantics.md §7).
func Compute(verdicts []int8, continuous bool) float64 {
	n := len(verdicts)
	if n == 0 {
		return 0
	}
	if continuous {
		n = min(n, 10)
	}
	passed := 0
	for _, v := range verdicts[:n] {
		if v == int8(verdict.True) {
			passed++
		}
	}
	return float64(passed) / float64(n)
}
