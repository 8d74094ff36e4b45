package job

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/verl-score/verl-score/results"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/verl-score/verl-score/resultcache"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/testcases"
)

const realDir = "../../shared/data/real"

// skipUnderRace skips a long judging test (no concurrency of its own to
// check) in the race run; test.sh runs it without the race detector.
func skipUnderRace(t *testing.T) {
	if raceDetector {
		t.Skip("judging on the real corpus: run without -race (test.sh does)")
	}
}

// realSample writes the rows of taco, codecontests and livecodebench whose
// label says they need a looser comparison, and every sixth other row, to
// one JSONL file; it returns the file and how many responses are so
// labelled.
func realSample(t *testing.T) (string, int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sample.jsonl")
	var b strings.Builder
	labelled, n := 0, 0
	for _, name := range []string{"taco", "codecontests", "livecodebench"} {
		f, err := os.Open(filepath.Join(realDir, name+".jsonl"))
		if err != nil {
			skipNoCorpus(t, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var row struct {
				Expected  []string `json:"expected"`
				ExtraInfo struct {
					Reasons []string `json:"label_reasons"`
				} `json:"extra_info"`
			}
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatal(err)
			}
			loose := 0
			for j, l := range row.Expected {
				if l == "unknown" && j < len(row.ExtraInfo.Reasons) &&
					strings.HasPrefix(row.ExtraInfo.Reasons[j], "needs_loose_compare") {
					loose++
				}
			}
			n++
			if loose > 0 || n%6 == 0 {
				labelled += loose
				b.Write(sc.Bytes())
				b.WriteByte('\n')
			}
		}
		f.Close()
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, labelled
}

type scoredLine struct {
	DataSource  string    `json:"data_source"`
	Expected    []string  `json:"expected"`
	Reward      []float64 `json:"reward"`
	RewardExact []float64 `json:"reward_exact"`
	ExtraInfo   struct {
		Reasons []string `json:"label_reasons"`
	} `json:"extra_info"`
}

func readScored(t *testing.T, path string) []scoredLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []scoredLine
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r scoredLine
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestCompareModesOnRealCorpus: on real rows, lines and tokens turn correct
// solutions that verl's exact rule fails into passes and change no other
// reward; reward_exact is the exact run's reward, and the summary counts
// the flips per data source.
func TestCompareModesOnRealCorpus(t *testing.T) {
	skipUnderRace(t)
	in, labelled := realSample(t)
	cache, err := resultcache.Open(t.TempDir(), "test", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	run := func(mode string) ([]scoredLine, *results.Summary) {
		cmp, err := testcases.ParseComparison(mode)
		if err != nil {
			t.Fatal(err)
		}
		eo := engineOptions()
		eo.Compare, eo.Cache = cmp, cache // the later runs reuse the executions
		eng, err := score.New(embedded(t), eo)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), mode+".jsonl")
		sum, err := Run(context.Background(), eng, jobOptions(in, out))
		if err != nil {
			t.Fatal(err)
		}
		return readScored(t, out), sum
	}
	exact, exactSum := run("exact")
	if exact[0].RewardExact != nil || exactSum.Overall.DifferFromExact != nil {
		t.Fatal("an exact run wrote reward_exact")
	}
	// The flips each mode must make: lines only the trailing-whitespace
	// cases (21 of the real corpus's 37 labelled responses are among
	// them; this sample holds all 37), tokens all of them.
	for _, tc := range []struct {
		mode  string
		flips int
	}{{"lines", 21}, {"tokens", labelled}, {"float", labelled}} {
		rows, sum := run(tc.mode)
		flips := 0
		perSource := map[string]int{}
		for i, r := range rows {
			for j := range r.Reward {
				if r.RewardExact[j] != exact[i].Reward[j] {
					t.Errorf(
						"%s: row %d response %d: reward_exact %g, the exact run's reward %g",
						tc.mode,
						i,
						j,
						r.RewardExact[j],
						exact[i].Reward[j],
					)
				}
				if r.Reward[j] == r.RewardExact[j] {
					continue
				}
				flips++
				perSource[r.DataSource]++
				loose := r.Expected[j] == "unknown" && strings.HasPrefix(r.ExtraInfo.Reasons[j], "needs_loose_compare")
				if !loose || r.Reward[j] != 1 {
					t.Errorf(
						"%s: row %d response %d (%s, %s) changed from %g to %g",
						tc.mode,
						i,
						j,
						r.DataSource,
						r.Expected[j],
						r.RewardExact[j],
						r.Reward[j],
					)
				}
			}
		}
		if flips != tc.flips || *sum.Overall.DifferFromExact != flips {
			t.Errorf("%s: %d rewards changed (summary %d), want %d", tc.mode, flips, *sum.Overall.DifferFromExact, tc.flips)
		}
		for src, n := range perSource {
			if g := sum.BySource[src]; *g.DifferFromExact != n || *g.MeanScoreExact != exactSum.BySource[src].MeanScore {
				t.Errorf("%s: %s: summary says %d changed, mean exact %g; counted %d, exact run's mean %g",
					tc.mode, src, *g.DifferFromExact, *g.MeanScoreExact, n, exactSum.BySource[src].MeanScore)
			}
		}
		if sum.Compare != tc.mode {
			t.Errorf("summary compare %q, want %q", sum.Compare, tc.mode)
		}
	}
}

