package rollout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ScoredRow is one row of a scored output, as Create wrote it.
type ScoredRow struct {
	Index          int // 0-based row position in the output
	File           string
	Line           int // 1-based line (JSONL) or row (parquet) number
	DataSource     string
	ResponseIsList bool // the result columns are lists
	Rewards        []float64
	CaseResults    [][]int8
	CaseStatus     [][]string
	Errors         []*string
	RefScores      []float64 // the ScoreKey column or field, NaN where null; nil when absent
	// RewardsExact is the reward_exact column (a compare mode or
	// checkers); nil when absent.
	RewardsExact []float64
	// Identity names the row's input apart from its position: "id:" and
	// the IDKey field when it is set, else a digest of the row's prompt
	// ("prompt", or a dump's "input") and ground truth; "" when the row has
	// none of them.
	Identity string
	// TaskID is the row's id as the dataset names it: the IDKey field when
	// it is set, else the first of DefaultIDKeys the row has; "" when none.
	TaskID string
	// Prompt is set on the lines of a rollout dump (an "input" and an
	// "output"): lines with the same input at the same step are one
	// prompt's responses, as run's summary counts them.
	Prompt string
}

// DefaultIDKeys are where a row's task id is looked for when no IDKey is
// set: verl's datasets keep their index in extra_info.
var DefaultIDKeys = []string{"id", "task_id", "extra_info.task_id", "extra_info.index"}

// idKeys are the fields a row's TaskID is taken from, first found first.
func idKeys(opts Options) []string {
	if opts.IDKey != "" {
		return []string{opts.IDKey}
	}
	return DefaultIDKeys
}

