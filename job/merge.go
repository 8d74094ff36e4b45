package job

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"time"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
)

// A shard file (OUTPUT.shard) is what Merge needs of a --shard run beside
// its output: a header, then the run's row records (no cases) in row
// order. The records are the journal's, kept because the journal is
// removed at the end of a run.

const shardVersion = 1

// ShardOutput is the default output of shard s of input:
// DefaultOutput's with ".shard-K-of-N" before the extension.
func ShardOutput(input string, s rollout.ShardSpec) string {
	out := DefaultOutput(input)
	ext := filepath.Ext(out)
	return fmt.Sprintf("%s.shard-%d-of-%d%s", out[:len(out)-len(ext)], s.K, s.N, ext)
}

// ShardPath is where the shard file of an output lives.
func ShardPath(output string) string { return output + ".shard" }

type shardHeader struct {
	Version int    `json:"version"`
	Input   string `json:"input"`
	// Settings identifies the scoring settings, the shard left out: every
	// shard of one job has the same.
	Settings    string `json:"settings"`
	K           int    `json:"shard"`
	N           int    `json:"shards"`
	Rows        int    `json:"rows"`
	InfraErrors string `json:"infra_errors"`
	CasesOut    string `json:"cases_out,omitempty"`
	// RewardExact says the rows carry reward_exact (a compare mode or
	// checkers), and Compare and Checker which.
	RewardExact bool    `json:"reward_exact,omitempty"`
	Compare     string  `json:"compare,omitempty"`
	Checker     string  `json:"checker_key,omitempty"`
	WallSeconds float64 `json:"wall_seconds"`
	// Figures of the summary that the row records do not carry.
	InvalidUTF8Rows  int    `json:"rows_with_invalid_utf8"`
	InvalidUTF8Bytes int    `json:"invalid_utf8_bytes_replaced"`
	FirstInfraError  string `json:"first_infra_error,omitempty"`
	PassK            []int  `json:"pass_k,omitempty"`
	// Reader is how the shard read the input; Merge reads it again so.
	Reader readerSettings `json:"reader"`
}

// readerSettings are rollout.Options less the callback.
type readerSettings struct {
	ResponseKey, DataSourceKey, GroundTruthKey, ScoreKey, LanguageKey string
	RequireDataSource                                                 bool
	BatchRows                                                         int
}

func readerSettingsOf(o rollout.Options) readerSettings {
	return readerSettings{ResponseKey: o.ResponseKey, DataSourceKey: o.DataSourceKey, GroundTruthKey: o.GroundTruthKey,
		ScoreKey: o.ScoreKey, LanguageKey: o.LanguageKey, RequireDataSource: o.RequireDataSource, BatchRows: o.BatchRows}
}

func (r readerSettings) options() rollout.Options {
	return rollout.Options{ResponseKey: r.ResponseKey, DataSourceKey: r.DataSourceKey, GroundTruthKey: r.GroundTruthKey,
		ScoreKey: r.ScoreKey, LanguageKey: r.LanguageKey, RequireDataSource: r.RequireDataSource, BatchRows: r.BatchRows}
}