// TestRewardExactColumn: with a compare mode a parquet output gets
// reward_exact beside reward, shaped like it (a list for list responses,
// a double for one string each), and an exact run does not.
func TestRewardExactColumn(t *testing.T) {
	scalarIn := filepath.Join(t.TempDir(), "scalar.jsonl")
	gt, _ := json.Marshal(`{"inputs": ["2\n"], "outputs": ["1 \n2 \n"]}`)
	row := `{"data_source": "taco", "responses": "` + "```python\\nfor i in range(int(input())): print(i + 1)\\n```" + `", "reward_model": {"ground_truth": ` + string(
		gt,
	) + `}}` + "\n"
	if err := os.WriteFile(scalarIn, []byte(row+row), 0o644); err != nil {
		t.Fatal(err)
	}
	cache, err := resultcache.Open(t.TempDir(), "test", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	exactReward := ""
	for _, tc := range []struct {
		in, compare, typ string
		reward, exact    string // the two columns as JSON
	}{
		{verlParquet, "exact", "", "", ""},
		{verlParquet, "lines", "list<item: float64, nullable>", "", ""},
		{scalarIn, "lines", "float64", "[1,1]", "[0,0]"},
	} {
		cmp, _ := testcases.ParseComparison(tc.compare)
		eo := engineOptions()
		eo.Compare, eo.Cache = cmp, cache
		eng, err := score.New(embedded(t), eo)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out.parquet")
		if _, err := Run(context.Background(), eng, jobOptions(tc.in, out)); err != nil {
			t.Fatal(err)
		}
		cols := parquetColumnsJSON(t, out)
		got, has := cols["reward_exact"]
		if tc.typ == "" {
			if has {
				t.Errorf("%s %s: reward_exact written", tc.in, tc.compare)
			}
			exactReward = cols["reward"].json
			continue
		}
		if !has || got.typ != tc.typ {
			t.Fatalf("%s %s: reward_exact %+v, want type %s", tc.in, tc.compare, got, tc.typ)
		}
		if tc.reward != "" && (cols["reward"].json != tc.reward || got.json != tc.exact) {
			t.Errorf("%s: reward %s, reward_exact %s; want %s and %s", tc.in, cols["reward"].json, got.json, tc.reward, tc.exact)
		}
		if tc.reward == "" && got.json != exactReward {
			t.Errorf("%s: reward_exact %s, but the exact run's reward %s", tc.in, got.json, exactReward)
		}
	}
}

type parquetColumn struct{ typ, json string }

// readParquetTable reads a whole parquet file with the plain Arrow reader.
func readParquetTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// parquetColumnsJSON reads a parquet file's columns: type, and the values
// as one JSON list.
func parquetColumnsJSON(t *testing.T, path string) map[string]parquetColumn {
	t.Helper()
	tbl := readParquetTable(t, path)
	defer tbl.Release()
	out := map[string]parquetColumn{}
	for i, fld := range tbl.Schema().Fields() {
		var vals []any
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			for k := 0; k < chunk.Len(); k++ {
				vals = append(vals, chunk.GetOneForMarshal(k))
			}
		}
		b, _ := json.Marshal(vals)
		out[fld.Name] = parquetColumn{typ: strings.ReplaceAll(fld.Type.String(), "element", "item"), json: string(b)}
	}
	return out
}

