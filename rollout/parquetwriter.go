package rollout

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/verl-score/verl-score/atomicfile"
)

// resultFields are the appended fields; in list mode each is a list
// aligned with the responses.
func resultFields(isList bool, wo WriteOptions) []arrow.Field {
	reward := arrow.DataType(arrow.PrimitiveTypes.Float64)
	cases := arrow.DataType(arrow.ListOf(arrow.PrimitiveTypes.Int8))
	status := arrow.DataType(arrow.ListOf(arrow.BinaryTypes.String))
	rerr := arrow.DataType(arrow.BinaryTypes.String)
	if isList {
		reward, cases, status, rerr = arrow.ListOf(reward), arrow.ListOf(cases), arrow.ListOf(status), arrow.ListOf(rerr)
	}
	fields := []arrow.Field{
		{Name: ColReward, Type: reward, Nullable: true},
		{Name: ColCaseResults, Type: cases, Nullable: true},
		{Name: ColCaseStatus, Type: status, Nullable: true},
		{Name: ColRewardError, Type: rerr, Nullable: true},
	}
	if wo.RewardExact {
		fields = append(fields, arrow.Field{Name: ColRewardExact, Type: reward, Nullable: true})
	}
	return fields
}

// writerOnly hides any Close method: the parquet writer closes its sink,
// and the atomic file must stay open until Commit.
type writerOnly struct{ io.Writer }

// parquetWriter writes a parquet file, one row group per batch: nothing is
// buffered beyond the batch, so memory stays bounded by the batch size (a
// larger Options.BatchRows gives larger row groups). Buffering several
// batches into bigger row groups measured worse (peak heap x3).
type parquetWriter struct {
	af     *atomicfile.File
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
	isList bool
	nIn    int             // number of input columns
	infer  []inferredField // for JSONL inputs: the inferred input columns
	mem    memory.Allocator
	wo     WriteOptions
	// kv is the input parquet's key-value metadata (a dataset card's
	// "huggingface" entry, say), kept in the output; not ARROW:schema,
	// which describes the input's columns, not ours.
	kv [][2]string
	// extra are key-value pairs of our own (SetKeyValue), written at Commit.
	extra [][2]string
}

// SetKeyValue adds a key-value metadata entry to the file (at Commit).
func (w *parquetWriter) SetKeyValue(k, v string) { w.extra = append(w.extra, [2]string{k, v}) }

func newParquetWriter(af *atomicfile.File, src Reader, wo WriteOptions) (*parquetWriter, error) {
	w := &parquetWriter{af: af, mem: memory.DefaultAllocator, wo: wo}
	if pr, ok := src.(*parquetReader); ok {
		if md := pr.pf.MetaData(); md != nil {
			kv := md.KeyValueMetadata()
			for i, k := range kv.Keys() {
				if k != "ARROW:schema" {
					w.kv = append(w.kv, [2]string{k, kv.Values()[i]})
				}
			}
		}
		if err := w.start(pr.schema.Fields(), pr.respList); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// start opens the parquet writer for the given input fields.
func (w *parquetWriter) start(in []arrow.Field, isList bool) error {
	fields := append(append([]arrow.Field{}, in...), resultFields(isList, w.wo)...)
	w.schema = arrow.NewSchema(fields, nil)
	w.isList = isList
	w.nIn = len(in)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(w.mem),
		parquet.WithStats(false), // min/max of long texts would bloat the footer
	)
	fw, err := pqarrow.NewFileWriter(w.schema, writerOnly{w.af.Writer}, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(w.mem)))
	if err != nil {
		return fmt.Errorf("create parquet writer: %w", err)
	}
	for _, kv := range w.kv {
		if err := fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			return fmt.Errorf("create parquet writer: keep metadata %q: %w", kv[0], err)
		}
	}
	w.fw = fw
	return nil
}

