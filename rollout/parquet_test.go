package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readAll reads every batch of r.
func readAll(t *testing.T, r Reader) []*Batch {
	t.Helper()
	var out []*Batch
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, b)
	}
}

func rowsOf(bs []*Batch) []Row {
	var out []Row
	for _, b := range bs {
		out = append(out, b.Rows...)
	}
	return out
}

// fakeResults makes a distinct, checkable result for every response:
// cases cycle through every verdict, and every third response has an error.
func fakeResults(rows []Row) []RowResult {
	verdicts := []int8{1, 0, -1, -2, -3, -4}
	out := make([]RowResult, len(rows))
	for i, row := range rows {
		if row.Err != nil {
			continue // not scored: the writer fills in the row's error
		}
		var r RowResult
		for k := range row.Responses {
			n := (row.Index+k)%4 + 1
			var cases []int8
			var status []string
			for c := 0; c < n; c++ {
				v := verdicts[(row.Index+k+c)%len(verdicts)]
				cases = append(cases, v)
				status = append(status, fmt.Sprintf("status-%d-%d-%d", row.Index, k, c))
			}
			r.Rewards = append(r.Rewards, float64(row.Index)+float64(k)/10)
			r.CaseResults = append(r.CaseResults, cases)
			r.CaseStatus = append(r.CaseStatus, status)
			var e *string
			if (row.Index+k)%3 == 0 {
				s := fmt.Sprintf("error %d/%d", row.Index, k)
				e = &s
			}
			r.Errors = append(r.Errors, e)
		}
		out[i] = r
	}
	return out
}

