package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/verl-score/verl-score/atomicfile"
)

// CasesSchema is the schema of a --cases-out file written as parquet: one
// row per case, the columns named as the JSON lines' keys (docs: README,
// "--cases-out"). A key a line lacks is null.
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
	{Name: "checker", Type: arrow.StructOf(
		arrow.Field{Name: "exit_code", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "output", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true},
	), Nullable: true},
	{Name: "audit", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "attempts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "infra_error", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "shared", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "cached", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "starved_reruns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "cpu_time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "compile_cpu_time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "cpu_wait", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// casesBatch is how many cases go into one row group.
const casesBatch = 4096

// CasesParquet writes a cases file as parquet from the JSON lines a run
// would write, through an atomic file.
type CasesParquet struct {
	af  *atomicfile.File
	fw  *pqarrow.FileWriter
	buf bytes.Buffer
	n   int
	kv  [][2]string
}

// CreateCasesParquet starts a parquet cases file at path.
func CreateCasesParquet(path string) (*CasesParquet, error) {
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(false))
	fw, err := pqarrow.NewFileWriter(CasesSchema, writerOnly{af.Writer}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		af.Abort()
		return nil, fmt.Errorf("create parquet cases file: %w", err)
	}
	return &CasesParquet{af: af, fw: fw}, nil
}

// WriteLine adds one case, given as the JSON object of a cases line.
func (w *CasesParquet) WriteLine(line []byte) error {
	w.buf.Write(line)
	w.buf.WriteByte('\n')
	w.n++
	if w.n >= casesBatch {
		return w.flush()
	}
	return nil
}

func (w *CasesParquet) flush() error {
	if w.n == 0 {
		return nil
	}
	rd := array.NewJSONReader(&w.buf, CasesSchema, array.WithChunk(w.n))
	defer rd.Release()
	for rd.Next() {
		if err := w.fw.WriteBuffered(rd.RecordBatch()); err != nil {
			return fmt.Errorf("write parquet cases file: %w", err)
		}
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("write parquet cases file: %w", err)
	}
	w.buf.Reset()
	w.n = 0
	return nil
}

// SetKeyValue adds a key-value metadata entry (written at Commit).
func (w *CasesParquet) SetKeyValue(k, v string) { w.kv = append(w.kv, [2]string{k, v}) }

// Commit writes what is buffered and puts the file in place.
func (w *CasesParquet) Commit() error {
	err := w.flush()
	for _, kv := range w.kv {
		if err == nil {
			err = w.fw.AppendKeyValueMetadata(kv[0], kv[1])
		}
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
func (w *CasesParquet) Abort() { w.af.Abort() }

// ReadCasesParquet calls fn with each case of a parquet cases file as a
// JSON object (the line a JSONL cases file would hold), and returns the
// file's key-value metadata.
func ReadCasesParquet(path string, fn func(line []byte) error) (map[string]string, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	defer pf.Close()
	kv := map[string]string{}
	md := pf.MetaData().KeyValueMetadata()
	for i, k := range md.Keys() {
		kv[k] = md.Values()[i]
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: casesBatch}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cases file %s: %w", path, err)
	}
	defer rr.Release()
	for {
		rec, err := rr.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			return kv, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cases file %s: %w", path, err)
		}
		for i := range int(rec.NumRows()) {
			obj := make(map[string]any, rec.NumCols())
			for c, f := range rec.Schema().Fields() {
				if col := rec.Column(c); !col.IsNull(i) {
					obj[f.Name] = col.GetOneForMarshal(i)
				}
			}
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			if err := fn(b); err != nil {
				return nil, err
			}
		}
	}
}