// writeShardFile writes the shard file of a finished --shard run from its
// journal; settings is the run's fingerprint without the shard.
func writeShardFile(
	opts Options,
	wo rollout.WriteOptions,
	fp, settings string,
	sum *results.Summary,
	jpath string,
) error {
	recs, err := loadJournal(jpath, opts.Input, fp)
	if err != nil {
		return err
	}
	hdr := shardHeader{Version: shardVersion, Input: opts.Input, Settings: settings, K: opts.Shard.K, N: opts.Shard.N,
		Rows: len(recs), InfraErrors: sum.InfraErrors, WallSeconds: sum.WallSeconds, InvalidUTF8Rows: sum.InvalidUTF8Rows,
		InvalidUTF8Bytes: sum.InvalidUTF8Bytes, FirstInfraError: sum.FirstInfraError, Reader: readerSettingsOf(opts.Reader),
		RewardExact: wo.RewardExact, Compare: sum.Compare, Checker: sum.Checker, PassK: sum.PassK}
	if opts.CasesOut != "" {
		hdr.CasesOut, _ = filepath.Abs(opts.CasesOut)
	}
	af, err := atomicfile.Create(ShardPath(opts.Output), 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(af)
	if err := enc.Encode(hdr); err != nil {
		af.Abort()
		return err
	}
	idx := make([]int, 0, len(recs))
	for i := range recs {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		rec := *recs[i]
		rec.Cases = nil
		if err := enc.Encode(&rec); err != nil {
			af.Abort()
			return err
		}
	}
	return af.Commit()
}

// MergeOptions describe a merge of shard outputs.
type MergeOptions struct {
	Output   string   // the merged output: the extension of the shards' outputs
	Shards   []string // the shard outputs, in any order
	CasesOut string   // optional: the shards' --cases-out files, joined
	Summary  string   // optional summary JSON
}

// shardInput is one shard output with its shard file.
type shardInput struct {
	output string
	hdr    shardHeader
	recs   *bufio.Reader
	f      *os.File
}

// Merge joins the outputs of the N shards of one job into what the
// unsharded run would have written: the output and the cases file byte
// for byte, and the summary computed again from every row (means and
// pass@k over all prompts, not averaged), equal apart from its timings.
// It reads the input again, as the shards read it, and writes each row
// with the results its shard recorded: the output is written by the same
// code, batch by batch, as in an unsharded run.
func Merge(opts MergeOptions) (*results.Summary, error) {
	if len(opts.Shards) == 0 {
		return nil, errors.New("merge: no shard outputs given")
	}
	var shards []*shardInput
	defer func() {
		for _, s := range shards {
			s.f.Close()
		}
	}()
	for _, out := range opts.Shards {
		s, err := openShard(out)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].hdr.K < shards[j].hdr.K })
	first := shards[0].hdr
	for i, s := range shards {
		h := s.hdr
		switch {
		case h.Input != first.Input:
			return nil, fmt.Errorf("merge: %s is a shard of %s, %s one of %s", s.output, h.Input, shards[0].output, first.Input)
		case h.Settings != first.Settings:
			return nil, fmt.Errorf("merge: %s was scored with other settings than %s", s.output, shards[0].output)
		case h.N != len(shards) || h.N != first.N:
			return nil, fmt.Errorf("merge: %s is shard %d/%d, but %d shard outputs were given", s.output, h.K, h.N, len(shards))
		case h.K != i:
			return nil, fmt.Errorf("merge: shard %d/%d is missing (or given twice)", i, first.N)
		case filepath.Ext(s.output) != filepath.Ext(opts.Output):
			return nil, fmt.Errorf("merge: %s and %s have different formats", s.output, opts.Output)
		}
		if opts.CasesOut != "" && h.CasesOut == "" {
			return nil, fmt.Errorf("merge --cases-out: shard %s was run without --cases-out", s.output)
		}
	}
	var cases []string
	for _, s := range shards {
		cases = append(cases, s.hdr.CasesOut)
	}
	sum := results.NewSummary(first.Input, opts.Output, first.InfraErrors == "mask", first.PassK)
	sum.Compare, sum.Checker = first.Compare, first.Checker
	var wall float64
	for _, s := range shards {
		wall += s.hdr.WallSeconds
		sum.InvalidUTF8Rows += s.hdr.InvalidUTF8Rows
		sum.InvalidUTF8Bytes += s.hdr.InvalidUTF8Bytes
		if sum.FirstInfraError == "" {
			sum.FirstInfraError = s.hdr.FirstInfraError
		}
	}
	if err := rewrite(opts.Output, first, shards, sum); err != nil {
		return nil, err
	}
	if opts.CasesOut != "" {
		if err := concatFiles(opts.CasesOut, cases); err != nil {
			return nil, err
		}
	}
	sum.Finish(time.Duration(wall * float64(time.Second)))
	sum.NoteExecutionAccuracy()
	if opts.Summary != "" {
		if err := writeJSONAtomic(opts.Summary, sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// rewrite writes out from the input and the shards' records, adding each
// row to sum.
func rewrite(out string, first shardHeader, shards []*shardInput, sum *results.Summary) error {
	rd, err := rollout.OpenInput(first.Input, nil, first.Reader.options())
	if err != nil {
		return fmt.Errorf("merge: the shards' input: %w", err)
	}
	defer rd.Close()
	w, err := rollout.CreateWith(out, rd, rollout.WriteOptions{RewardExact: first.RewardExact})
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			w.Abort()
		}
	}()
	next := shardRecords(shards)
	for {
		b, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		res := make([]rollout.RowResult, len(b.Rows))
		for i := range b.Rows {
			rec, err := next()
			if err != nil {
				return err
			}
			if rec == nil || rec.Index != b.Rows[i].Index {
				return fmt.Errorf(
					"merge: the shards hold no result for row %d of %s: the input changed, or a shard is incomplete",
					b.Rows[i].Index,
					first.Input,
				)
			}
			res[i] = rec.RowResult()
			sum.Add(rec, sum.InfraErrors == "mask")
		}
		if err := w.Write(b, res); err != nil {
			return err
		}
	}
	if rec, err := next(); err != nil || rec != nil {
		return fmt.Errorf("merge: the shards hold results beyond the input's last row: the input changed (%v)", err)
	}
	if err := w.Commit(); err != nil {
		return err
	}
	committed = true
	return nil
}

