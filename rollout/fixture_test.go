package rollout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var update = flag.Bool(
	"update",
	false,
	"rebuild the fixtures under testdata/rollout from ../shared/data beside the repository",
)

const (
	fixtureDir     = "../testdata/rollout"
	fixtureJSONL   = fixtureDir + "/verl_rows.jsonl"
	fixtureParquet = fixtureDir + "/verl_rows.parquet"
	sharedData     = "../../shared/data"
	// fixtureRowGroup is small so that record batches cross row groups.
	fixtureRowGroup = 7
)

// fixtureRow is the part of a verl dataset row the parquet fixture keeps.
type fixtureRow struct {
	DataSource string `json:"data_source"`
	Prompt     []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"prompt"`
	Ability     string `json:"ability"`
	RewardModel struct {
		Style       string `json:"style"`
		GroundTruth string `json:"ground_truth"`
	} `json:"reward_model"`
	ExtraInfo struct {
		Index int64  `json:"index"`
		Split string `json:"split"`
	} `json:"extra_info"`
	Responses []string `json:"responses"`
}

// TestUpdateFixtures rebuilds the fixtures with -update: the rows of
// real/codecontests.jsonl (but the one 500 KB row) and verl's own two
// samples, as JSONL and as a parquet file with verl's nested schema.
func TestUpdateFixtures(t *testing.T) {
	if !*update {
		for _, p := range []string{fixtureJSONL, fixtureParquet} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("fixture missing (run go test ./rollout -run TestUpdateFixtures -update): %v", err)
			}
		}
		return
	}
	var rows []fixtureRow
	for _, src := range []string{"real/codecontests.jsonl", "verl_samples/codecontests_kings_path.jsonl"} {
		f, err := os.Open(filepath.Join(sharedData, src))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(f)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 && len(line) < 100_000 {
				var r fixtureRow
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("%s: %v", src, err)
				}
				if r.ExtraInfo.Split == "" {
					r.ExtraInfo.Split = "test"
				}
				rows = append(rows, r)
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureJSONL, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeVerlParquet(t, fixtureParquet, rows, fixtureRowGroup)
	t.Logf("wrote %d rows", len(rows))
}

// verlSchema is verl's dataset schema.
func verlSchema() *arrow.Schema {
	str := arrow.BinaryTypes.String
	return arrow.NewSchema([]arrow.Field{
		{Name: "data_source", Type: str, Nullable: true},
		{Name: "prompt", Type: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "role", Type: str, Nullable: true},
			arrow.Field{Name: "content", Type: str, Nullable: true},
		)), Nullable: true},
		{Name: "ability", Type: str, Nullable: true},
		{Name: "reward_model", Type: arrow.StructOf(
			arrow.Field{Name: "style", Type: str, Nullable: true},
			arrow.Field{Name: "ground_truth", Type: str, Nullable: true},
		), Nullable: true},
		{Name: "extra_info", Type: arrow.StructOf(
			arrow.Field{Name: "index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "split", Type: str, Nullable: true},
		), Nullable: true},
		{Name: "responses", Type: arrow.ListOf(str), Nullable: true},
	}, nil)
}

// writeVerlParquet writes rows with verl's schema, rowGroup rows per row
// group.
func writeVerlParquet(t *testing.T, path string, rows []fixtureRow, rowGroup int64) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, verlSchema())
	defer b.Release()
	ds := b.Field(0).(*array.StringBuilder)
	prompt := b.Field(1).(*array.ListBuilder)
	msg := prompt.ValueBuilder().(*array.StructBuilder)
	ability := b.Field(2).(*array.StringBuilder)
	rm := b.Field(3).(*array.StructBuilder)
	extra := b.Field(4).(*array.StructBuilder)
	resp := b.Field(5).(*array.ListBuilder)
	for _, r := range rows {
		ds.Append(r.DataSource)
		prompt.Append(true)
		for _, m := range r.Prompt {
			msg.Append(true)
			msg.FieldBuilder(0).(*array.StringBuilder).Append(m.Role)
			msg.FieldBuilder(1).(*array.StringBuilder).Append(m.Content)
		}
		ability.Append(r.Ability)
		rm.Append(true)
		rm.FieldBuilder(0).(*array.StringBuilder).Append(r.RewardModel.Style)
		rm.FieldBuilder(1).(*array.StringBuilder).Append(r.RewardModel.GroundTruth)
		extra.Append(true)
		extra.FieldBuilder(0).(*array.Int64Builder).Append(r.ExtraInfo.Index)
		extra.FieldBuilder(1).(*array.StringBuilder).Append(r.ExtraInfo.Split)
		resp.Append(true)
		resp.ValueBuilder().(*array.StringBuilder).AppendValues(r.Responses, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	writeParquetRecord(t, path, rec, rowGroup)
}

// writeParquetRecord writes one record batch as a parquet file.
func writeParquetRecord(t *testing.T, path string, rec arrow.RecordBatch, rowGroup int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroup),
	)
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// loadFixtureRows reads the JSONL fixture.
func loadFixtureRows(t *testing.T) []fixtureRow {
	t.Helper()
	data, err := os.ReadFile(fixtureJSONL)
	if err != nil {
		t.Fatal(err)
	}
	var rows []fixtureRow
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r fixtureRow
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}
