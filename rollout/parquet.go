package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// fieldPath locates a (possibly nested) column: idx[0] is a top-level column
// and each further index a field of the struct before it.
type fieldPath struct {
	name string
	idx  []int
	typ  arrow.DataType
}

// resolveField finds a dotted path in a list of fields: a field spelled
// exactly like the path wins, otherwise the path is walked through structs.
func resolveField(fields []arrow.Field, path string) (fieldPath, bool) {
	for i, f := range fields {
		if f.Name == path {
			return fieldPath{name: path, idx: []int{i}, typ: f.Type}, true
		}
	}
	for cut := 0; cut < len(path); cut++ {
		if path[cut] != '.' {
			continue
		}
		for i, f := range fields {
			st, ok := f.Type.(*arrow.StructType)
			if f.Name != path[:cut] || !ok {
				continue
			}
			if sub, ok := resolveField(st.Fields(), path[cut+1:]); ok {
				return fieldPath{name: path, idx: append([]int{i}, sub.idx...), typ: sub.typ}, true
			}
		}
	}
	return fieldPath{}, false
}

// chain returns the arrays along the path in rec: the top-level column, then
// each nested field.
func (p fieldPath) chain(rec arrow.RecordBatch) []arrow.Array {
	out := make([]arrow.Array, len(p.idx))
	out[0] = rec.Column(p.idx[0])
	for k := 1; k < len(p.idx); k++ {
		out[k] = out[k-1].(*array.Struct).Field(p.idx[k])
	}
	return out
}

// nullAt reports whether the value at row i is null or inside a null struct.
func nullAt(chain []arrow.Array, i int) bool {
	for _, a := range chain {
		if a.IsNull(i) {
			return true
		}
	}
	return false
}

// leafNames lists the column paths of a schema, nested fields dotted, for
// error messages.
func leafNames(fields []arrow.Field, prefix string) []string {
	var out []string
	for _, f := range fields {
		name := prefix + f.Name
		out = append(out, name)
		if st, ok := f.Type.(*arrow.StructType); ok {
			out = append(out, leafNames(st.Fields(), name+".")...)
		}
	}
	return out
}

// parquetReader streams a parquet file record batch by record batch.
type parquetReader struct {
	path   string
	pf     *file.Reader
	rr     pqarrow.RecordReader
	schema *arrow.Schema
	opts   Options

	resp     fieldPath
	respList bool
	gt       fieldPath
	ds       *fieldPath
	score    *fieldPath
	scoreLst bool
	lang     *fieldPath
	langLst  bool
	taskID   *fieldPath // where a row's TaskID is
	hasGT    bool       // gt was found (not so in a scored output read with Options.Scored)

	nextIndex int
}

// openArrowFile opens a parquet file for reading as Arrow record batches of
// batchRows rows, with its Arrow schema. The caller closes pf.
func openArrowFile(
	path string,
	batchRows int,
) (pf *file.Reader, fr *pqarrow.FileReader, schema *arrow.Schema, err error) {
	if pf, err = file.OpenParquetFile(path, false); err != nil {
		return nil, nil, nil, err
	}
	fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, memory.DefaultAllocator)
	if err == nil {
		schema, err = fr.Schema()
	}
	if err != nil {
		pf.Close()
		return nil, nil, nil, err
	}
	return pf, fr, schema, nil
}

func openParquet(path string, opts Options) (_ *parquetReader, err error) {
	pf, fr, schema, err := openArrowFile(path, opts.BatchRows)
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			pf.Close()
		}
	}()
	r := &parquetReader{path: path, pf: pf, schema: schema, opts: opts}
	if err := r.resolve(); err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", path, err)
	}
	r.rr = rr
	return r, nil
}