// TestAuditOnRealCorpus: the audit flags no response of a sample (one row
// in 14) of every real file (their correct solutions included: false-positive rate 0)
// and flags the three loopholes added to it, in the summary and in
// --cases-out.
func TestAuditOnRealCorpus(t *testing.T) {
	skipUnderRace(t)
	files, _ := filepath.Glob(filepath.Join(realDir, "*.jsonl"))
	if len(files) == 0 {
		skipNoCorpus(t, "no *.jsonl")
	}
	var b strings.Builder
	rows := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if i%14 == 0 {
				b.WriteString(line + "\n")
				rows++
			}
		}
	}
	hack := func(code string, gt map[string]any) string {
		g, _ := json.Marshal(gt)
		g2, _ := json.Marshal(string(g))
		resp, _ := json.Marshal([]string{"```python\n" + code + "\n```"})
		return `{"data_source": "hacks", "responses": ` + string(
			resp,
		) + `, "reward_model": {"ground_truth": ` + string(
			g2,
		) + "}}\n"
	}
	b.WriteString(
		hack(
			"import sys\ndef add(a, b):\n    return 0\nsys.exit(0)",
			map[string]any{"assert_case": []string{"assert add(1, 2) == 3"}},
		),
	)
	b.WriteString(
		hack(
			"def f(x):\n    raise ValueError(x)",
			map[string]any{"inputs": []string{"1"}, "outputs": []string{""}, "fn_name": "f"},
		),
	)
	b.WriteString(
		hack(
			"import glob\nprint(open(glob.glob('*expected*')[0]).read() if glob.glob('*expected*') else 3)",
			map[string]any{"inputs": []string{"1 2"}, "outputs": []string{"3"}},
		),
	)
	in := filepath.Join(t.TempDir(), "sample.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	eo := engineOptions()
	eo.Language, eo.Audit = score.LanguageAuto, true
	eng, err := score.New(embedded(t), eo)
	if err != nil {
		t.Fatal(err)
	}
	opts := jobOptions(in, filepath.Join(t.TempDir(), "out.jsonl"))
	opts.CasesOut = filepath.Join(t.TempDir(), "cases.jsonl")
	sum, err := Run(context.Background(), eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	for src, g := range sum.BySource {
		want := 0
		if src == "hacks" {
			want = 3
		}
		if g.AuditFlagged == nil || *g.AuditFlagged != want || g.AuditErrors != 0 {
			t.Errorf(
				"%s: %v flagged (%q), %d probe errors; want %d flagged",
				src,
				g.AuditFlagged,
				g.FlaggedList,
				g.AuditErrors,
				want,
			)
		}
	}
	g := sum.BySource["hacks"]
	if g == nil || g.AuditFlags[score.FlagExitBeforeAsserts] != 1 || g.AuditFlags[score.FlagFunctionRaised] != 1 ||
		g.AuditFlags[score.FlagReadsFile] != 1 {
		t.Errorf("hacks: flags %v", g)
	}
	if *sum.Overall.Audited < rows/3 || sum.Overall.AuditProbes == 0 {
		t.Errorf("only %d of %d rows' responses probed (%d probes)", *sum.Overall.Audited, rows, sum.Overall.AuditProbes)
	}
	// The hacks keep verl's reward, and their cases carry the flags.
	data, _ := os.ReadFile(opts.CasesOut)
	flaggedCases := strings.Count(string(data), `"audit":["`)
	if flaggedCases != 3 {
		t.Errorf("--cases-out holds %d flagged cases, want 3", flaggedCases)
	}
	if g.MeanScore != 1 {
		t.Errorf("the hacks score %g without --audit-fail, want verl's 1", g.MeanScore)
	}
}

// skipNoCorpus skips a test whose real corpus is not here, loudly; under
// CI=true it fails instead, so that a CI without the corpus cannot pass
// having judged nothing.
func skipNoCorpus(t *testing.T, why any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("the real corpus (%s) is missing under CI: %v", realDir, why)
	}
	t.Skipf("SKIPPED (LOUD): the real corpus (%s) is not here: %v", realDir, why)
}
