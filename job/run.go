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
	"strings"
	"sync"
	"time"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/progress"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
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
	// Provenance, when set, goes into the summary, a parquet output's
	// metadata and the cases file; Toolchains, when set, gives the embedded
	// sandbox's programs of the languages used, at the end of the run.
	Provenance *Provenance
	Toolchains func(langs []string) []Toolchain
	Summary    string // optional summary JSON

	Reader     rollout.Options
	DataSource string // for rows that have none
	MaskInfra  bool   // leave responses with infrastructure errors out of the means
	MaxText    int    // bytes of stdout/stderr kept per case in CasesOut
	Resume     bool

	// Warn receives warnings (skipped files and the like).
	Warn func(string)
	// Rows, when set, are kept up to date for a progress display.
	Rows *progress.Rows
	// Endpoints, when set, gives the sandbox endpoints' figures for the
	// summary (a fleet).
	Endpoints func() []sandboxclient.EndpointStats
	// Shard, when set, scores only that shard's rows (rollout.Shard) and
	// leaves OUTPUT.shard beside the output for Merge.
	Shard *rollout.ShardSpec
}

// ErrInterrupted is returned (wrapped) when the job stopped early; the
// output holds the finished rows and the journal allows a resume.
var ErrInterrupted = errors.New("interrupted")

// JournalPath is where the journal of an output lives.
func JournalPath(output string) string { return output + ".journal" }

// DefaultOutput derives an output path from the input's.
func DefaultOutput(input string) string {
	if input == "-" {
		return "scored.jsonl"
	}
	clean := strings.TrimRight(input, string(filepath.Separator))
	ext := filepath.Ext(clean)
	if st, err := os.Stat(clean); err == nil && st.IsDir() {
		return clean + ".scored.jsonl"
	}
	if ext == ".parquet" {
		return strings.TrimSuffix(clean, ext) + ".scored.parquet"
	}
	return strings.TrimSuffix(clean, ext) + ".scored.jsonl"
}