// resolve finds the columns the scorer needs and checks their types.
func (r *parquetReader) resolve() error {
	fields := r.schema.Fields()
	for _, f := range fields {
		if isReserved(f.Name) && !r.opts.Scored {
			return fmt.Errorf("%s: column %q: %w", r.path, f.Name, ErrReservedColumn)
		}
	}
	missing := func(what, key string) error {
		return &MissingColumnError{What: what, Key: key, Where: r.path, Have: leafNames(fields, "")}
	}

	resp, ok := resolveField(fields, r.opts.ResponseKey)
	if !ok {
		return missing("response", r.opts.ResponseKey)
	}
	switch {
	case isStringType(resp.typ):
	case listElem(resp.typ) != nil && isStringType(listElem(resp.typ)):
		r.respList = true
	default:
		return fmt.Errorf("%s: response column %q is %s, want a string or a list of strings", r.path, resp.name, resp.typ)
	}
	r.resp = resp

	gt, ok := resolveField(fields, r.opts.GroundTruthKey)
	switch {
	case !ok && r.opts.Scored:
		// Reading a scored output for its responses: no ground truth needed.
	case !ok:
		return missing("ground truth", r.opts.GroundTruthKey)
	default:
		switch gt.typ.(type) {
		case *arrow.StructType, *arrow.MapType:
		default:
			if !isStringType(gt.typ) {
				return fmt.Errorf("%s: ground truth column %q is %s, want a string or a struct", r.path, gt.name, gt.typ)
			}
		}
		r.gt, r.hasGT = gt, true
	}

	ds, ok := resolveField(fields, r.opts.DataSourceKey)
	if !ok && r.opts.RequireDataSource {
		return missing("data source", r.opts.DataSourceKey)
	}
	if ok {
		if !isStringType(ds.typ) {
			return fmt.Errorf("%s: data source column %q is %s, want a string", r.path, ds.name, ds.typ)
		}
		r.ds = &ds
	}
	if sc, ok := resolveField(fields, r.opts.ScoreKey); ok {
		switch {
		case isNumberType(sc.typ):
			r.score = &sc
		case listElem(sc.typ) != nil && isNumberType(listElem(sc.typ)):
			r.score, r.scoreLst = &sc, true
		default:
			r.opts.warn(
				"%s: score column %q is %s, not a number or a list of numbers: no reference scores",
				r.path,
				sc.name,
				sc.typ,
			)
		}
	}
	for _, k := range idKeys(r.opts) {
		if f, ok := resolveField(fields, k); ok {
			r.taskID = &f
			break
		}
	}
	if r.opts.LanguageKey != "" {
		lf, ok := resolveField(fields, r.opts.LanguageKey)
		switch {
		case !ok:
			return missing("language", r.opts.LanguageKey)
		case isStringType(lf.typ):
			r.lang = &lf
		case listElem(lf.typ) != nil && isStringType(listElem(lf.typ)):
			r.lang, r.langLst = &lf, true
		default:
			return fmt.Errorf("%s: language column %q is %s, want a string or a list of strings", r.path, lf.name, lf.typ)
		}
	}
	return nil
}

// Kind reports Parquet.
func (r *parquetReader) Kind() Kind { return Parquet }

// NumRows is the number of rows the file's metadata announces.
func (r *parquetReader) NumRows() (int64, bool) { return r.pf.NumRows(), true }

// Close releases the record reader and closes the file.
func (r *parquetReader) Close() error {
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	if r.pf != nil {
		err := r.pf.Close()
		r.pf = nil
		return err
	}
	return nil
}

