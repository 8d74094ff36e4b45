package rollout

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Field names of a rollout dump line (docs/semantics.md §1.2).
const (
	dumpResponseKey    = "output"
	dumpGroundTruthKey = "gts"
	dumpScoreKey       = "score"
	dumpPromptKey      = "input"
)

// jsonlReader reads one JSONL stream. Lines are read whole whatever their
// length (bufio.Reader.ReadBytes), one batch at a time.
type jsonlReader struct {
	br     *bufio.Reader
	closer io.Closer // nil for stdin
	name   string
	opts   Options
	dump   bool // lines are rollout dump lines

	lineNo    int  // number of the last line read
	peeking   bool // readLine reads past the pending lines
	pending   []pendingLine
	nextIndex int
	done      bool
}

type pendingLine struct {
	raw []byte
	no  int
	bad int // invalid UTF-8 bytes replaced by U+FFFD
}

func newJSONLReader(r io.Reader, closer io.Closer, name string, opts Options) (*jsonlReader, error) {
	jr := &jsonlReader{
		br:     bufio.NewReaderSize(r, 256<<10),
		closer: closer,
		name:   name,
		opts:   opts,
	}
	// Peek at the first row to tell a dump file from dataset rows.
	first, err := jr.readLine()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if err != nil {
		return jr, nil
	}
	if t := bytes.TrimSpace(first.raw); len(t) > 0 && t[0] == '[' && !json.Valid(t) {
		// Most likely a pretty-printed JSON array, not JSON lines.
		return nil, fmt.Errorf("%s:%d: starts a JSON array; want JSON lines (one object per line)", name, first.no)
	}
	jr.pending = append(jr.pending, first)
	ms, err := parseObject(first.raw)
	if err != nil {
		return jr, nil // the row gets its error
	}
	_, hasOut := get(ms, dumpResponseKey)
	_, hasGTS := get(ms, dumpGroundTruthKey)
	_, hasResp := lookup(ms, opts.ResponseKey)
	jr.dump = hasOut && hasGTS && !hasResp
	if jr.dump {
		return jr, nil
	}
	// A key that none of the first rows has is most likely misspelt.
	rows := [][]member{ms}
	jr.peeking = true
	defer func() { jr.peeking = false }()
	for len(rows) < keyCheckRows {
		line, err := jr.readLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		jr.pending = append(jr.pending, line)
		if ms, err := parseObject(line.raw); err == nil {
			rows = append(rows, ms)
		}
	}
	if err := checkKeys(rows, name, opts); err != nil {
		return nil, err
	}
	return jr, nil
}

// keyCheckRows is how many rows are looked at for the keys the scorer
// needs before the run starts.
const keyCheckRows = 16

// readLine returns the next non-blank line without its line ending and
// trailing blanks, and its 1-based number. Invalid UTF-8 in the line is
// replaced by U+FFFD as Python's errors="replace" would, so that the code
// run and the output written are what verl would see and valid JSON.
func (r *jsonlReader) readLine() (pendingLine, error) {
	if len(r.pending) > 0 && !r.peeking {
		p := r.pending[0]
		r.pending = r.pending[1:]
		return p, nil
	}
	for !r.done {
		b, err := r.br.ReadBytes('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return pendingLine{}, err
			}
			r.done = true
			if len(b) == 0 {
				break
			}
		}
		r.lineNo++
		b = bytes.TrimRight(b, " \t\r\n")
		if len(bytes.TrimLeft(b, " \t")) == 0 {
			continue
		}
		b, bad := replaceInvalidUTF8(b)
		return pendingLine{raw: b, no: r.lineNo, bad: bad}, nil
	}
	return pendingLine{}, io.EOF
}

// Kind reports Dump for rollout dump lines and JSONL otherwise.
func (r *jsonlReader) Kind() Kind {
	if r.dump {
		return Dump
	}
	return JSONL
}

// Close closes the underlying file (not stdin).
func (r *jsonlReader) Close() error {
	if r.closer != nil {
		c := r.closer
		r.closer = nil
		return c.Close()
	}
	return nil
}

// Next reads up to BatchRows rows.
func (r *jsonlReader) Next() (*Batch, error) {
	n := r.opts.BatchRows
	b := &Batch{Rows: make([]Row, 0, n), lines: make([]srcLine, 0, n)}
	for len(b.Rows) < n {
		line, err := r.readLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.name, err)
		}
		row, sl, err := r.parseRow(line.raw, line.no)
		if err != nil {
			return nil, err
		}
		row.InvalidUTF8Bytes = line.bad
		b.Rows = append(b.Rows, row)
		b.lines = append(b.lines, sl)
	}
	if len(b.Rows) == 0 {
		return nil, io.EOF
	}
	return b, nil
}

