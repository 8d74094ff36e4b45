package job

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"github.com/verl-score/verl-score/results"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const (
	exampleJSONL = "../testdata/example.jsonl"
	exampleDump  = "../testdata/dump"
	verlParquet  = "../testdata/rollout/verl_rows.parquet"
	goldenDir    = "../testdata/golden"
)

var (
	localOnce sync.Once
	local     *sandbox.Local
	localErr  error
)

// embedded returns the real embedded sandbox, shared by the tests.
func embedded(t testing.TB) *sandbox.Local {
	t.Helper()
	localOnce.Do(func() { local, localErr = sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}}) })
	if localErr != nil {
		t.Fatalf("embedded sandbox: %v", localErr)
	}
	return local
}

func TestMain(m *testing.M) {
	code := m.Run()
	if local != nil {
		local.Close()
	}
	os.Exit(code)
}

func engineOptions() score.Options {
	o := score.DefaultOptions()
	o.MaxConcurrent = 8
	return o
}

func jobOptions(input, output string) Options {
	return Options{Input: input, Output: output, Reader: rollout.DefaultOptions(), MaxText: 200}
}

// runOn runs a job on an engine over client with engineOptions.
func runOn(ctx context.Context, client sandboxclient.Client, opts Options) (*results.Summary, error) {
	eng, err := score.New(client, engineOptions())
	if err != nil {
		return nil, err
	}
	return Run(ctx, eng, opts)
}

// golden compares got with the golden file name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (run go test ./job -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %.400s\nwant: %.400s", name, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs: got %d lines, want %d", name, len(gl), len(wl))
	}
}

// stableSummary is the summary without its timings, as golden JSON.
func stableSummary(t *testing.T, s *results.Summary) []byte {
	t.Helper()
	c := *s
	c.WallSeconds, c.CasesPerSec = 0, 0
	c.Input, c.Output = filepath.Base(c.Input), filepath.Base(c.Output)
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestGoldenJSONL(t *testing.T) {
	out := filepath.Join(t.TempDir(), "example.scored.jsonl")
	opts := jobOptions(exampleJSONL, out)
	opts.CasesOut = filepath.Join(t.TempDir(), "cases.jsonl")
	sum, err := runOn(context.Background(), embedded(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "example.scored.jsonl", got)
	golden(t, "example.summary.json", stableSummary(t, sum))
	if _, err := os.Stat(JournalPath(out)); !os.IsNotExist(err) {
		t.Errorf("journal left behind after a complete run: %v", err)
	}
	// One line per case, each naming its row and response.
	cases, err := os.ReadFile(opts.CasesOut)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(cases)), "\n")
	if len(lines) != sum.Overall.Cases {
		t.Errorf("cases output: got %d lines, want %d", len(lines), sum.Overall.Cases)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"row", "response_index", "data_source", "case_index", "input", "expected_output",
		"status", "stdout", "stderr", "exit_code", "duration", "api_status", "run_status"} {
		if _, ok := first[k]; !ok {
			t.Errorf("cases output lacks %q: %s", k, lines[0])
		}
	}
}