// Next reads the next record batch and extracts its rows.
func (r *parquetReader) Next() (*Batch, error) {
	if r.rr == nil {
		return nil, errors.New("parquet reader is closed")
	}
	var rec arrow.RecordBatch
	for {
		var err error
		rec, err = r.rr.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.path, err)
		}
		if rec.NumRows() > 0 {
			break
		}
	}
	rec.Retain() // the record reader releases it on its next Read
	b := &Batch{Rows: make([]Row, rec.NumRows()), rec: rec}
	resp := r.resp.chain(rec)
	var gt, ds, score, lang []arrow.Array
	if r.hasGT {
		gt = r.gt.chain(rec)
	}
	if r.ds != nil {
		ds = r.ds.chain(rec)
	}
	if r.score != nil {
		score = r.score.chain(rec)
	}
	if r.lang != nil {
		lang = r.lang.chain(rec)
	}
	var ids []arrow.Array
	if r.taskID != nil {
		ids = r.taskID.chain(rec)
	}
	for i := range b.Rows {
		b.Rows[i] = r.row(i, resp, gt, ds, score)
		if ids != nil && !nullAt(ids, i) {
			v, _ := json.Marshal(ids[len(ids)-1].GetOneForMarshal(i))
			b.Rows[i].TaskID = idText(v)
		}
		if lang != nil && !nullAt(lang, i) {
			b.Rows[i].Languages = stringsAt(lang[len(lang)-1], i, r.langLst)
		}
	}
	r.nextIndex += len(b.Rows)
	return b, nil
}

func (r *parquetReader) row(i int, resp, gt, ds, score []arrow.Array) Row {
	line := r.nextIndex + i + 1
	row := Row{Index: r.nextIndex + i, File: r.path, Line: line, ResponseIsList: r.respList}
	rowErr := func(field, reason string) {
		if row.Err == nil {
			row.Err = &RowError{File: r.path, Line: line, Parq: true, Field: field, Reason: reason}
		}
	}

	if nullAt(resp, i) {
		rowErr(r.resp.name, "null")
	} else if leaf := resp[len(resp)-1]; r.respList {
		l := leaf.(array.ListLike)
		start, end := l.ValueOffsets(i)
		vals := l.ListValues()
		row.Responses = make([]string, 0, end-start)
		for j := start; j < end; j++ {
			if vals.IsNull(int(j)) {
				rowErr(r.resp.name, fmt.Sprintf("element %d is null", j-start))
				row.Responses = append(row.Responses, "")
				continue
			}
			row.Responses = append(row.Responses, stringAt(vals, int(j)))
		}
	} else {
		row.Responses = []string{stringAt(leaf, i)}
	}

	if ds != nil && !nullAt(ds, i) {
		row.DataSource = stringAt(ds[len(ds)-1], i)
	}

	if gt == nil {
		// no ground truth column (Options.Scored)
	} else if nullAt(gt, i) {
		rowErr(r.gt.name, "null")
	} else if leaf := gt[len(gt)-1]; isStringType(leaf.DataType()) {
		row.GroundTruth = appendQuoted(nil, stringAt(leaf, i))
	} else {
		row.GroundTruth = appendValueJSON(nil, leaf, i)
	}

	if score != nil {
		leaf := score[len(score)-1]
		if nullAt(score, i) {
			if !r.scoreLst {
				row.RefScores = []float64{math.NaN()}
			}
		} else if r.scoreLst {
			l := leaf.(array.ListLike)
			start, end := l.ValueOffsets(i)
			vals := l.ListValues()
			row.RefScores = make([]float64, 0, end-start)
			for j := start; j < end; j++ {
				row.RefScores = append(row.RefScores, numberAt(vals, int(j)))
			}
		} else {
			row.RefScores = []float64{numberAt(leaf, i)}
		}
	}
	return row
}

// NumRows returns the number of rows r will read when that is known without
// reading them (parquet metadata); ok is false otherwise.
func NumRows(r Reader) (n int64, ok bool) {
	if c, is := r.(interface{ NumRows() (int64, bool) }); is {
		return c.NumRows()
	}
	return 0, false
}

// stringsAt is row i of a string or list<string> column (nulls as "").
func stringsAt(leaf arrow.Array, i int, list bool) []string {
	if !list {
		return []string{stringAt(leaf, i)}
	}
	l := leaf.(array.ListLike)
	start, end := l.ValueOffsets(i)
	vals := l.ListValues()
	out := make([]string, 0, end-start)
	for j := start; j < end; j++ {
		if vals.IsNull(int(j)) {
			out = append(out, "")
			continue
		}
		out = append(out, stringAt(vals, int(j)))
	}
	return out
}
