// Package job runs a scoring job end to end: it streams rows from an input
// (parquet, JSONL, rollout dumps), scores every response through the
// engine, and writes the outputs, a resume journal and a summary.
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/feed"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/text"
	"github.com/verl-score/verl-score/verdict"
)

// Options describe one job.
type Options struct {
	Input    string // path, directory or "-"
	Stdin    io.Reader
	Output   string // .parquet or .jsonl; "-" writes JSONL to Stdout (no journal)
	Stdout   io.Writer
	CasesOut string // optional per-case JSONL
	// PassK are the k of pass@k in the summary; nil: 1 and the powers of two.
	PassK []int
	// results.Provenance, when set, goes into the summary, a parquet output's
	// metadata and the cases file; Toolchains, when set, gives the embedded
	// sandbox's programs of the languages used, at the end of the run, and
	// Images the images repository tasks used.
	Provenance *results.Provenance
	Toolchains func(langs []string) []results.Toolchain
	Images     func() []results.Image
	Summary    string // optional summary JSON

	Reader     rollout.Options
	DataSource string // for rows that have none
	MaskInfra  bool   // leave responses with infrastructure errors out of the means
	MaxText    int    // bytes of stdout/stderr kept per case in CasesOut
	Resume     bool

	// Warn receives warnings (skipped files and the like).
	Warn func(string)
	// Progress, when set, is told the row counts as they change (a
	// progress display).
	Progress Progress
	// Endpoints, when set, gives the sandbox endpoints' figures for the
	// summary (a fleet).
	Endpoints func() []sandboxclient.EndpointStats
	// Shard, when set, scores only that shard's rows (rollout.Shard) and
	// leaves OUTPUT.shard beside the output for Merge.
	Shard *rollout.ShardSpec
}

// Progress receives a run's row counts as they change.
type Progress interface {
	SetTotal(rows int64)  // rows to score; -1 while unknown
	RowFed()              // a row's solutions went to the engine
	RowDone(resumed bool) // a row finished, or was taken from the journal
}

type noProgress struct{}

func (noProgress) SetTotal(int64) {}
func (noProgress) RowFed()        {}
func (noProgress) RowDone(bool)   {}

// ErrInterrupted is returned (wrapped) when the job stopped early; the
// output holds the finished rows and the journal allows a resume.
var ErrInterrupted = errors.New("interrupted")

// JournalPath is where the journal of an output lives.
func JournalPath(output string) string { return output + ".journal" }

// DefaultOutput derives an output path from the input's (rollout.ScoredName).
func DefaultOutput(input string) string { return rollout.ScoredName(input) }

// runFingerprint identifies the options that change what a row's record
// holds; a journal written under other values cannot be resumed. Every
// field of score.Options and rollout.Options counts unless tagged
// fingerprint:"-", so a new option is safe by default.
func runFingerprint(eo score.Options, opts Options) string {
	shard := ""
	if opts.Shard != nil {
		shard = opts.Shard.String()
	}
	return fingerprint(recorded(eo), recorded(opts.Reader), opts.DataSource, opts.CasesOut != "", shard)
}

// recorded lists the fields of an options struct that are not tagged
// fingerprint:"-" (callbacks and interfaces, which have no value to
// record, are left out too).
func recorded(opts any) []any {
	v := reflect.ValueOf(opts)
	var out []any
	for i := range v.NumField() {
		switch v.Field(i).Kind() {
		case reflect.Func, reflect.Interface, reflect.Chan:
			continue
		}
		if v.Type().Field(i).Tag.Get("fingerprint") != "-" {
			out = append(out, v.Field(i).Interface())
		}
	}
	return out
}

// ResolveOutput is the output path for -o output: "" gives
// DefaultOutput(input); a directory (an existing one, or a path ending in
// a slash) gets DefaultOutput's file name inside it.
func ResolveOutput(input, output string) string {
	if output == "" || output == "-" {
		if output == "" {
			return DefaultOutput(input)
		}
		return output
	}
	st, err := os.Stat(output)
	if strings.HasSuffix(output, string(filepath.Separator)) || (err == nil && st.IsDir()) {
		return filepath.Join(output, filepath.Base(DefaultOutput(input)))
	}
	return output
}