// identityOf is a row's identity from its id, else its prompt, else its
// ground truth, each as JSON (nil when absent). The prompt alone names a
// row: two rows with one prompt (a rollout dump's responses) are told
// apart by their order.
func identityOf(id *string, prompt, truth []byte) string {
	if id != nil {
		return "id:" + *id
	}
	v := prompt
	if v == nil {
		v = truth
	}
	if v == nil {
		return ""
	}
	sum := sha256.Sum256(canonicalJSON(v))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// canonicalJSON re-encodes a JSON value with sorted keys, so that a value
// reads back the same from JSONL and from parquet (where a nested value
// may be stored as a JSON string): a string that holds a JSON array or
// object stands for that value. What does not parse is kept as it is.
func canonicalJSON(b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return b
	}
	if s, ok := v.(string); ok {
		if t := strings.TrimSpace(s); t != "" && (t[0] == '[' || t[0] == '{') {
			var inner any
			d := json.NewDecoder(strings.NewReader(t))
			d.UseNumber()
			if d.Decode(&inner) == nil {
				v = inner
			}
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// promptKeys are where a row's prompt is: verl datasets' "prompt", rollout
// dumps' "input".
var promptKeys = []string{"prompt", "input"}

// ScoredReader reads a scored output row by row.
type ScoredReader interface {
	// Next returns the next row, or io.EOF after the last one.
	Next() (*ScoredRow, error)
	Close() error
}

// ErrNotScored is wrapped by the errors of OpenScored and Next when the
// file lacks the result columns.
var ErrNotScored = errors.New("not a verl-score output")

// OpenScored opens an output written by Create (parquet or JSONL) to read
// back the four result columns, the data source and the reference scores.
func OpenScored(path string, opts Options) (ScoredReader, error) {
	opts = opts.withDefaults()
	if f := formatOf(path); f != nil {
		return f.openScored(path, opts)
	}
	return nil, fmt.Errorf("open scored output %s: unknown format (want %s)", path, knownExts())
}

type scoredJSONL struct {
	jr    *jsonlReader
	index int
}

func (s *scoredJSONL) Close() error { return s.jr.Close() }

func (s *scoredJSONL) Next() (*ScoredRow, error) {
	line, err := s.jr.readLine()
	raw, no := line.raw, line.no
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read %s: %w", s.jr.name, err)
	}
	where := fmt.Sprintf("%s:%d", s.jr.name, no)
	ms, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	row := &ScoredRow{Index: s.index, File: s.jr.name, Line: no}
	s.index++
	opts := s.jr.opts
	if v, ok := lookup(ms, opts.DataSourceKey); ok && jsonKind(v) == '"' {
		json.Unmarshal(v, &row.DataSource)
	}
	if v, ok := lookup(ms, opts.ScoreKey); ok {
		row.RefScores, _ = decodeScores(v)
	}
	for _, k := range idKeys(opts) {
		if v, ok := lookup(ms, k); ok && string(v) != "null" {
			row.TaskID = idText(v)
			break
		}
	}
	{
		var id *string
		if opts.IDKey != "" {
			if v, ok := lookup(ms, opts.IDKey); ok {
				s := idText(v)
				id = &s
			}
		}
		var prompt, truth []byte
		for _, k := range promptKeys {
			if v, ok := lookup(ms, k); ok {
				prompt = v
				break
			}
		}
		if v, ok := lookup(ms, opts.GroundTruthKey); ok {
			truth = v
		}
		row.Identity = identityOf(id, prompt, truth)
		if in, ok := get(ms, dumpPromptKey); ok && jsonKind(in) == '"' {
			if _, ok := get(ms, dumpResponseKey); ok {
				step, _ := get(ms, "step")
				sum := sha256.Sum256(append(append(append([]byte{}, step...), 0), in...))
				row.Prompt = hex.EncodeToString(sum[:12])
			}
		}
	}
	field := func(name string) (json.RawMessage, error) {
		v, ok := get(ms, name)
		if !ok {
			return nil, fmt.Errorf("%s: field %q: missing (%w?)", where, name, ErrNotScored)
		}
		return v, nil
	}
	rv, err := field(ColReward)
	if err != nil {
		return nil, err
	}
	row.ResponseIsList = jsonKind(rv) == '['
	// Decode every column as a list, wrapping scalars.
	wrap := func(v json.RawMessage) json.RawMessage {
		if row.ResponseIsList {
			return v
		}
		return json.RawMessage("[" + string(v) + "]")
	}
	var rewards []*float64
	if err := json.Unmarshal(wrap(rv), &rewards); err != nil {
		return nil, fmt.Errorf("%s: field %q: %w", where, ColReward, err)
	}
	row.Rewards = make([]float64, len(rewards))
	for i, r := range rewards {
		if r == nil {
			row.Rewards[i] = nan()
		} else {
			row.Rewards[i] = *r
		}
	}
	cv, err := field(ColCaseResults)
	if err != nil {
		return nil, err
	}
	var cases [][]json.RawMessage
	if err := json.Unmarshal(wrap(cv), &cases); err != nil {
		return nil, fmt.Errorf("%s: field %q: %w", where, ColCaseResults, err)
	}
	row.CaseResults = make([][]int8, len(cases))
	for i, cs := range cases {
		row.CaseResults[i] = make([]int8, len(cs))
		for j, c := range cs {
			switch jsonKind(c) {
			case 't':
				row.CaseResults[i][j] = 1
			case 'f':
				row.CaseResults[i][j] = 0
			default:
				if err := json.Unmarshal(c, &row.CaseResults[i][j]); err != nil {
					return nil, fmt.Errorf("%s: field %q: %w", where, ColCaseResults, err)
				}
			}
		}
	}
	sv, err := field(ColCaseStatus)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(wrap(sv), &row.CaseStatus); err != nil {
		return nil, fmt.Errorf("%s: field %q: %w", where, ColCaseStatus, err)
	}
	ev, err := field(ColRewardError)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(wrap(ev), &row.Errors); err != nil {
		return nil, fmt.Errorf("%s: field %q: %w", where, ColRewardError, err)
	}
	if xv, ok := get(ms, ColRewardExact); ok {
		var exact []*float64
		if err := json.Unmarshal(wrap(xv), &exact); err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", where, ColRewardExact, err)
		}
		for _, x := range exact {
			if x == nil {
				row.RewardsExact = append(row.RewardsExact, nan())
			} else {
				row.RewardsExact = append(row.RewardsExact, *x)
			}
		}
	}
	return row, nil
}

type scoredParquet struct {
	path           string
	pf             *file.Reader
	rr             pqarrow.RecordReader
	cols           [4]int // reward, case_results, case_status, reward_error
	exact          int    // reward_exact, -1 when absent
	isList         bool
	ds, score      *fieldPath
	scoreList      bool
	id, prompt, gt *fieldPath // what the row's Identity is made of
	taskID         *fieldPath // where its TaskID is
	rec            arrow.RecordBatch
	pos, recOffset int
}

func openScoredParquet(path string, opts Options) (_ *scoredParquet, err error) {
	pf, fr, schema, err := openArrowFile(path, opts.BatchRows)
	if err != nil {
		return nil, fmt.Errorf("open scored output %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			pf.Close()
		}
	}()
	s := &scoredParquet{path: path, pf: pf}
	for k, name := range ResultColumns {
		idx := schema.FieldIndices(name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%s: no %q column (%w?)", path, name, ErrNotScored)
		}
		s.cols[k] = idx[0]
	}
	s.exact = -1
	if idx := schema.FieldIndices(ColRewardExact); len(idx) > 0 {
		s.exact = idx[0]
	}
	rt := schema.Field(s.cols[0]).Type
	switch {
	case isNumberType(rt):
	case listElem(rt) != nil && isNumberType(listElem(rt)):
		s.isList = true
	default:
		return nil, fmt.Errorf("%s: column %q is %s, want double or list<double>", path, ColReward, rt)
	}
	if ds, ok := resolveField(schema.Fields(), opts.DataSourceKey); ok && isStringType(ds.typ) {
		s.ds = &ds
	}
	if f, ok := resolveField(schema.Fields(), opts.IDKey); ok && opts.IDKey != "" {
		s.id = &f
	}
	for _, k := range idKeys(opts) {
		if f, ok := resolveField(schema.Fields(), k); ok {
			s.taskID = &f
			break
		}
	}
	for _, k := range promptKeys {
		if f, ok := resolveField(schema.Fields(), k); ok {
			s.prompt = &f
			break
		}
	}
	if f, ok := resolveField(schema.Fields(), opts.GroundTruthKey); ok {
		s.gt = &f
	}
	if sc, ok := resolveField(schema.Fields(), opts.ScoreKey); ok {
		switch {
		case isNumberType(sc.typ):
			s.score = &sc
		case listElem(sc.typ) != nil && isNumberType(listElem(sc.typ)):
			s.score, s.scoreList = &sc, true
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("open scored output %s: %w", path, err)
	}
	s.rr = rr
	return s, nil
}

func (s *scoredParquet) Close() error {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	if s.rr != nil {
		s.rr.Release()
		s.rr = nil
	}
	if s.pf != nil {
		err := s.pf.Close()
		s.pf = nil
		return err
	}
	return nil
}

func (s *scoredParquet) Next() (*ScoredRow, error) {
	for s.rec == nil || s.pos >= int(s.rec.NumRows()) {
		if s.rec != nil {
			s.recOffset += int(s.rec.NumRows())
			s.rec.Release()
			s.rec = nil
		}
		if s.rr == nil {
			return nil, errors.New("scored reader is closed")
		}
		rec, err := s.rr.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.path, err)
		}
		rec.Retain()
		s.rec, s.pos = rec, 0
	}
	i := s.pos
	s.pos++
	n := s.recOffset + i
	row := &ScoredRow{Index: n, File: s.path, Line: n + 1, ResponseIsList: s.isList}
	if s.ds != nil {
		if c := s.ds.chain(s.rec); !nullAt(c, i) {
			row.DataSource = stringAt(c[len(c)-1], i)
		}
	}
	value := func(f *fieldPath) []byte {
		if f == nil {
			return nil
		}
		c := f.chain(s.rec)
		if nullAt(c, i) {
			return []byte("null")
		}
		b, _ := json.Marshal(c[len(c)-1].GetOneForMarshal(i))
		return b
	}
	var id *string
	if s.id != nil {
		v := string(value(s.id))
		var str string
		if json.Unmarshal([]byte(v), &str) == nil {
			v = str
		}
		id = &v
	}
	row.Identity = identityOf(id, value(s.prompt), value(s.gt))
	if s.taskID != nil {
		if v := value(s.taskID); v != nil && string(v) != "null" {
			row.TaskID = idText(v)
		}
	}
	if s.score != nil {
		c := s.score.chain(s.rec)
		leaf := c[len(c)-1]
		switch {
		case nullAt(c, i):
			if !s.scoreList {
				row.RefScores = []float64{nan()}
			}
		case s.scoreList:
			l := leaf.(array.ListLike)
			start, end := l.ValueOffsets(i)
			for j := start; j < end; j++ {
				row.RefScores = append(row.RefScores, numberAt(l.ListValues(), int(j)))
			}
		default:
			row.RefScores = []float64{numberAt(leaf, i)}
		}
	}
	// Treat scalar columns as lists of one, so one loop reads both.
	type span struct {
		arr        arrow.Array
		start, end int
	}
	spanOf := func(col arrow.Array) span {
		if !s.isList {
			return span{col, i, i + 1}
		}
		if col.IsNull(i) {
			return span{col, 0, 0}
		}
		l := col.(array.ListLike)
		start, end := l.ValueOffsets(i)
		return span{l.ListValues(), int(start), int(end)}
	}
	rw := spanOf(s.rec.Column(s.cols[0]))
	for j := rw.start; j < rw.end; j++ {
		row.Rewards = append(row.Rewards, numberAt(rw.arr, j))
	}
	if s.exact >= 0 {
		xw := spanOf(s.rec.Column(s.exact))
		for j := xw.start; j < xw.end; j++ {
			row.RewardsExact = append(row.RewardsExact, numberAt(xw.arr, j))
		}
	}
	cr := spanOf(s.rec.Column(s.cols[1]))
	for j := cr.start; j < cr.end; j++ {
		var cs []int8
		if !cr.arr.IsNull(j) {
			l := cr.arr.(array.ListLike)
			start, end := l.ValueOffsets(j)
			vals := l.ListValues()
			for k := start; k < end; k++ {
				cs = append(cs, int8(numberAt(vals, int(k))))
			}
		}
		row.CaseResults = append(row.CaseResults, cs)
	}
	st := spanOf(s.rec.Column(s.cols[2]))
	for j := st.start; j < st.end; j++ {
		var ss []string
		if !st.arr.IsNull(j) {
			l := st.arr.(array.ListLike)
			start, end := l.ValueOffsets(j)
			vals := l.ListValues()
			for k := start; k < end; k++ {
				ss = append(ss, stringAt(vals, int(k)))
			}
		}
		row.CaseStatus = append(row.CaseStatus, ss)
	}
	er := spanOf(s.rec.Column(s.cols[3]))
	for j := er.start; j < er.end; j++ {
		if er.arr.IsNull(j) {
			row.Errors = append(row.Errors, nil)
			continue
		}
		e := stringAt(er.arr, j)
		row.Errors = append(row.Errors, &e)
	}
	return row, nil
}

func nan() float64 { return math.NaN() }

// idText is an id's JSON value as text: a string unquoted, a number (or
// anything else) as written.
func idText(v []byte) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	return s
}