// scoreAll reads src batch by batch and writes fakeResults to dst.
func scoreAll(t *testing.T, src Reader, dst Writer) []Row {
	t.Helper()
	var rows []Row
	for _, b := range readAll(t, src) {
		if err := dst.Write(b, fakeResults(b.Rows)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		rows = append(rows, b.Rows...)
	}
	if err := dst.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rows
}

func TestParquetReadsVerlSchema(t *testing.T) {
	want := loadFixtureRows(t)
	opts := DefaultOptions()
	opts.BatchRows = 4
	r, err := Open(fixtureParquet, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Kind(); got != Parquet {
		t.Errorf("Kind() = %v, want parquet", got)
	}
	if n, ok := NumRows(r); !ok || n != int64(len(want)) {
		t.Errorf("NumRows = %d, %v; want %d, true", n, ok, len(want))
	}
	batches := readAll(t, r)
	if len(batches) < len(want)/4 {
		t.Errorf("got %d batches of at most 4 rows for %d rows", len(batches), len(want))
	}
	for _, b := range batches {
		if len(b.Rows) > 4 {
			t.Errorf("batch of %d rows, want at most 4", len(b.Rows))
		}
	}
	rows := rowsOf(batches)
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	for i, row := range rows {
		w := want[i]
		if row.Index != i || row.Line != i+1 || row.File != fixtureParquet {
			t.Errorf(
				"row %d: Index, Line, File = %d, %d, %q; want %d, %d, %q",
				i,
				row.Index,
				row.Line,
				row.File,
				i,
				i+1,
				fixtureParquet,
			)
		}
		if row.Err != nil {
			t.Errorf("row %d: unexpected error %v", i, row.Err)
		}
		if row.DataSource != w.DataSource {
			t.Errorf("row %d: DataSource = %q, want %q", i, row.DataSource, w.DataSource)
		}
		if !row.ResponseIsList || !reflect.DeepEqual(row.Responses, w.Responses) {
			t.Errorf("row %d: responses (list %v) differ from the input's %d", i, row.ResponseIsList, len(w.Responses))
		}
		var gt string
		if err := json.Unmarshal(row.GroundTruth, &gt); err != nil {
			t.Fatalf("row %d: ground truth is not a JSON string: %v", i, err)
		}
		if gt != w.RewardModel.GroundTruth {
			t.Errorf("row %d: ground truth differs from the input's", i)
		}
		if row.RefScores != nil {
			t.Errorf("row %d: RefScores = %v, want nil (no score column)", i, row.RefScores)
		}
	}
}

// TestParquetLargeTypesAndStructGroundTruth reads large_string and
// large_list columns, a ground truth stored as a struct, a single-string
// response column and a score column.
func TestParquetLargeTypesAndStructGroundTruth(t *testing.T) {
	mem := memory.DefaultAllocator
	lstr := arrow.BinaryTypes.LargeString
	gtType := arrow.StructOf(
		arrow.Field{Name: "inputs", Type: arrow.LargeListOf(lstr), Nullable: true},
		arrow.Field{Name: "outputs", Type: arrow.LargeListOf(lstr), Nullable: true},
		arrow.Field{Name: "fn_name", Type: lstr, Nullable: true},
	)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: lstr, Nullable: true},
		{Name: "rm", Type: arrow.StructOf(arrow.Field{Name: "gt", Type: gtType, Nullable: true}), Nullable: true},
		{Name: "completion", Type: lstr, Nullable: true},
		{Name: "ref", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.LargeStringBuilder).AppendValues([]string{"taco", "apps", ""}, []bool{true, true, false})
	rm := b.Field(1).(*array.StructBuilder)
	gt := rm.FieldBuilder(0).(*array.StructBuilder)
	// row 1: a full ground truth; row 2: gt null; row 3: rm null
	rm.Append(true)
	gt.Append(true)
	in := gt.FieldBuilder(0).(*array.LargeListBuilder)
	in.Append(true)
	in.ValueBuilder().(*array.LargeStringBuilder).AppendValues([]string{"1 2\n", "<x>"}, nil)
	out := gt.FieldBuilder(1).(*array.LargeListBuilder)
	out.Append(true)
	out.ValueBuilder().(*array.LargeStringBuilder).AppendValues([]string{"3\n", "\"q\""}, nil)
	gt.FieldBuilder(2).(*array.LargeStringBuilder).AppendNull()
	rm.Append(true)
	gt.AppendNull()
	rm.AppendNull()
	b.Field(2).(*array.LargeStringBuilder).AppendValues([]string{"print(3)", "x", ""}, []bool{true, true, false})
	b.Field(3).(*array.Float32Builder).AppendValues([]float32{1, 0.5, 0}, []bool{true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "large.parquet")
	writeParquetRecord(t, path, rec, 100)

	opts := Options{ResponseKey: "completion", DataSourceKey: "src", GroundTruthKey: "rm.gt", ScoreKey: "ref"}
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows := rowsOf(readAll(t, r))
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	if got, want := string(rows[0].GroundTruth),
		`{"inputs":["1 2\n","<x>"],"outputs":["3\n","\"q\""],"fn_name":null}`; got != want {
		t.Errorf("struct ground truth = %s, want %s", got, want)
	}
	if rows[0].ResponseIsList || !reflect.DeepEqual(rows[0].Responses, []string{"print(3)"}) {
		t.Errorf("row 1 responses = %q (list %v), want [print(3)] (scalar)", rows[0].Responses, rows[0].ResponseIsList)
	}
	if rows[0].DataSource != "taco" || rows[1].DataSource != "apps" || rows[2].DataSource != "" {
		t.Errorf("data sources = %q %q %q, want taco apps \"\"", rows[0].DataSource, rows[1].DataSource, rows[2].DataSource)
	}
	if !reflect.DeepEqual(rows[1].RefScores, []float64{0.5}) || !math.IsNaN(rows[2].RefScores[0]) {
		t.Errorf("ref scores = %v, %v; want [0.5], [NaN]", rows[1].RefScores, rows[2].RefScores)
	}
	wantErr := []string{
		"",
		path + `: row 2: field "rm.gt": null`,
		path + `: row 3: field "completion": null`,
	}
	for i, w := range wantErr {
		got := ""
		if rows[i].Err != nil {
			got = rows[i].Err.Error()
		}
		if got != w {
			t.Errorf("row %d error = %q, want %q", i+1, got, w)
		}
	}
}

func TestParquetMissingColumns(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{
			"response",
			Options{ResponseKey: "answers"},
			[]string{`no response column "answers"`, "reward_model.ground_truth", "responses"},
		},
		{
			"ground truth",
			Options{GroundTruthKey: "reward_model.tests"},
			[]string{`no ground truth column "reward_model.tests"`, "extra_info.index"},
		},
		{"wrong type", Options{ResponseKey: "extra_info"}, []string{`response column "extra_info" is struct`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(fixtureParquet, tt.opts)
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if tt.name != "wrong type" && !errors.Is(err, ErrMissingColumn) {
				t.Errorf("error %v is not ErrMissingColumn", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// readTable reads a parquet file whole with the plain Arrow reader.
func readTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestParquetRoundTrip(t *testing.T) {
	opts := DefaultOptions()
	opts.BatchRows = 5
	src, err := Open(fixtureParquet, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	outPath := filepath.Join(t.TempDir(), "scored.parquet")
	w, err := Create(outPath, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := scoreAll(t, src, w)
	results := fakeResults(rows)

	in := readTable(t, fixtureParquet)
	defer in.Release()
	out := readTable(t, outPath)
	defer out.Release()

	// Schema: the input's fields, then the four documented ones.
	wantFields := append(append([]arrow.Field{}, in.Schema().Fields()...),
		arrow.Field{Name: "reward", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
		arrow.Field{Name: "case_results", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int8)), Nullable: true},
		arrow.Field{Name: "case_status", Type: arrow.ListOf(arrow.ListOf(arrow.BinaryTypes.String)), Nullable: true},
		arrow.Field{Name: "reward_error", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	)
	if got := out.Schema().Fields(); len(got) != len(wantFields) {
		t.Fatalf("output has %d columns, want %d", len(got), len(wantFields))
	}
	for i, wf := range wantFields {
		gf := out.Schema().Field(i)
		if gf.Name != wf.Name || !arrow.TypeEqual(gf.Type, wf.Type) {
			t.Errorf("column %d = %s %s, want %s %s", i, gf.Name, gf.Type, wf.Name, wf.Type)
		}
	}
	if out.NumRows() != in.NumRows() {
		t.Fatalf("output has %d rows, want %d", out.NumRows(), in.NumRows())
	}
	for i := 0; i < int(in.NumCols()); i++ {
		if !array.ChunkedEqual(in.Column(i).Data(), out.Column(i).Data()) {
			t.Errorf("input column %s changed", in.Schema().Field(i).Name)
		}
	}

	// Values, through OpenScored.
	sr, err := OpenScored(outPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i, row := range rows {
		got, err := sr.Next()
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		checkScored(t, got, row, results[i])
	}
	if _, err := sr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last row: err = %v, want io.EOF", err)
	}
}

// checkScored compares a row read back with OpenScored with what was
// written.
func checkScored(t *testing.T, got *ScoredRow, row Row, res RowResult) {
	t.Helper()
	if got.Index != row.Index || got.DataSource != row.DataSource || got.ResponseIsList != row.ResponseIsList {
		t.Errorf("row %d: Index, DataSource, ResponseIsList = %d, %q, %v; want %d, %q, %v",
			row.Index, got.Index, got.DataSource, got.ResponseIsList, row.Index, row.DataSource, row.ResponseIsList)
	}
	if !reflect.DeepEqual(got.Rewards, res.Rewards) {
		t.Errorf("row %d: rewards %v, want %v", row.Index, got.Rewards, res.Rewards)
	}
	if !reflect.DeepEqual(got.CaseResults, res.CaseResults) {
		t.Errorf("row %d: case results %v, want %v", row.Index, got.CaseResults, res.CaseResults)
	}
	if !reflect.DeepEqual(got.CaseStatus, res.CaseStatus) {
		t.Errorf("row %d: case status %v, want %v", row.Index, got.CaseStatus, res.CaseStatus)
	}
	if fmt.Sprint(derefAll(got.Errors)) != fmt.Sprint(derefAll(res.Errors)) {
		t.Errorf("row %d: errors %v, want %v", row.Index, derefAll(got.Errors), derefAll(res.Errors))
	}
	if !reflect.DeepEqual(nanToNeg(got.RefScores), nanToNeg(row.RefScores)) {
		t.Errorf("row %d: ref scores %v, want %v", row.Index, got.RefScores, row.RefScores)
	}
}

func derefAll(ps []*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		if p == nil {
			out[i] = "<nil>"
		} else {
			out[i] = *p
		}
	}
	return out
}

func nanToNeg(fs []float64) []float64 {
	if fs == nil {
		return nil
	}
	out := make([]float64, len(fs))
	for i, f := range fs {
		if math.IsNaN(f) {
			f = -999
		}
		out[i] = f
	}
	return out
}

func TestParquetToJSONL(t *testing.T) {
	want := loadFixtureRows(t)
	src, err := Open(fixtureParquet, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	outPath := filepath.Join(t.TempDir(), "scored.jsonl")
	w, err := Create(outPath, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := scoreAll(t, src, w)
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d", len(lines), len(want))
	}
	for i, line := range lines {
		ms, err := parseObject([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var keys []string
		for _, m := range ms {
			keys = append(keys, m.key)
		}
		wantKeys := []string{
			"data_source",
			"prompt",
			"ability",
			"reward_model",
			"extra_info",
			"responses",
			"reward",
			"case_results",
			"case_status",
			"reward_error",
		}
		if !reflect.DeepEqual(keys, wantKeys) {
			t.Fatalf("line %d keys = %v, want %v", i+1, keys, wantKeys)
		}
		var got fixtureRow
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d: input columns differ from the input row", i+1)
		}
	}
	sr, err := OpenScored(outPath, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	results := fakeResults(rows)
	for i, row := range rows {
		got, err := sr.Next()
		if err != nil {
			t.Fatal(err)
		}
		checkScored(t, got, row, results[i])
	}
}

func TestReservedColumnsRefused(t *testing.T) {
	dir := t.TempDir()
	// Scoring our own output again must fail rather than overwrite.
	src, err := Open(fixtureParquet, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	scored := filepath.Join(dir, "scored.parquet")
	w, err := Create(scored, src)
	if err != nil {
		t.Fatal(err)
	}
	scoreAll(t, src, w)
	src.Close()
	if r, err := Open(scored, DefaultOptions()); !errors.Is(err, ErrReservedColumn) {
		if r != nil {
			r.Close()
		}
		t.Errorf("Open(scored parquet) error = %v, want ErrReservedColumn", err)
	}

	jl := filepath.Join(dir, "in.jsonl")
	os.WriteFile(
		jl,
		[]byte(
			`{"responses":["a"],"reward_model":{"ground_truth":"{}"}}`+"\n"+`{"responses":["a"],"reward_model":{"ground_truth":"{}"},"reward":1}`+"\n",
		),
		0o644,
	)
	r, err := Open(jl, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Next()
	if !errors.Is(err, ErrReservedColumn) || !strings.Contains(err.Error(), "in.jsonl:2: key \"reward\"") {
		t.Errorf("Next error = %v, want ErrReservedColumn naming in.jsonl:2 and the key", err)
	}
}

// TestParquetLanguageKey reads a per-row language from a list<string>
// column inside a struct and from a plain string column.
func TestParquetLanguageKey(t *testing.T) {
	str := arrow.BinaryTypes.String
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "responses", Type: arrow.ListOf(str), Nullable: true},
		{Name: "gt", Type: str, Nullable: true},
		{
			Name:     "extra_info",
			Type:     arrow.StructOf(arrow.Field{Name: "langs", Type: arrow.ListOf(str), Nullable: true}),
			Nullable: true,
		},
		{Name: "lang", Type: str, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	resp := b.Field(0).(*array.ListBuilder)
	for range 2 {
		resp.Append(true)
		resp.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	}
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"{}", "{}"}, nil)
	ei := b.Field(2).(*array.StructBuilder)
	langs := ei.FieldBuilder(0).(*array.ListBuilder)
	ei.Append(true)
	langs.Append(true)
	langs.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"cpp", "java"}, nil)
	ei.AppendNull()
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"rust", ""}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "langs.parquet")
	writeParquetRecord(t, path, rec, 100)

	for _, tt := range []struct {
		key  string
		want [][]string
	}{
		{"extra_info.langs", [][]string{{"cpp", "java"}, {"", ""}}},
		{"lang", [][]string{{"rust", "rust"}, {"", ""}}},
	} {
		r, err := Open(path, Options{GroundTruthKey: "gt", LanguageKey: tt.key})
		if err != nil {
			t.Fatal(err)
		}
		rows := rowsOf(readAll(t, r))
		r.Close()
		var got [][]string
		for _, row := range rows {
			got = append(got, []string{row.Language(0), row.Language(1)})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.key, got, tt.want)
		}
	}
	if _, err := Open(path, Options{GroundTruthKey: "gt", LanguageKey: "nope"}); err == nil ||
		!strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("got %v, want an error naming the missing language column", err)
	}
}