func (w *parquetWriter) Write(b *Batch, res []RowResult) error {
	if len(res) != len(b.Rows) {
		return fmt.Errorf("write: %d results for %d rows", len(res), len(b.Rows))
	}
	if len(b.Rows) == 0 {
		return nil
	}
	var inCols []arrow.Array
	switch {
	case b.rec != nil:
		if w.fw == nil {
			isList := false
			if len(b.Rows) > 0 {
				isList = b.Rows[0].ResponseIsList
			}
			if err := w.start(b.rec.Schema().Fields(), isList); err != nil {
				return err
			}
		}
		if w.infer != nil || int(b.rec.NumCols()) != w.nIn {
			return errors.New("write: batch does not match the output's input columns")
		}
		inCols = b.rec.Columns()
	case b.lines != nil:
		if w.fw == nil {
			inf, err := inferColumns(b.lines)
			if err != nil {
				return err
			}
			w.infer = inf
			in := make([]arrow.Field, len(inf))
			for i, f := range inf {
				in[i] = f.field()
			}
			if err := w.start(in, listModeOf(b.Rows)); err != nil {
				return err
			}
		}
		if w.infer == nil && w.nIn > 0 {
			return errors.New("write: JSONL batch for a parquet input's output")
		}
		cols, err := buildInferred(w.mem, w.infer, b)
		if err != nil {
			return err
		}
		defer releaseAll(cols)
		inCols = cols
	default:
		return errors.New("write: batch holds no input rows")
	}

	resCols, err := buildResults(w.mem, b.Rows, res, w.isList, w.wo)
	if err != nil {
		return err
	}
	defer releaseAll(resCols)
	cols := append(append([]arrow.Array{}, inCols...), resCols...)
	rec := array.NewRecordBatch(w.schema, cols, int64(len(b.Rows)))
	defer rec.Release()
	if err := w.fw.Write(rec); err != nil {
		return fmt.Errorf("write parquet: %w", err)
	}
	return nil
}

func (w *parquetWriter) Commit() error {
	if w.fw == nil {
		// No rows at all: still a valid file, with the result columns.
		if err := w.start(nil, false); err != nil {
			w.af.Abort()
			return err
		}
	}
	for _, kv := range w.extra {
		if err := w.fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			w.af.Abort()
			return fmt.Errorf("write parquet: metadata %q: %w", kv[0], err)
		}
	}
	if err := w.fw.Close(); err != nil {
		w.af.Abort()
		return fmt.Errorf("write parquet: %w", err)
	}
	return w.af.Commit()
}

func (w *parquetWriter) Abort() error {
	return w.af.Abort()
}

// listModeOf decides, from the first row without an error, whether a JSONL
// input's result columns are lists.
func listModeOf(rows []Row) bool {
	for _, r := range rows {
		if r.Err == nil {
			return r.ResponseIsList
		}
	}
	for _, r := range rows {
		if r.ResponseIsList {
			return true
		}
	}
	return false
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		a.Release()
	}
}

// buildResults builds the result columns of a batch.
func buildResults(
	mem memory.Allocator,
	rows []Row,
	res []RowResult,
	isList bool,
	wo WriteOptions,
) ([]arrow.Array, error) {
	reward := array.NewFloat64Builder(mem)
	cases := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int8)
	status := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	rerr := array.NewStringBuilder(mem)
	builders := []array.Builder{reward, cases, status, rerr}
	var exact *array.Float64Builder
	if wo.RewardExact {
		exact = array.NewFloat64Builder(mem)
		builders = append(builders, exact)
	}
	var outer []*array.ListBuilder
	if isList {
		outer = []*array.ListBuilder{
			array.NewListBuilder(mem, arrow.PrimitiveTypes.Float64),
			array.NewListBuilder(mem, arrow.ListOf(arrow.PrimitiveTypes.Int8)),
			array.NewListBuilder(mem, arrow.ListOf(arrow.BinaryTypes.String)),
			array.NewListBuilder(mem, arrow.BinaryTypes.String),
		}
		if wo.RewardExact {
			outer = append(outer, array.NewListBuilder(mem, arrow.PrimitiveTypes.Float64))
			exact = outer[4].ValueBuilder().(*array.Float64Builder)
		}
		reward = outer[0].ValueBuilder().(*array.Float64Builder)
		cases = outer[1].ValueBuilder().(*array.ListBuilder)
		status = outer[2].ValueBuilder().(*array.ListBuilder)
		rerr = outer[3].ValueBuilder().(*array.StringBuilder)
		for _, b := range builders {
			b.Release()
		}
		builders = builders[:0]
		for _, o := range outer {
			builders = append(builders, o)
		}
	}
	defer func() {
		for _, b := range builders {
			b.Release()
		}
	}()
	caseVals := cases.ValueBuilder().(*array.Int8Builder)
	statusVals := status.ValueBuilder().(*array.StringBuilder)
	for i, row := range rows {
		ents, err := entries(row, res[i], isList)
		if err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		for _, o := range outer {
			o.Append(true)
		}
		for _, e := range ents {
			reward.Append(e.reward)
			if exact != nil {
				exact.Append(e.exact)
			}
			cases.Append(true)
			caseVals.AppendValues(e.cases, nil)
			status.Append(true)
			statusVals.AppendValues(e.status, nil)
			if e.err == nil {
				rerr.AppendNull()
			} else {
				rerr.Append(*e.err)
			}
		}
	}
	out := make([]arrow.Array, len(builders))
	for i, b := range builders {
		out[i] = b.NewArray()
	}
	return out, nil
}
