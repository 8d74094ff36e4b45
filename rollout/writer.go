package rollout

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/verl-score/verl-score/atomicfile"
)

// RowResult is what the scorer produced for one row, aligned with
// Row.Responses (one entry for a single-string response).
type RowResult struct {
	Rewards     []float64
	CaseResults [][]int8 // per response: 1 True, 0 False, -1..-4 as in verl
	CaseStatus  [][]string
	Errors      []*string // per response; nil = no error
	// RewardsExact are the rewards under verl's exact comparison, for a
	// writer made with WriteOptions.RewardExact.
	RewardsExact []float64
}

// WriteOptions add optional result columns.
type WriteOptions struct {
	// RewardExact appends reward_exact after the four columns: the reward
	// under verl's exact comparison, for runs that compare otherwise.
	RewardExact bool
}

// Writer writes scored rows to a file atomically.
type Writer interface {
	// Write writes a batch; res[i] belongs to b.Rows[i]. Batches must arrive
	// in input order.
	Write(b *Batch, res []RowResult) error
	// Commit flushes and syncs the temporary file and renames it onto the
	// final path.
	Commit() error
	// Abort removes the temporary file. It is safe after Commit (it then
	// does nothing).
	Abort() error
}

// Create writes to path, in the format its extension names (.parquet,
// .jsonl or .json). Output goes to a temporary file next to path (path +
// ".tmp-<pid>-<random>") that Commit renames onto path, so path never holds a
// partial output. src is the reader the batches come from; it tells the
// parquet writer the input schema before the first batch.
//
// Every input column or key is kept untouched (JSONL bytes that are not
// UTF-8 become U+FFFD, see Row.InvalidUTF8Bytes) and four are appended:
// reward (double), case_results (list<int8>; JSON true/false for 1/0 and
// integers for -1..-4), case_status (list<string>) and reward_error (string,
// null when none). Where the response column is a list, each of the four is a
// list aligned with it. A row with an error (Row.Err) and no responses gets
// one entry: reward 0 and the error text.
//
// Conversions: JSONL to JSONL keeps each input line's bytes and appends the
// four keys before its final "}"; a line that is not a JSON object is written
// as {"_raw_line": "<the line>", <the four keys>}. Parquet to JSONL writes each
// row as a JSON object (structs as objects in schema order, lists as arrays,
// binary as base64). JSONL to parquet infers column types from the first
// batch (see inferColumns); a line that is not a JSON object becomes a row of
// nulls with its error in reward_error. Parquet to parquet appends the four
// columns to each input record batch, the input columns passed through as
// the same Arrow arrays; the input's schema-level metadata (pandas,
// huggingface) is not carried over since it describes the input's columns.
func Create(path string, src Reader) (Writer, error) {
	return CreateWith(path, src, WriteOptions{})
}