// shardRecords returns the records of the shards in order, then nil.
func shardRecords(shards []*shardInput) func() (*results.Row, error) {
	i := 0
	return func() (*results.Row, error) {
		for i < len(shards) {
			s := shards[i]
			line, err := s.recs.ReadBytes('\n')
			if len(line) > 0 {
				var rec results.Row
				if jerr := json.Unmarshal(line, &rec); jerr != nil {
					return nil, fmt.Errorf("merge: %s: bad record: %w", ShardPath(s.output), jerr)
				}
				return &rec, nil
			}
			if err != nil && err != io.EOF {
				return nil, fmt.Errorf("merge: %s: %w", ShardPath(s.output), err)
			}
			i++
		}
		return nil, nil
	}
}

func openShard(output string) (*shardInput, error) {
	f, err := os.Open(ShardPath(output))
	if err != nil {
		return nil, fmt.Errorf(
			"merge: %s has no shard file (was it written by run --shard, to the end?): %w",
			output,
			errors.Unwrap(err),
		)
	}
	r := bufio.NewReaderSize(f, 1<<16)
	line, err := r.ReadBytes('\n')
	var hdr shardHeader
	if err != nil || json.Unmarshal(line, &hdr) != nil || hdr.Version != shardVersion {
		f.Close()
		return nil, fmt.Errorf("merge: %s is not a verl-score shard file", ShardPath(output))
	}
	if _, err := os.Stat(output); err != nil {
		f.Close()
		return nil, fmt.Errorf("merge: shard output %s: %w", output, errors.Unwrap(err))
	}
	return &shardInput{output: output, hdr: hdr, recs: r, f: f}, nil
}

// concatFiles writes the cases of the cases files, in order, into out,
// atomically, with the first one's provenance.
func concatFiles(out string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("merge: no cases files to join into %s", out)
	}
	prov, err := results.CasesProvenance(files[0])
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	w, err := results.CreateCases(out, prov)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for _, p := range files {
		if _, err := results.ReadCases(p, w.Write); err != nil {
			w.Abort()
			return fmt.Errorf("merge: %w", err)
		}
	}
	return w.Commit()
}