// runFingerprint identifies the options that change what a row's record
// holds; a journal written under other values cannot be resumed. A new
// option of score.Options or rollout.Options must be classified in
// TestFingerprintCoversEveryOption.
func runFingerprint(eo score.Options, opts Options) string {
	shard := ""
	if opts.Shard != nil {
		shard = opts.Shard.String()
	}
	return fingerprint(eo.Mode, eo.Language, eo.Extract, eo.Timeout,
		eo.MemoryLimitMB, opts.Reader.ResponseKey, opts.Reader.DataSourceKey, opts.Reader.GroundTruthKey,
		opts.Reader.LanguageKey, opts.DataSource, opts.CasesOut != "", shard, eo.Compare, eo.CheckerKey, eo.Audit, eo.AuditFail)
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
func Run(ctx context.Context, eng *score.Engine, opts Options) (*Summary, error) {
	start := time.Now()
	if opts.Output == "" {
		opts.Output = DefaultOutput(opts.Input)
	}
	fp := runFingerprint(eng.Options(), opts)
	jpath := JournalPath(opts.Output)
	toStdout := opts.Output == "-"
	if toStdout && (opts.Resume || opts.Stdout == nil) {
		return nil, errors.New("output - (stdout) keeps no journal, so it cannot be resumed")
	}
	if toStdout && opts.Shard != nil {
		return nil, errors.New("--shard needs an output file (merge reads it and its .shard file), not -")
	}

	if !toStdout {
		if err := os.MkdirAll(filepath.Dir(opts.Output), 0o755); err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
		lock, err := lockOutput(opts.Output)
		if err != nil {
			return nil, err
		}
		defer lock.unlock()
	}

	// Temporary files of runs that were killed: theirs, not ours.
	outs := []string{opts.CasesOut, opts.Summary}
	if !toStdout {
		outs = append(outs, opts.Output, jpath)
	}
	for _, out := range outs {
		if out == "" || out == "-" {
			continue
		}
		for _, p := range atomicfile.CleanStale(out) {
			if opts.Warn != nil {
				opts.Warn(fmt.Sprintf("removed %s, left by an earlier run that was killed", p))
			}
		}
	}

	done := map[int]*rowRecord{}
	if opts.Resume {
		rows, err := loadJournal(jpath, opts.Input, fp)
		switch {
		case errors.Is(err, errNoJournal):
			return nil, fmt.Errorf("--resume: no journal at %s (nothing to resume)", jpath)
		case err != nil:
			return nil, err
		}
		done = rows
	} else if _, err := os.Stat(jpath); err == nil && !toStdout {
		return nil, fmt.Errorf("%s exists: an earlier run into %s was interrupted; pass --resume to continue it, or delete the journal", jpath, opts.Output)
	}

	rd, err := rollout.OpenInput(opts.Input, opts.Stdin, opts.Reader)
	if err != nil {
		return nil, err
	}
	defer rd.Close()

	var w rollout.Writer
	if toStdout {
		w = rollout.NewJSONLWriter(opts.Stdout)
	} else if w, err = rollout.CreateWith(opts.Output, rd, writeOptions(eng.Options())); err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = w.Abort()
		}
	}()
	var cw *casesWriter
	if opts.CasesOut != "" {
		if cw, err = newCasesWriter(opts.CasesOut, opts.Provenance); err != nil {
			return nil, err
		}
		defer cw.abort()
	}
	var jr *journal
	var p *pipeline
	if !toStdout {
		jr, err = createJournal(jpath, journalHeader{Version: journalVersion, Input: opts.Input, Fingerprint: fp}, done)
		if err != nil {
			return nil, err
		}
		// A run that fails before it has finished a row leaves no journal
		// behind: there is nothing to resume.
		defer func() {
			if !committed && len(done) == 0 && (p == nil || p.rowsDone == 0) {
				jr.close()
				os.Remove(jpath)
			}
		}()
		defer jr.close()
	}

	rows := opts.Rows
	if rows == nil {
		rows = progress.NewRows()
	}
	total := rollout.CountRows(rd)
	rows.Total.Store(total)
	feedRd := rd
	if opts.Shard != nil {
		if total < 0 {
			return nil, fmt.Errorf("--shard needs an input whose rows can be counted before scoring (a file or a dump directory), not %s", opts.Input)
		}
		feedRd = rollout.Shard(rd, *opts.Shard, total)
		// The shard's share before prompts are kept whole: near enough
		// for the progress display.
		rows.Total.Store(int64(opts.Shard.K+1)*total/int64(opts.Shard.N) - int64(opts.Shard.K)*total/int64(opts.Shard.N))
	}

	p = &pipeline{opts: opts, mode: eng.Options().Mode, wo: writeOptions(eng.Options()), w: w, cw: cw, jr: jr, done: done, slotOf: map[int64]slot{},
		sum: newSummary(opts.Input, opts.Output, opts.MaskInfra, opts.PassK), rows: rows}
	in := make(chan score.Solution, 64)
	readErr := make(chan error, 1)
	// The reader stops with ctx, when the engine is stopped, or when it
	// gives up (a write failed): nothing more would be kept.
	feedCtx, stopFeed := eng.UntilStopped(ctx)
	defer stopFeed()
	go func() {
		defer close(in)
		readErr <- p.feed(feedCtx, feedRd, in)
	}()
	runErr := eng.Run(ctx, in, p.collect)
	if runErr != nil {
		stopFeed()
	}
	rerr := <-readErr
	if runErr == nil {
		runErr = p.err
	}
	interrupted := ctx.Err() != nil || eng.WasStopped() || p.aborted
	p.sum.Interrupted = interrupted
	p.sum.finish(time.Since(start))
	if opts.Shard != nil {
		p.sum.Shard = opts.Shard.String()
	}
	if eo := eng.Options(); !eo.Compare.Exact() {
		p.sum.Compare = eo.Compare.String()
	}
	p.sum.Checker = eng.Options().CheckerKey
	if opts.Endpoints != nil {
		p.sum.Endpoints = opts.Endpoints()
	}
	p.finishProvenance()
	p.sum.Provenance = opts.Provenance
	if opts.Provenance != nil {
		if kv, ok := w.(interface{ SetKeyValue(k, v string) }); ok {
			b, _ := json.Marshal(opts.Provenance)
			kv.SetKeyValue(ProvenanceKey, string(b))
		}
	}

	if runErr != nil {
		return p.sum, runErr
	}
	if rerr != nil && !interrupted {
		return p.sum, rerr
	}
	// Write what is finished: on interruption, the rows of the partly done
	// batch that finished.
	if err := p.flushPartial(); err != nil {
		return p.sum, err
	}
	if err := jr.close(); err != nil {
		return p.sum, err
	}
	if err := w.Commit(); err != nil {
		return p.sum, err
	}
	committed = true
	if cw != nil {
		if err := cw.commit(); err != nil {
			return p.sum, err
		}
	}
	if opts.Summary != "" {
		if err := writeJSONAtomic(opts.Summary, p.sum); err != nil {
			return p.sum, err
		}
	}
	if interrupted && toStdout {
		return p.sum, fmt.Errorf("%w after %s (written to stdout; no journal)", ErrInterrupted, progress.Count(p.rowsDone, "row"))
	}
	if interrupted {
		return p.sum, fmt.Errorf("%w after %s; the journal %s allows --resume", ErrInterrupted, progress.Count(p.rowsDone, "row"), jpath)
	}
	if toStdout {
		return p.sum, nil
	}
	if opts.Shard != nil {
		unsharded := opts
		unsharded.Shard = nil
		if err := writeShardFile(opts, writeOptions(eng.Options()), fp, runFingerprint(eng.Options(), unsharded), p.sum, jpath); err != nil {
			return p.sum, err
		}
	}
	if err := os.Remove(jpath); err != nil {
		return p.sum, fmt.Errorf("remove journal: %w", err)
	}
	return p.sum, nil
}