// parseRow turns one line into a Row. The error is for problems that stop
// the whole run (a reserved key); problems with the row go into Row.Err.
func (r *jsonlReader) parseRow(raw []byte, no int) (Row, srcLine, error) {
	row := Row{Index: r.nextIndex, File: r.name, Line: no}
	r.nextIndex++
	rowErr := func(field, reason string) {
		if row.Err == nil {
			row.Err = &RowError{File: r.name, Line: no, Field: field, Reason: reason}
		}
	}
	ms, err := parseObject(raw)
	if err != nil {
		rowErr("", err.Error())
		return row, srcLine{raw: raw}, nil
	}
	for _, m := range ms {
		if isReserved(m.key) && !r.opts.Scored {
			return Row{}, srcLine{}, fmt.Errorf("%s:%d: key %q: %w", r.name, no, m.key, ErrReservedColumn)
		}
	}
	sl := srcLine{raw: raw, obj: true, empty: len(ms) == 0}

	respKey, gtKey, scoreKey := r.opts.ResponseKey, r.opts.GroundTruthKey, r.opts.ScoreKey
	if r.dump {
		respKey, gtKey, scoreKey = dumpResponseKey, dumpGroundTruthKey, dumpScoreKey
	}

	if r.dump {
		if v, ok := get(ms, dumpPromptKey); ok && jsonKind(v) == '"' {
			// One step's lines only: the same prompt at another step is
			// another rollout of it.
			sum := sha256.Sum256(append([]byte(r.name+"\x00"), v...))
			row.Prompt = hex.EncodeToString(sum[:12])
		}
	}

	if v, ok := lookup(ms, respKey); !ok {
		rowErr(respKey, "missing")
	} else {
		resp, isList, reason := decodeResponses(v)
		row.Responses, row.ResponseIsList = resp, isList
		if reason != "" {
			rowErr(respKey, reason)
		}
	}

	if v, ok := lookup(ms, r.opts.DataSourceKey); ok {
		switch k := jsonKind(v); k {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				rowErr(r.opts.DataSourceKey, err.Error())
			}
			row.DataSource = s
		case 'n':
		default:
			rowErr(r.opts.DataSourceKey, fmt.Sprintf("is %s, want a string", kindName(k)))
		}
	}

	if v, ok := lookup(ms, gtKey); !ok {
		rowErr(gtKey, "missing")
	} else {
		switch k := jsonKind(v); k {
		case '"', '{':
			row.GroundTruth = bytes.TrimSpace(v)
		case 'n':
			rowErr(gtKey, "null")
		default:
			rowErr(gtKey, fmt.Sprintf("is %s, want a JSON string or object", kindName(k)))
		}
	}

	if v, ok := lookup(ms, scoreKey); ok {
		if s, ok := decodeScores(v); ok {
			row.RefScores = s
		}
	}
	for _, k := range idKeys(r.opts) {
		if v, ok := lookup(ms, k); ok && jsonKind(v) != 'n' {
			row.TaskID = idText(v)
			break
		}
	}
	if key := r.opts.LanguageKey; key != "" {
		if v, ok := lookup(ms, key); ok && jsonKind(v) != 'n' {
			langs, _, reason := decodeResponses(v)
			if reason != "" {
				rowErr(key, reason)
			}
			row.Languages = langs
		}
	}
	return row, sl, nil
}

// checkKeys fails when none of the first rows has a key the scorer needs:
// with every row lacking it the run would score nothing.
func checkKeys(rows [][]member, name string, opts Options) error {
	need := []struct{ what, key string }{{"response", opts.ResponseKey}, {"ground truth", opts.GroundTruthKey}}
	if opts.Scored {
		need = need[:1] // a scored output read for its responses
	}
	if opts.RequireDataSource {
		need = append(need, struct{ what, key string }{"data source", opts.DataSourceKey})
	}
	if opts.LanguageKey != "" {
		need = append(need, struct{ what, key string }{"language", opts.LanguageKey})
	}
	for _, n := range need {
		found := false
		for _, ms := range rows {
			if _, ok := lookup(ms, n.key); ok {
				found = true
				break
			}
		}
		if !found {
			return &MissingColumnError{What: n.what, Key: n.key, Where: fmt.Sprintf("%s (first %d rows)", name, len(rows)),
				Have: objectKeys(rows[0], "", 2)}
		}
	}
	return nil
}

// objectKeys lists the keys of an object as dotted paths, depth levels
// down.
func objectKeys(ms []member, prefix string, depth int) []string {
	var out []string
	for _, m := range ms {
		out = append(out, prefix+m.key)
		if depth > 1 && jsonKind(m.val) == '{' {
			if sub, err := splitObject(m.val); err == nil {
				out = append(out, objectKeys(sub, prefix+m.key+".", depth-1)...)
			}
		}
	}
	return out
}
