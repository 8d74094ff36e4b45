package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/verdict"
)

// CasesSchema is the schema of a parquet cases file: one row per case,
// the columns named as the JSON lines' keys (README, "--cases-out"). What
// a JSON line leaves out (an omitted or null key) is null.
var CasesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "row", Type: arrow.PrimitiveTypes.Int64},
	{Name: "response_index", Type: arrow.PrimitiveTypes.Int64},
	{Name: "data_source", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "case_index", Type: arrow.PrimitiveTypes.Int64},
	{Name: "verdict", Type: arrow.PrimitiveTypes.Int8},
	{Name: "input", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "expected_output", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "api_request_error", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "stdout", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "stderr", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "exit_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "duration", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "compile_duration", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "compile_stderr", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "api_status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "compile_status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "run_status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "verdict_exact", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "checker", Type: checkerType, Nullable: true},
	{Name: "audit", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "attempts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "infra_error", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "shared", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "cached", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "starved_reruns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "cpu_time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "compile_cpu_time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "cpu_wait", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "swe", Type: sweType, Nullable: true},
}, nil)

// sweType is a repository task's outcome (score.SWEResult), its fields
// named as its JSON keys.
var sweType = arrow.StructOf(
	arrow.Field{Name: "instance_id", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "outcome", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "why", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "rules", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "resolved", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	arrow.Field{Name: "resolution", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "patch_applied", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	arrow.Field{Name: "applied_by", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "f2p_passed", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "f2p_total", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "p2p_passed", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "p2p_total", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "test_exit_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "flags", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
	)), Nullable: true},
	arrow.Field{Name: "apply_output", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "log", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "plan", Type: arrow.BinaryTypes.String, Nullable: true},
)

var checkerType = arrow.StructOf(
	arrow.Field{Name: "exit_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "output", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true},
)

// casesBatch is how many cases go into one row group.
const casesBatch = 4096

// casesParquet writes a cases file as parquet, a row group per casesBatch
// cases, each column from its field.
type casesParquet struct {
	path string
	af   *atomicfile.File
	fw   *pqarrow.FileWriter
	b    *array.RecordBuilder
	n    int
	prov json.RawMessage
}

func createCasesParquet(path string, prov json.RawMessage) (*casesParquet, error) {
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(false))
	fw, err := pqarrow.NewFileWriter(
		CasesSchema,
		writerOnly{af.Writer},
		props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()),
	)
	if err != nil {
		af.Abort()
		return nil, fmt.Errorf("create parquet cases file %s: %w", path, err)
	}
	return &casesParquet{
		path: path,
		af:   af,
		fw:   fw,
		b:    array.NewRecordBuilder(memory.DefaultAllocator, CasesSchema),
		prov: prov,
	}, nil
}

// writerOnly hides any Close method: the parquet writer closes its sink,
// and the atomic file is committed or aborted on its own.
type writerOnly struct{ io.Writer }

// The builders' helpers: a value, or null for a nil pointer. Strings are
// made valid UTF-8 as encoding/json makes them (each invalid byte becomes
// U+FFFD), so the two codecs hold the same text.
func str(b array.Builder, s string) { b.(*array.StringBuilder).Append(validUTF8(s)) }

func strPtr(b array.Builder, s *string) {
	if s == nil {
		b.AppendNull()
		return
	}
	str(b, *s)
}

// strOmit is a string that JSON leaves out when empty: null then.
func strOmit(b array.Builder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	str(b, s)
}

func i64(b array.Builder, n int) { b.(*array.Int64Builder).Append(int64(n)) }

func i64Ptr(b array.Builder, n *int) {
	if n == nil {
		b.AppendNull()
		return
	}
	i64(b, *n)
}

// i64Omit is a count that JSON leaves out when zero: null then.
func i64Omit(b array.Builder, n int) {
	if n == 0 {
		b.AppendNull()
		return
	}
	i64(b, n)
}

func f64Ptr(b array.Builder, x *float64) {
	if x == nil {
		b.AppendNull()
		return
	}
	b.(*array.Float64Builder).Append(*x)
}