// Run executes the job on eng. It returns the summary even when it fails
// midway (with what was done), and an error wrapping ErrInterrupted when
// the job ended before the input was exhausted: eng.Stop was called (the
// requests in flight finished and were kept) or ctx was cancelled (they
// were cut off and will be redone on resume). Either way the finished
// rows are written and the journal allows a resume.
func Run(ctx context.Context, eng *score.Engine, opts Options) (*results.Summary, error) {
	start := time.Now()
	r, err := prepare(eng.Options(), opts)
	if err != nil {
		return nil, err
	}
	defer r.release()
	if err := r.open(); err != nil {
		return nil, err
	}
	out, err := feed.Run(ctx, eng, r.feedRd, feed.Options{DataSource: opts.DataSource}, feed.Hooks[rowRef]{
		Batch: r.batch, Row: r.row, Fed: r.fed, Result: r.result,
	})
	r.finishSummary(out.Interrupted, time.Since(start))
	if err != nil {
		return r.sum, err
	}
	return r.sum, r.commit(out.Interrupted)
}

// runner is one job from its checks to its commit. The feed loop's hooks
// connect it to the engine: rows are journaled as they finish, in any
// order, and written to the outputs batch by batch in input order.
type runner struct {
	opts     Options
	eo       score.Options
	wo       rollout.WriteOptions
	fp       string
	jpath    string
	toStdout bool
	progress Progress

	lock      *outputLock
	done      map[int]*results.Row // rows of the journal resumed from
	rd        rollout.Reader
	feedRd    rollout.Reader // rd, or its shard
	w         rollout.Writer
	cw        results.CaseWriter
	jr        *journal
	committed bool

	mu        sync.Mutex
	sum       *results.Summary
	batches   []*batchState // read, not yet written, in order
	cur       *batchState   // the batch being fed (feeding goroutine)
	unwritten int           // solutions fed whose rows are not written yet
	wrote     chan struct{} // closed and replaced whenever a batch is written
	maxWait   int           // unwritten solutions that make feeding wait
	err       error
	rowsDone  int // rows finished, from the journal or scored
	badRows   int // rows that could not be scored (feeding goroutine only)

	warnedNoSource bool // feeding goroutine only
}

type batchState struct {
	b    *rollout.Batch
	recs []*results.Row // per row; nil until the row was fed
	left []int          // responses still to come, per row
	sols []int          // solutions fed, per row
	fed  bool           // every row of the batch has been fed
}

// rowRef is where a result belongs: row i of a batch.
type rowRef struct {
	bs *batchState
	i  int
}

// prepare checks the options, takes the output's lock, removes what
// killed runs left and loads the journal of a resumed run.
func prepare(eo score.Options, opts Options) (*runner, error) {
	if opts.Output == "" {
		opts.Output = DefaultOutput(opts.Input)
	}
	r := &runner{opts: opts, eo: eo, wo: writeOptions(eo), fp: runFingerprint(eo, opts), jpath: JournalPath(opts.Output),
		toStdout: opts.Output == "-", progress: opts.Progress, done: map[int]*results.Row{}, wrote: make(chan struct{}),
		maxWait: 8 * eo.Window, sum: results.NewSummary(opts.Input, opts.Output, opts.MaskInfra, opts.PassK)}
	if r.progress == nil {
		r.progress = noProgress{}
	}
	if r.toStdout && (opts.Resume || opts.Stdout == nil) {
		return nil, errors.New("output - (stdout) keeps no journal, so it cannot be resumed")
	}
	if r.toStdout && opts.Shard != nil {
		return nil, errors.New("--shard needs an output file (merge reads it and its .shard file), not -")
	}
	if !r.toStdout {
		if err := os.MkdirAll(filepath.Dir(opts.Output), 0o755); err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
		lock, err := lockOutput(opts.Output)
		if err != nil {
			return nil, err
		}
		r.lock = lock
	}
	r.cleanStale()
	switch _, statErr := os.Stat(r.jpath); {
	case opts.Resume:
		rows, err := loadJournal(r.jpath, opts.Input, r.fp)
		if errors.Is(err, errNoJournal) {
			err = fmt.Errorf("--resume: no journal at %s (nothing to resume)", r.jpath)
		}
		if err != nil {
			r.release()
			return nil, err
		}
		r.done = rows
	case statErr == nil && !r.toStdout:
		r.release()
		return nil, fmt.Errorf(
			"%s exists: an earlier run into %s was interrupted; pass --resume to continue it, or delete the journal",
			r.jpath,
			opts.Output,
		)
	}
	return r, nil
}