// CreateWith is Create with optional result columns.
func CreateWith(path string, src Reader, wo WriteOptions) (Writer, error) {
	f := formatOf(path)
	if f == nil {
		return nil, fmt.Errorf("create output %s: unknown format (want %s)", path, knownExts())
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	w, err := f.create(af, src, wo)
	if err != nil {
		af.Abort()
		return nil, err
	}
	return w, nil
}

// NewJSONLWriter writes scored rows as JSONL to w (for stdout). Commit
// flushes; Abort only stops.
func NewJSONLWriter(w io.Writer) Writer {
	return &jsonlWriter{out: bufio.NewWriterSize(w, 256<<10)}
}

// entry is one response's result, ready to write.
type entry struct {
	reward float64
	exact  float64 // reward_exact
	cases  []int8
	status []string
	err    *string
}

// entries lines up a row's result with its responses: one entry per
// response in list mode, one entry otherwise. A result without rewards
// (the scorer skipped the row) gives reward 0 and the row's error.
func entries(row Row, r RowResult, isList bool) ([]entry, error) {
	n := 1
	if isList {
		n = len(row.Responses)
		if n == 0 && row.Err != nil {
			n = 1
		}
	} else if row.ResponseIsList && len(row.Responses) != 1 && row.Err == nil {
		return nil, fmt.Errorf("%s:%d: the response is a list of %d but the output's columns are scalar",
			row.File, row.Line, len(row.Responses))
	}
	var rowMsg *string
	if row.Err != nil {
		s := row.Err.Error()
		rowMsg = &s
	}
	out := make([]entry, n)
	if len(r.Rewards) == 0 {
		msg := rowMsg
		if msg == nil && n > 0 {
			s := fmt.Sprintf("%s:%d: not scored", row.File, row.Line)
			msg = &s
		}
		for k := range out {
			out[k].err = msg
		}
		return out, nil
	}
	if len(r.Rewards) != n {
		return nil, fmt.Errorf("%s:%d: %d rewards for %d responses", row.File, row.Line, len(r.Rewards), n)
	}
	for k := range out {
		out[k].reward = r.Rewards[k]
		if k < len(r.RewardsExact) {
			out[k].exact = r.RewardsExact[k]
		} else {
			out[k].exact = r.Rewards[k]
		}
		if k < len(r.CaseResults) {
			out[k].cases = r.CaseResults[k]
		}
		if k < len(r.CaseStatus) {
			out[k].status = r.CaseStatus[k]
		}
		if k < len(r.Errors) {
			out[k].err = r.Errors[k]
		}
		if out[k].err == nil {
			out[k].err = rowMsg
		}
	}
	return out, nil
}

// jsonlWriter writes JSON lines.
type jsonlWriter struct {
	out *bufio.Writer
	af  *atomicfile.File // nil when writing to a stream
	buf []byte
	wo  WriteOptions
}

func (w *jsonlWriter) Write(b *Batch, res []RowResult) error {
	if len(res) != len(b.Rows) {
		return fmt.Errorf("write: %d results for %d rows", len(res), len(b.Rows))
	}
	for i, row := range b.Rows {
		ents, err := entries(row, res[i], row.ResponseIsList)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		buf := w.buf[:0]
		switch {
		case b.lines != nil && b.lines[i].obj:
			raw := b.lines[i].raw
			buf = append(buf, raw[:len(raw)-1]...) // all but the final "}"
			if !b.lines[i].empty {
				buf = append(buf, ',')
			}
		case b.lines != nil:
			buf = append(buf, `{"_raw_line":`...)
			buf = appendQuoted(buf, string(b.lines[i].raw))
			buf = append(buf, ',')
		case b.rec != nil:
			buf = append(buf, '{')
			for j, f := range b.rec.Schema().Fields() {
				buf = appendQuoted(buf, f.Name)
				buf = append(buf, ':')
				buf = appendValueJSON(buf, b.rec.Column(j), i)
				buf = append(buf, ',')
			}
		default:
			return errors.New("write: batch holds no input rows")
		}
		buf = appendResultsJSON(buf, ents, row.ResponseIsList, w.wo)
		buf = append(buf, '}', '\n')
		if _, err := w.out.Write(buf); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		w.buf = buf
	}
	return nil
}

func (w *jsonlWriter) Commit() error {
	if w.af != nil {
		return w.af.Commit()
	}
	return w.out.Flush()
}

func (w *jsonlWriter) Abort() error {
	if w.af != nil {
		return w.af.Abort()
	}
	return nil
}

// appendResultsJSON appends the result members (without braces).
func appendResultsJSON(buf []byte, ents []entry, isList bool, wo WriteOptions) []byte {
	each := func(f func(buf []byte, e entry) []byte) []byte {
		if !isList {
			return f(buf, ents[0])
		}
		buf = append(buf, '[')
		for k, e := range ents {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = f(buf, e)
		}
		return append(buf, ']')
	}
	buf = append(buf, `"reward":`...)
	buf = each(func(buf []byte, e entry) []byte { return appendFloat(buf, e.reward, 64) })
	buf = append(buf, `,"case_results":`...)
	buf = each(func(buf []byte, e entry) []byte {
		buf = append(buf, '[')
		for k, c := range e.cases {
			if k > 0 {
				buf = append(buf, ',')
			}
			switch c {
			case 1:
				buf = append(buf, "true"...)
			case 0:
				buf = append(buf, "false"...)
			default:
				buf = fmt.Appendf(buf, "%d", c)
			}
		}
		return append(buf, ']')
	})
	buf = append(buf, `,"case_status":`...)
	buf = each(func(buf []byte, e entry) []byte {
		buf = append(buf, '[')
		for k, s := range e.status {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = appendQuoted(buf, s)
		}
		return append(buf, ']')
	})
	buf = append(buf, `,"reward_error":`...)
	buf = each(func(buf []byte, e entry) []byte {
		if e.err == nil {
			return append(buf, "null"...)
		}
		return appendQuoted(buf, *e.err)
	})
	if wo.RewardExact {
		buf = append(buf, `,"reward_exact":`...)
		buf = each(func(buf []byte, e entry) []byte { return appendFloat(buf, e.exact, 64) })
	}
	return buf
}