// boolOmit is a flag that JSON leaves out when false: null then.
func boolOmit(b array.Builder, v bool) {
	if !v {
		b.AppendNull()
		return
	}
	b.(*array.BooleanBuilder).Append(true)
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// Write adds one case.
func (w *casesParquet) Write(c *Case) error {
	f := w.b.Fields()
	i64(f[0], c.Row)
	i64(f[1], c.ResponseIndex)
	str(f[2], c.DataSource)
	i64(f[3], c.CaseIndex)
	f[4].(*array.Int8Builder).Append(int8(c.Verdict))
	str(f[5], c.Input)
	str(f[6], c.ExpectedOutput)
	strPtr(f[7], c.APIRequestError)
	str(f[8], c.Status)
	strPtr(f[9], c.Stdout)
	strPtr(f[10], c.Stderr)
	i64Ptr(f[11], c.ExitCode)
	f64Ptr(f[12], c.Duration)
	f64Ptr(f[13], c.CompileDuration)
	strPtr(f[14], c.CompileStderr)
	strPtr(f[15], c.APIStatus)
	strPtr(f[16], c.CompileStatus)
	strPtr(f[17], c.RunStatus)
	if c.VerdictExact == nil {
		f[18].AppendNull()
	} else {
		f[18].(*array.Int8Builder).Append(int8(*c.VerdictExact))
	}
	cb := f[19].(*array.StructBuilder)
	if c.Checker == nil {
		cb.AppendNull()
	} else {
		cb.Append(true)
		i64Ptr(cb.FieldBuilder(0), c.Checker.ExitCode)
		strOmit(cb.FieldBuilder(1), c.Checker.Output)
		strOmit(cb.FieldBuilder(2), c.Checker.Error)
	}
	lb := f[20].(*array.ListBuilder)
	if c.Audit == nil {
		lb.AppendNull()
	} else {
		lb.Append(true)
		for _, a := range c.Audit {
			str(lb.ValueBuilder(), a)
		}
	}
	i64(f[21], c.Attempts)
	f[22].(*array.BooleanBuilder).Append(c.Infra)
	boolOmit(f[23], c.Shared)
	boolOmit(f[24], c.Cached)
	i64Omit(f[25], c.StarvedReruns)
	f64Ptr(f[26], c.CPUTime)
	f64Ptr(f[27], c.CompileCPUTime)
	f64Ptr(f[28], c.CPUWait)
	writeSWE(f[29].(*array.StructBuilder), c.SWE)
	if w.n++; w.n >= casesBatch {
		return w.flush()
	}
	return nil
}

func writeSWE(b *array.StructBuilder, r *score.SWEResult) {
	if r == nil {
		b.AppendNull()
		return
	}
	b.Append(true)
	f := b.FieldBuilder
	str(f(0), r.InstanceID)
	str(f(1), r.Outcome)
	strOmit(f(2), r.Why)
	str(f(3), r.Rules)
	f(4).(*array.BooleanBuilder).Append(r.Resolved)
	strOmit(f(5), r.Resolution)
	f(6).(*array.BooleanBuilder).Append(r.PatchApplied)
	strOmit(f(7), r.AppliedBy)
	i64(f(8), r.F2PPassed)
	i64(f(9), r.F2PTotal)
	i64(f(10), r.P2PPassed)
	i64(f(11), r.P2PTotal)
	i64(f(12), r.ExitCode)
	lb := f(13).(*array.ListBuilder)
	if len(r.Flags) == 0 {
		lb.AppendNull()
	} else {
		lb.Append(true)
		sb := lb.ValueBuilder().(*array.StructBuilder)
		for _, fl := range r.Flags {
			sb.Append(true)
			str(sb.FieldBuilder(0), fl.Kind)
			str(sb.FieldBuilder(1), fl.Path)
		}
	}
	strOmit(f(14), r.ApplyOutput)
	strOmit(f(15), r.Log)
	strOmit(f(16), r.Plan)
}

// readSWE is the outcome in row i of the swe column, nil where it is null.
func readSWE(a arrow.Array, i int) *score.SWEResult {
	st, ok := a.(*array.Struct)
	if !ok || st.IsNull(i) {
		return nil
	}
	s := func(k int) string {
		if v, ok := st.Field(k).(*array.String); ok && !v.IsNull(i) {
			return v.Value(i)
		}
		return ""
	}
	n := func(k int) int {
		if v, ok := st.Field(k).(*array.Int64); ok && !v.IsNull(i) {
			return int(v.Value(i))
		}
		return 0
	}
	b := func(k int) bool {
		v, ok := st.Field(k).(*array.Boolean)
		return ok && !v.IsNull(i) && v.Value(i)
	}
	r := &score.SWEResult{InstanceID: s(0), Outcome: s(1), Why: s(2), Rules: s(3), Resolved: b(4), Resolution: s(5),
		PatchApplied: b(6), AppliedBy: s(7), F2PPassed: n(8), F2PTotal: n(9), P2PPassed: n(10), P2PTotal: n(11),
		ExitCode: n(12), ApplyOutput: s(14), Log: s(15), Plan: s(16)}
	if l, ok := st.Field(13).(*array.List); ok && !l.IsNull(i) {
		start, end := l.ValueOffsets(i)
		if vals, ok := l.ListValues().(*array.Struct); ok {
			kinds, _ := vals.Field(0).(*array.String)
			paths, _ := vals.Field(1).(*array.String)
			for k := start; k < end && kinds != nil && paths != nil; k++ {
				r.Flags = append(r.Flags, swe.Flag{Kind: kinds.Value(int(k)), Path: paths.Value(int(k))})
			}
		}
	}
	return r
}

func (w *casesParquet) flush() error {
	if w.n == 0 {
		return nil
	}
	rec := w.b.NewRecordBatch()
	defer rec.Release()
	w.n = 0
	if err := w.fw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("write parquet cases file %s: %w", w.path, err)
	}
	return nil
}