// cleanStale removes the temporary files of runs that were killed: theirs,
// not ours.
func (r *runner) cleanStale() {
	outs := []string{r.opts.CasesOut, r.opts.Summary}
	if !r.toStdout {
		outs = append(outs, r.opts.Output, r.jpath)
	}
	for _, out := range outs {
		if out == "" || out == "-" {
			continue
		}
		for _, p := range atomicfile.CleanStale(out) {
			r.warn(fmt.Sprintf("removed %s, left by an earlier run that was killed", p))
		}
	}
}

func (r *runner) warn(msg string) {
	if r.opts.Warn != nil {
		r.opts.Warn(msg)
	}
}

// open opens the input and the outputs and starts the journal.
func (r *runner) open() error {
	opts := r.opts
	rd, err := rollout.OpenInput(opts.Input, opts.Stdin, opts.Reader)
	if err != nil {
		return err
	}
	r.rd, r.feedRd = rd, rd
	if r.toStdout {
		r.w = rollout.NewJSONLWriter(opts.Stdout)
	} else if r.w, err = rollout.CreateWith(opts.Output, rd, r.wo); err != nil {
		return err
	}
	if opts.CasesOut != "" {
		if r.cw, err = createCases(opts.CasesOut, opts.Provenance); err != nil {
			return err
		}
	}
	if !r.toStdout {
		hdr := journalHeader{Version: journalVersion, Input: opts.Input, Fingerprint: r.fp}
		if r.jr, err = createJournal(r.jpath, hdr, r.done); err != nil {
			return err
		}
	}
	total := rollout.CountRows(rd)
	r.progress.SetTotal(total)
	if opts.Shard != nil {
		if total < 0 {
			return fmt.Errorf(
				"--shard needs an input whose rows can be counted before scoring (a file or a dump directory), not %s",
				opts.Input,
			)
		}
		r.feedRd = rollout.Shard(rd, *opts.Shard, total)
		// The shard's share before prompts are kept whole: near enough
		// for the progress display.
		k, n := int64(opts.Shard.K), int64(opts.Shard.N)
		r.progress.SetTotal((k+1)*total/n - k*total/n)
	}
	return nil
}

// release gives back what the run holds when it did not commit: the
// outputs' temporary files, the journal (removed when no row finished:
// there is nothing to resume), the input and the lock.
func (r *runner) release() {
	if !r.committed {
		if r.w != nil {
			_ = r.w.Abort()
		}
		if r.cw != nil {
			r.cw.Abort()
		}
		if r.jr != nil {
			r.jr.close()
			if len(r.done) == 0 && r.rowsDone == 0 {
				os.Remove(r.jpath)
			}
		}
	}
	if r.rd != nil {
		r.rd.Close()
	}
	if r.lock != nil {
		r.lock.unlock()
	}
}

// batch starts a batch (feeding goroutine).
func (r *runner) batch(b *rollout.Batch) error {
	bs := &batchState{
		b:    b,
		recs: make([]*results.Row, len(b.Rows)),
		left: make([]int, len(b.Rows)),
		sols: make([]int, len(b.Rows)),
	}
	r.mu.Lock()
	r.batches = append(r.batches, bs)
	r.mu.Unlock()
	r.cur = bs
	return nil
}