func TestGoldenDump(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dump.scored.jsonl")
	sum, err := runOn(context.Background(), embedded(t), jobOptions(exampleDump, out))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "dump.scored.jsonl", got)
	// The dump's stored scores are verl's: every re-score must equal them.
	for i, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		var row struct {
			Score  float64 `json:"score"`
			Reward float64 `json:"reward"`
			Step   int     `json:"step"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		if row.Score != row.Reward {
			t.Errorf("dump line %d (step %d): got reward %v, stored score %v", i+1, row.Step, row.Reward, row.Score)
		}
	}
	// Lines of one step with the same input are one prompt's responses:
	// 12 + 11 + 10 distinct inputs in steps 1, 2 and 10.
	if sum.Overall.Responses != 38 || sum.Overall.Prompts != 33 {
		t.Errorf("got %d prompts / %d responses, want 33 / 38", sum.Overall.Prompts, sum.Overall.Responses)
	}
}

// TestGoldenParquet scores a parquet file with verl's nested schema and
// reads the output back with the plain Arrow reader.
func TestGoldenParquet(t *testing.T) {
	out := filepath.Join(t.TempDir(), "verl_rows.scored.parquet")
	if _, err := runOn(context.Background(), embedded(t), jobOptions(verlParquet, out)); err != nil {
		t.Fatal(err)
	}
	tbl := readParquetTable(t, out)
	defer tbl.Release()
	var fields []string
	for _, fld := range tbl.Schema().Fields() {
		fields = append(fields, fld.Name+": "+fld.Type.String())
	}
	want := map[string]string{
		"reward":       "list<item: float64, nullable>",
		"case_results": "list<item: list<item: int8, nullable>, nullable>",
		"case_status":  "list<item: list<item: utf8, nullable>, nullable>",
		"reward_error": "list<item: utf8, nullable>",
	}
	for name, typ := range want {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("output lacks column %s; has %v", name, fields)
		}
		// Parquet names a list's items "element"; Arrow says "item".
		if got := strings.ReplaceAll(tbl.Schema().Field(idx[0]).Type.String(), "element", "item"); got != typ {
			t.Errorf("column %s: got type %s, want %s", name, got, typ)
		}
	}
	// The four result columns as JSON, one line per row.
	var buf bytes.Buffer
	for _, name := range []string{"reward", "case_results", "case_status", "reward_error"} {
		col := tbl.Column(tbl.Schema().FieldIndices(name)[0])
		for _, chunk := range col.Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				b, err := json.Marshal(chunk.GetOneForMarshal(i))
				if err != nil {
					t.Fatal(err)
				}
				buf.WriteString(name + " " + string(b) + "\n")
			}
		}
	}
	golden(t, "verl_rows.scored.columns.txt", buf.Bytes())
	golden(t, "verl_rows.scored.schema.txt", []byte(strings.Join(fields, "\n")+"\n"))
	_ = arrow.PrimitiveTypes.Int8
}

// stopAfter wraps a client and stops the job once n requests have been
// answered: an interruption at a known point.
type stopAfter struct {
	sandboxclient.Client
	n      int64
	seen   atomic.Int64
	cancel func()
}

func (s *stopAfter) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	resp, err := s.Client.Run(ctx, req)
	if s.seen.Add(1) == s.n {
		s.cancel()
	}
	return resp, err
}

func TestResumeEqualsUninterrupted(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	if _, err := runOn(context.Background(), embedded(t), jobOptions(exampleJSONL, full)); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(full)

	out := filepath.Join(dir, "part.jsonl")
	// Stopped gently, as by the first Ctrl-C: the cases in flight finish.
	client := &stopAfter{Client: embedded(t), n: 30}
	eng, err := score.New(client, engineOptions())
	if err != nil {
		t.Fatal(err)
	}
	client.cancel = eng.Stop
	opts := jobOptions(exampleJSONL, out)
	opts.Reader.BatchRows = 4
	sum, err := Run(context.Background(), eng, opts)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("got %v, want an interruption", err)
	}
	if !sum.Interrupted {
		t.Error("summary does not say interrupted")
	}
	partial, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no output for the finished rows: %v", err)
	}
	n := bytes.Count(partial, []byte("\n"))
	if n == 0 || n >= 22 {
		t.Fatalf("interrupted output has %d rows, want some but not all 22", n)
	}
	if !bytes.HasPrefix(want, partial) {
		t.Error("the interrupted output is not a prefix of the complete one")
	}
	if _, err := os.Stat(JournalPath(out)); err != nil {
		t.Fatalf("no journal after an interruption: %v", err)
	}
	// Without --resume the journal is not silently overwritten.
	if _, err := runOn(context.Background(), embedded(t), opts); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("second run without resume: got %v, want a pointer to --resume", err)
	}

	counting := &stopAfter{Client: embedded(t), n: -1, cancel: func() {}}
	opts.Resume = true
	sum2, err := runOn(context.Background(), counting, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Error("resumed output differs from the uninterrupted run's")
	}
	if sum2.Resumed == 0 {
		t.Error("resume took no rows from the journal")
	}
	if sent := counting.seen.Load(); sent+int64(sum.Overall.Requests) > 113+8 {
		t.Errorf("resume re-sent finished work: %d requests after %d before (113 in a full run)", sent, sum.Overall.Requests)
	}
	if _, err := os.Stat(JournalPath(out)); !os.IsNotExist(err) {
		t.Error("journal left after the resumed run completed")
	}
	ks := make([]string, 0)
	for k := range sum2.BySource {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if sum2.Overall.Responses != 38 {
		t.Errorf("resumed summary counts %d responses, want 38 (%v)", sum2.Overall.Responses, ks)
	}
}

// TestLanguageKey scores the example's C++ row with its language taken
// from a column: verl's default runs it as Python (0.0), the column as C++.
func TestLanguageKey(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(exampleJSONL)
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"humaneval-x"`) {
			row = line
		}
	}
	in := filepath.Join(dir, "cpp.jsonl")
	if err := os.WriteFile(in, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  string
		want float64
	}{{"", 0}, {"extra_info.response_languages", 1}} {
		opts := jobOptions(in, filepath.Join(dir, "out"+tt.key+".jsonl"))
		opts.Reader.LanguageKey = tt.key
		sum, err := runOn(context.Background(), embedded(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Overall.MeanScore != tt.want {
			t.Errorf("language key %q: got mean score %v, want %v", tt.key, sum.Overall.MeanScore, tt.want)
		}
	}
}