// Commit writes what is buffered and the provenance, and puts the file in
// place.
func (w *casesParquet) Commit() error {
	defer w.b.Release()
	err := w.flush()
	if err == nil && w.prov != nil {
		err = w.fw.AppendKeyValueMetadata(ProvenanceKey, string(w.prov))
	}
	if cerr := w.fw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.af.Abort()
		return err
	}
	return w.af.Commit()
}

// Abort drops the file.
func (w *casesParquet) Abort() {
	w.b.Release()
	w.af.Abort()
}

// readCasesParquet reads a parquet cases file column by column into
// cases. A column the file lacks (one written before it existed) reads as
// its zero value.
func readCasesParquet(path string, fn func(*Case) error) (json.RawMessage, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	defer pf.Close()
	prov := provenanceOf(pf)
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: casesBatch}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	defer rr.Release()
	no := 0
	for {
		rec, err := rr.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			return prov, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cases file %s: %w", path, err)
		}
		cols := columns{rec: rec, at: map[string]int{}}
		for i, f := range rec.Schema().Fields() {
			cols.at[f.Name] = i
		}
		for i := range int(rec.NumRows()) {
			no++
			c, err := cols.caseAt(i)
			if err != nil {
				return nil, fmt.Errorf("cases file %s: case %d: %w", path, no, err)
			}
			if err := fn(c); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, no, err)
			}
		}
	}
}

func provenanceOf(pf *file.Reader) json.RawMessage {
	if v := pf.MetaData().KeyValueMetadata().FindValue(ProvenanceKey); v != nil {
		return json.RawMessage(*v)
	}
	return nil
}

// columns reads one record batch's columns by name.
type columns struct {
	rec arrow.RecordBatch
	at  map[string]int
	err error
}

// col is the named column, or nil when the file lacks it or its value at
// row i is null.
func (cs *columns) col(name string, i int) arrow.Array {
	k, ok := cs.at[name]
	if !ok {
		return nil
	}
	if a := cs.rec.Column(k); !a.IsNull(i) {
		return a
	}
	return nil
}