// row takes row i of the batch being fed: from the journal when it is
// there, else its solutions go to the engine.
func (r *runner) row(ctx context.Context, b *rollout.Batch, i int, sols []score.Solution) (rowRef, bool, error) {
	bs, row := r.cur, &b.Rows[i]
	ref := rowRef{bs: bs, i: i}
	if row.InvalidUTF8Bytes > 0 {
		r.invalidUTF8(row)
	}
	unreadable := unreadableRow(row)
	if !r.warnedNoSource && unreadable == "" && row.SourceOr(r.opts.DataSource) == "" && r.eo.Mode == score.ModeAuto {
		r.warnedNoSource = true
		r.warn(
			fmt.Sprintf("%s:%d: rows without a data source (rollout dumps carry none): --mode auto scores them over all cases, "+
				"as verl does for a source it does not know; pass --data-source (e.g. codecontests) or --mode continuous to "+
				"choose", row.File, row.Line),
		)
	}
	if rec, ok := r.done[row.Index]; ok {
		return ref, false, r.finished(bs, i, rec, true)
	}
	if row.Err != nil || len(row.Responses) == 0 {
		r.warnRow(row)
	}
	rec := &results.Row{
		Index:      row.Index,
		DataSource: row.SourceOr(r.opts.DataSource),
		IsList:     row.ResponseIsList,
		Prompt:     row.Prompt,
		Responses:  make([]results.Response, len(sols)),
		Unreadable: unreadable,
	}
	if len(sols) == 0 {
		return ref, false, r.finished(bs, i, rec, false) // an empty list: nothing to score
	}
	if r.opts.CasesOut != "" {
		rec.Cases = make([][]verdict.Case, len(sols))
	}
	if err := r.waitRoom(ctx, bs); err != nil {
		return ref, false, err
	}
	r.mu.Lock()
	bs.recs[i], bs.left[i], bs.sols[i] = rec, len(sols), len(sols)
	r.unwritten += len(sols)
	r.mu.Unlock()
	r.progress.RowFed()
	return ref, true, nil
}