// pipeline connects the reader, the engine and the writers. Rows are
// written batch by batch in input order; the engine emits results in the
// order the solutions were fed, so finished rows always form a prefix.
type pipeline struct {
	opts Options
	mode score.Mode
	wo   rollout.WriteOptions
	w    rollout.Writer
	cw   *casesWriter
	jr   *journal
	done map[int]*rowRecord
	sum  *Summary

	mu       sync.Mutex
	batches  []*batchState  // fed, not yet written, in order
	slotOf   map[int64]slot // solutions fed and not yet collected
	err      error
	aborted  bool
	rowsDone int
	badRows  int // rows that could not be scored (feed goroutine only)

	warnedNoSource bool // feed goroutine only
	rows           *progress.Rows
}

type batchState struct {
	b    *rollout.Batch
	recs []*rowRecord // nil until the row is finished
	left []int        // responses still to come, per row
	fed  bool         // every solution of the batch has been fed
}

// slot says where a solution's result belongs.
type slot struct {
	bs       *batchState
	row, idx int
}

// feed reads batches and sends their solutions to the engine.
func (p *pipeline) feed(ctx context.Context, rd rollout.Reader, in chan<- score.Solution) error {
	var id int64
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		bs := &batchState{b: b, recs: make([]*rowRecord, len(b.Rows)), left: make([]int, len(b.Rows))}
		p.mu.Lock()
		p.batches = append(p.batches, bs)
		p.mu.Unlock()
		for i := range b.Rows {
			row := &b.Rows[i]
			if row.InvalidUTF8Bytes > 0 {
				p.invalidUTF8(row)
			}
			unreadable := unreadableRow(row)
			if !p.warnedNoSource && unreadable == "" && row.SourceOr(p.opts.DataSource) == "" && p.mode == score.ModeAuto && p.opts.Warn != nil {
				p.warnedNoSource = true
				p.opts.Warn(fmt.Sprintf("%s:%d: rows without a data source (rollout dumps carry none): --mode auto scores them over all cases, "+
					"as verl does for a source it does not know; pass --data-source (e.g. codecontests) or --mode continuous to choose", row.File, row.Line))
			}
			if rec, ok := p.done[row.Index]; ok {
				p.finishRow(bs, i, rec, true)
				continue
			}
			if row.Err != nil || len(row.Responses) == 0 {
				p.warnRow(row)
			}
			sols := score.RowSolutions(row, p.opts.DataSource, id)
			id += int64(len(sols))
			rec := &rowRecord{Index: row.Index, DataSource: row.SourceOr(p.opts.DataSource), IsList: row.ResponseIsList, Prompt: row.Prompt,
				Responses: make([]responseRecord, len(sols)), Unreadable: unreadable}
			if len(sols) == 0 {
				p.finishRow(bs, i, rec, false) // an empty list: nothing to score
				continue
			}
			if p.opts.CasesOut != "" {
				rec.Cases = make([][]verdict.Case, len(sols))
			}
			p.mu.Lock()
			bs.left[i] = len(sols)
			bs.recs[i] = rec
			for j, sol := range sols {
				p.slotOf[sol.ID] = slot{bs: bs, row: i, idx: j}
			}
			p.mu.Unlock()
			p.rows.Fed.Add(1)
			for _, sol := range sols {
				select {
				case in <- sol:
				case <-ctx.Done():
					// The row will never finish; it is left out of the
					// output and redone on resume.
					p.mu.Lock()
					bs.recs[i] = nil
					p.mu.Unlock()
					return ctx.Err()
				}
			}
		}
		p.mu.Lock()
		bs.fed = true
		err = p.flushLocked()
		p.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// invalidUTF8 counts a row whose invalid UTF-8 was replaced, and says so
// for the first one.
func (p *pipeline) invalidUTF8(row *rollout.Row) {
	p.mu.Lock()
	p.sum.InvalidUTF8Rows++
	p.sum.InvalidUTF8Bytes += row.InvalidUTF8Bytes
	first := p.sum.InvalidUTF8Rows == 1
	p.mu.Unlock()
	if first && p.opts.Warn != nil {
		p.opts.Warn(fmt.Sprintf("%s:%d: %d bytes of invalid UTF-8 replaced by U+FFFD, as Python's errors=\"replace\" does; "+
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

func (p *pipeline) warnRow(row *rollout.Row) {
	if p.opts.Warn == nil {
		return
	}
	p.badRows++
	switch {
	case p.badRows <= maxRowWarnings && row.Err != nil:
		p.opts.Warn(row.Err.Error() + " (row recorded with reward 0 and this error)")
	case p.badRows <= maxRowWarnings:
		p.opts.Warn(fmt.Sprintf("%s:%d: no responses (row recorded with reward 0)", row.File, row.Line))
	case p.badRows == maxRowWarnings+1:
		p.opts.Warn("more bad rows follow; their errors are in reward_error")
	}
}

// collect receives each result, in feeding order, from the engine.
func (p *pipeline) collect(r *score.Result) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	sl, ok := p.slotOf[r.ID]
	if !ok {
		return fmt.Errorf("internal error: result for unknown solution %d", r.ID)
	}
	delete(p.slotOf, r.ID)
	if r.Aborted {
		p.aborted = true
	}
	if p.aborted {
		return nil // nothing after an aborted result is kept, to stay a prefix
	}
	rec := sl.bs.recs[sl.row]
	if rec == nil {
		return nil
	}
	rr := responseRecord{Reward: r.Score, RewardExact: p.exactOf(r), Verdicts: r.Verdicts(), Statuses: r.Statuses(),
		Requests: r.Requests, Saved: r.Saved, Deduped: r.Deduped, Cached: r.Cached, Retries: r.Retries, Infra: r.Infra(), Audit: r.Audit,
		Language: r.Language, Crash: crashAtStart(r.Cases)}
	for _, c := range r.Cases {
		rr.StarvedReruns += c.StarvedReruns
	}
	if r.Err != "" {
		e := r.Err
		rr.Err = &e
		rr.InputErr = r.InputErr
		if r.InputErr && rec.Unreadable == "" && p.sum.FirstInputError == "" {
			p.sum.FirstInputError = fmt.Sprintf("row %d response %d: %s", rec.Index, sl.idx, r.Err)
		}
	}
	rec.Responses[sl.idx] = rr
	if rr.Infra && p.sum.FirstInfraError == "" {
		for _, c := range r.Cases {
			if c.Infra && c.APIRequestError != nil {
				p.sum.FirstInfraError = *c.APIRequestError
				break
			}
		}
	}
	if rec.Cases != nil {
		rec.Cases[sl.idx] = trimCases(r.Cases, p.opts.MaxText)
	}
	sl.bs.left[sl.row]--
	if sl.bs.left[sl.row] == 0 {
		if err := p.rowFinishedLocked(sl.bs, sl.row, rec, false); err != nil {
			p.err = err
			return err
		}
	}
	if err := p.flushLocked(); err != nil {
		p.err = err
		return err
	}
	return nil
}

// exactOf is r's exact reward, kept when the run compares otherwise.
func (p *pipeline) exactOf(r *score.Result) *float64 {
	if !p.wo.RewardExact {
		return nil
	}
	x := r.ScoreExact
	return &x
}

// writeOptions are the optional output columns of a run under eo.
func writeOptions(eo score.Options) rollout.WriteOptions {
	return rollout.WriteOptions{RewardExact: !eo.Compare.Exact() || eo.CheckerKey != ""}
}

func (p *pipeline) finishRow(bs *batchState, i int, rec *rowRecord, fromJournal bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.rowFinishedLocked(bs, i, rec, fromJournal); err != nil && p.err == nil {
		p.err = err
	}
}

func (p *pipeline) rowFinishedLocked(bs *batchState, i int, rec *rowRecord, fromJournal bool) error {
	bs.recs[i] = rec
	bs.left[i] = 0
	p.sum.add(rec, p.opts.MaskInfra)
	p.rowsDone++
	p.rows.Done.Add(1)
	if fromJournal {
		p.rows.Resumed.Add(1)
		p.sum.Resumed++
		for _, r := range rec.Responses {
			p.sum.resumedCases += len(r.Verdicts)
		}
		return nil
	}
	return p.jr.write(rec)
}

// flushLocked writes the finished batches at the head of the queue.
func (p *pipeline) flushLocked() error {
	for len(p.batches) > 0 {
		bs := p.batches[0]
		if !bs.fed || !bs.complete() {
			return nil
		}
		if err := p.writeRows(bs, len(bs.recs)); err != nil {
			return err
		}
		bs.b.Release()
		p.batches = p.batches[1:]
		if err := p.jr.sync(); err != nil {
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
func (p *pipeline) flushPartial() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.flushLocked(); err != nil {
		return err
	}
	if len(p.batches) == 0 {
		return nil
	}
	bs := p.batches[0]
	n := 0
	for n < len(bs.recs) && bs.recs[n] != nil && bs.left[n] == 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	return p.writeRows(bs, n)
}

func (p *pipeline) writeRows(bs *batchState, n int) error {
	b := bs.b
	if n < len(b.Rows) {
		b = b.Head(n)
	}
	res := make([]rollout.RowResult, n)
	for i := 0; i < n; i++ {
		res[i] = bs.recs[i].rowResult()
		if p.cw != nil {
			if err := p.cw.writeRow(bs.recs[i]); err != nil {
				return err
			}
		}
	}
	if err := p.w.Write(b, res); err != nil {
		return err
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

// casesWriter writes one JSON line per case, or one parquet row per case
// when the path ends in .parquet (rollout.CasesSchema).
type casesWriter struct {
	path string
	af   *atomicfile.File
	pq   *rollout.CasesParquet
}

func newCasesWriter(path string, prov *Provenance) (*casesWriter, error) {
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		pq, err := rollout.CreateCasesParquet(path)
		if err != nil {
			return nil, fmt.Errorf("cases output: %w", err)
		}
		if prov != nil {
			b, _ := json.Marshal(prov)
			pq.SetKeyValue(ProvenanceKey, string(b))
		}
		return &casesWriter{path: path, pq: pq}, nil
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cases output: %w", err)
	}
	if prov != nil {
		b, err := provenanceLine(prov)
		if err != nil {
			af.Abort()
			return nil, err
		}
		af.Write(append(b, '\n'))
	}
	return &casesWriter{path: path, af: af}, nil
}

type caseLine struct {
	Row           int    `json:"row"`
	ResponseIndex int    `json:"response_index"`
	DataSource    string `json:"data_source"`
	verdict.Case
}

func (c *casesWriter) writeRow(rec *rowRecord) error {
	for j, cases := range rec.Cases {
		for _, cr := range cases {
			b, err := json.Marshal(caseLine{Row: rec.Index, ResponseIndex: j, DataSource: rec.DataSource, Case: cr})
			if err != nil {
				return err
			}
			if c.pq != nil {
				if err := c.pq.WriteLine(b); err != nil {
					return fmt.Errorf("cases output %s: %w", c.path, err)
				}
				continue
			}
			c.af.Write(b)
			if err := c.af.WriteByte('\n'); err != nil {
				return fmt.Errorf("cases output %s: %w", c.path, err)
			}
		}
	}
	return nil
}

func (c *casesWriter) commit() error {
	if c.pq != nil {
		return c.pq.Commit()
	}
	return c.af.Commit()
}

func (c *casesWriter) abort() {
	if c.pq != nil {
		c.pq.Abort()
		return
	}
	c.af.Abort()
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}