func (cs *columns) str(name string, i int) *string {
	switch a := cs.col(name, i).(type) {
	case nil:
		return nil
	case *array.String:
		s := a.Value(i)
		return &s
	default:
		cs.err = fmt.Errorf("column %s is %s, want a string", name, a.DataType())
		return nil
	}
}

func (cs *columns) int(name string, i int) *int {
	var n int
	switch a := cs.col(name, i).(type) {
	case nil:
		return nil
	case *array.Int64:
		n = int(a.Value(i))
	case *array.Int32:
		n = int(a.Value(i))
	case *array.Int8:
		n = int(a.Value(i))
	default:
		cs.err = fmt.Errorf("column %s is %s, want an integer", name, a.DataType())
		return nil
	}
	return &n
}

func (cs *columns) float(name string, i int) *float64 {
	switch a := cs.col(name, i).(type) {
	case nil:
		return nil
	case *array.Float64:
		x := a.Value(i)
		return &x
	default:
		cs.err = fmt.Errorf("column %s is %s, want a float64", name, a.DataType())
		return nil
	}
}

func (cs *columns) bool(name string, i int) bool {
	switch a := cs.col(name, i).(type) {
	case nil:
		return false
	case *array.Boolean:
		return a.Value(i)
	default:
		cs.err = fmt.Errorf("column %s is %s, want a boolean", name, a.DataType())
		return false
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (cs *columns) caseAt(i int) (*Case, error) {
	c := &Case{
		Row:           deref(cs.int("row", i)),
		ResponseIndex: deref(cs.int("response_index", i)),
		DataSource:    deref(cs.str("data_source", i)),
	}
	c.Case = verdict.Case{
		Verdict:         verdict.Code(deref(cs.int("verdict", i))),
		CaseIndex:       deref(cs.int("case_index", i)),
		Input:           deref(cs.str("input", i)),
		ExpectedOutput:  deref(cs.str("expected_output", i)),
		APIRequestError: cs.str("api_request_error", i),
		Status:          deref(cs.str("status", i)),
		Stdout:          cs.str("stdout", i),
		Stderr:          cs.str("stderr", i),
		ExitCode:        cs.int("exit_code", i),
		Duration:        cs.float("duration", i),
		CompileDuration: cs.float("compile_duration", i),
		CompileStderr:   cs.str("compile_stderr", i),
		APIStatus:       cs.str("api_status", i),
		CompileStatus:   cs.str("compile_status", i),
		RunStatus:       cs.str("run_status", i),
		Attempts:        deref(cs.int("attempts", i)),
		Infra:           cs.bool("infra_error", i),
		Shared:          cs.bool("shared", i),
		Cached:          cs.bool("cached", i),
		StarvedReruns:   deref(cs.int("starved_reruns", i)),
		CPUTime:         cs.float("cpu_time", i),
		CompileCPUTime:  cs.float("compile_cpu_time", i),
		CPUWait:         cs.float("cpu_wait", i),
	}
	if v := cs.int("verdict_exact", i); v != nil {
		e := verdict.Code(*v)
		c.VerdictExact = &e
	}
	if a, ok := cs.col("checker", i).(*array.Struct); ok {
		ck := &verdict.Checker{}
		if e, ok := a.Field(0).(*array.Int64); ok && !e.IsNull(i) {
			n := int(e.Value(i))
			ck.ExitCode = &n
		}
		if o, ok := a.Field(1).(*array.String); ok && !o.IsNull(i) {
			ck.Output = o.Value(i)
		}
		if e, ok := a.Field(2).(*array.String); ok && !e.IsNull(i) {
			ck.Error = e.Value(i)
		}
		c.Checker = ck
	}
	if a := cs.col("swe", i); a != nil {
		c.SWE = readSWE(a, i)
	}
	if a, ok := cs.col("audit", i).(*array.List); ok {
		start, end := a.ValueOffsets(i)
		vals, _ := a.ListValues().(*array.String)
		c.Audit = []string{}
		for k := start; k < end && vals != nil; k++ {
			c.Audit = append(c.Audit, vals.Value(int(k)))
		}
	}
	return c, cs.err
}