// waitRoom holds the feeding while many solutions are finished but wait
// to be written behind a slow row of an earlier batch: they are journaled,
// so this bounds memory, not durability. The batch at the head of the
// queue never waits (nothing before it would free room).
func (r *runner) waitRoom(ctx context.Context, bs *batchState) error {
	for {
		r.mu.Lock()
		if r.unwritten < r.maxWait || r.batches[0] == bs {
			r.mu.Unlock()
			return nil
		}
		wrote := r.wrote
		r.mu.Unlock()
		select {
		case <-wrote:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fed marks the batch being fed as complete and writes what is finished.
func (r *runner) fed(*rollout.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.fed = true
	return r.flushLocked()
}

// invalidUTF8 counts a row whose invalid UTF-8 was replaced, and says so
// for the first one.
func (r *runner) invalidUTF8(row *rollout.Row) {
	r.mu.Lock()
	r.sum.InvalidUTF8Rows++
	r.sum.InvalidUTF8Bytes += row.InvalidUTF8Bytes
	first := r.sum.InvalidUTF8Rows == 1
	r.mu.Unlock()
	if first {
		r.warn(fmt.Sprintf("%s:%d: %d bytes of invalid UTF-8 replaced by U+FFFD, as Python's errors=\"replace\" does; "+
			"the summary counts every such row", row.File, row.Line, row.InvalidUTF8Bytes))
	}
}

// unreadableRow is why a row could not be read at all (its line is not a
// JSON object), or "".
func unreadableRow(row *rollout.Row) string {
	var re *rollout.RowError
	if errors.As(row.Err, &re) && re.Field == "" {
		return re.Error()
	}
	return ""
}

// maxRowWarnings bounds the bad-row messages printed; the rest are counted.
const maxRowWarnings = 20

func (r *runner) warnRow(row *rollout.Row) {
	r.badRows++
	switch {
	case r.badRows <= maxRowWarnings && row.Err != nil:
		r.warn(row.Err.Error() + " (row recorded with reward 0 and this error)")
	case r.badRows <= maxRowWarnings:
		r.warn(fmt.Sprintf("%s:%d: no responses (row recorded with reward 0)", row.File, row.Line))
	case r.badRows == maxRowWarnings+1:
		r.warn("more bad rows follow; their errors are in reward_error")
	}
}

// result records response j of a row; the row's last response finishes it.
func (r *runner) result(res *score.Result, ref rowRef, j int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := ref.bs.recs[ref.i]
	rr := results.Response{
		Reward:      res.Score,
		RewardExact: r.exactOf(res),
		Verdicts:    res.Verdicts(),
		Statuses:    res.Statuses(),
		Requests:    res.Requests,
		Saved:       res.Saved,
		Deduped:     res.Deduped,
		Cached:      res.Cached,
		Retries:     res.Retries,
		Infra:       res.Infra(),
		Audit:       res.Audit,
		Language:    res.Language,
		Crash:       results.CrashAtStart(res.Cases),
		SWE:         res.SWE.Trimmed(r.opts.MaxText),
	}
	for _, c := range res.Cases {
		rr.StarvedReruns += c.StarvedReruns
		if c.Infra && c.APIRequestError != nil && rr.FirstInfra == "" {
			rr.FirstInfra = *c.APIRequestError
		}
	}
	if res.Err != "" {
		e := res.Err
		rr.Err = &e
		rr.InputErr = res.InputErr
	}
	rec.Responses[j] = rr
	if rec.Cases != nil {
		rec.Cases[j] = trimCases(res.Cases, r.opts.MaxText)
	}
	if ref.bs.left[ref.i]--; ref.bs.left[ref.i] > 0 {
		return nil
	}
	if err := r.finishedLocked(ref.bs, ref.i, rec, false); err != nil {
		return err
	}
	return r.flushLocked()
}

// exactOf is r's exact reward, kept when the run compares otherwise.
func (r *runner) exactOf(res *score.Result) *float64 {
	if !r.wo.RewardExact {
		return nil
	}
	x := res.ScoreExact
	return &x
}

// writeOptions are the optional output columns of a run under eo.
func writeOptions(eo score.Options) rollout.WriteOptions {
	return rollout.WriteOptions{RewardExact: !eo.Compare.Exact() || eo.CheckerKey != ""}
}

func (r *runner) finished(bs *batchState, i int, rec *results.Row, fromJournal bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finishedLocked(bs, i, rec, fromJournal)
}

// finishedLocked records a finished row: in the journal at once (a
// scored row), so that a killed run does not score it again.
func (r *runner) finishedLocked(bs *batchState, i int, rec *results.Row, fromJournal bool) error {
	bs.recs[i] = rec
	bs.left[i] = 0
	r.rowsDone++
	r.progress.RowDone(fromJournal)
	if fromJournal {
		r.sum.Resumed++
		for _, resp := range rec.Responses {
			r.sum.ResumedCases += len(resp.Verdicts)
		}
		return nil
	}
	if err := r.jr.write(rec); err != nil {
		r.fail(err)
		return err
	}
	return nil
}

func (r *runner) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// flushLocked writes the finished batches at the head of the queue.
func (r *runner) flushLocked() error {
	if r.err != nil {
		return r.err
	}
	for len(r.batches) > 0 {
		bs := r.batches[0]
		if !bs.fed || !bs.complete() {
			return nil
		}
		if err := r.writeRows(bs, len(bs.recs)); err != nil {
			r.fail(err)
			return err
		}
		bs.b.Release()
		r.batches = r.batches[1:]
		close(r.wrote)
		r.wrote = make(chan struct{})
		if err := r.jr.sync(); err != nil {
			r.fail(err)
			return err
		}
	}
	return nil
}

func (bs *batchState) complete() bool {
	for i, rec := range bs.recs {
		if rec == nil || bs.left[i] != 0 {
			return false
		}
	}
	return true
}

// flushPartial writes the finished leading rows of the first unwritten
// batch (after an interruption).
func (r *runner) flushPartial() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.flushLocked(); err != nil {
		return err
	}
	if len(r.batches) == 0 {
		return nil
	}
	bs := r.batches[0]
	n := 0
	for n < len(bs.recs) && bs.recs[n] != nil && bs.left[n] == 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	return r.writeRows(bs, n)
}

// writeRows writes the first n rows of bs to the outputs and the summary,
// in input order.
func (r *runner) writeRows(bs *batchState, n int) error {
	b := bs.b
	if n < len(b.Rows) {
		b = b.Head(n)
	}
	res := make([]rollout.RowResult, n)
	for i := 0; i < n; i++ {
		rec := bs.recs[i]
		res[i] = rec.RowResult()
		r.sum.Add(rec, r.opts.MaskInfra)
		r.unwritten -= bs.sols[i]
		if r.cw != nil {
			if err := writeCases(r.cw, rec); err != nil {
				return err
			}
		}
	}
	return r.w.Write(b, res)
}

// finishSummary completes the summary of a run that ended.
func (r *runner) finishSummary(interrupted bool, took time.Duration) {
	s := r.sum
	s.Interrupted = interrupted
	s.Finish(took)
	if r.opts.Shard != nil {
		s.Shard = r.opts.Shard.String()
	}
	if !r.eo.Compare.Exact() {
		s.Compare = r.eo.Compare.String()
	}
	s.NoteExecutionAccuracy()
	s.Checker = r.eo.CheckerKey
	if r.opts.Endpoints != nil {
		s.Endpoints = r.opts.Endpoints()
	}
	r.finishProvenance()
	s.Provenance = r.opts.Provenance
	if r.opts.Provenance != nil {
		if kv, ok := r.w.(interface{ SetKeyValue(k, v string) }); ok {
			b, _ := json.Marshal(r.opts.Provenance)
			kv.SetKeyValue(results.ProvenanceKey, string(b))
		}
	}
}

// commit writes what is finished (after an interruption, the leading rows
// of the partly written batch that finished) and commits every output;
// an interrupted run keeps its journal for --resume.
func (r *runner) commit(interrupted bool) error {
	if err := r.flushPartial(); err != nil {
		return err
	}
	if err := r.jr.close(); err != nil {
		return err
	}
	if err := r.w.Commit(); err != nil {
		return err
	}
	r.committed = true
	if r.cw != nil {
		if err := r.cw.Commit(); err != nil {
			return err
		}
	}
	if r.opts.Summary != "" {
		if err := writeJSONAtomic(r.opts.Summary, r.sum); err != nil {
			return err
		}
	}
	switch {
	case interrupted && r.toStdout:
		return fmt.Errorf("%w after %s (written to stdout; no journal)", ErrInterrupted, text.Count(r.rowsDone, "row"))
	case interrupted:
		return fmt.Errorf(
			"%w after %s; the journal %s allows --resume",
			ErrInterrupted,
			text.Count(r.rowsDone, "row"),
			r.jpath,
		)
	case r.toStdout:
		return nil
	}
	if r.opts.Shard != nil {
		unsharded := r.opts
		unsharded.Shard = nil
		if err := writeShardFile(r.opts, r.wo, r.fp, runFingerprint(r.eo, unsharded), r.sum, r.jpath); err != nil {
			return err
		}
	}
	if err := os.Remove(r.jpath); err != nil {
		return fmt.Errorf("remove journal: %w", err)
	}
	return nil
}

func trimCases(cases []verdict.Case, max int) []verdict.Case {
	out := make([]verdict.Case, len(cases))
	copy(out, cases)
	if max <= 0 {
		return out
	}
	for i := range out {
		out[i].Stdout = cut(out[i].Stdout, max)
		out[i].Stderr = cut(out[i].Stderr, max)
		out[i].CompileStderr = cut(out[i].CompileStderr, max)
	}
	return out
}

func cut(s *string, max int) *string {
	if s == nil || len(*s) <= max {
		return s
	}
	c := (*s)[:max] + fmt.Sprintf("...[cut, %d bytes in all]", len(*s))
	return &c
}

// createCases starts the --cases-out file, with the run's provenance.
func createCases(path string, prov *results.Provenance) (results.CaseWriter, error) {
	var raw json.RawMessage
	if prov != nil {
		b, err := json.Marshal(prov)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	w, err := results.CreateCases(path, raw)
	if err != nil {
		return nil, fmt.Errorf("cases output: %w", err)
	}
	return w, nil
}

// writeCases writes the cases of a row's responses.
func writeCases(w results.CaseWriter, rec *results.Row) error {
	for j, cases := range rec.Cases {
		for k, cr := range cases {
			c := results.Case{Row: rec.Index, ResponseIndex: j, DataSource: rec.DataSource, Case: cr}
			if k == 0 && j < len(rec.Responses) {
				c.SWE = rec.Responses[j].SWE // a repository task's outcome, once per response
			}
			if err := w.Write(&c); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}
