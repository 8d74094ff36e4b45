package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/verl-score/verl-score/results"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
)

// Scored in N shards and merged, a job gives what one unsharded run
// gives: the same output and cases file byte for byte (parquet, JSONL, a
// dump directory), and the same summary (pass@k and means recomputed)
// apart from its timings. Dedup is off: it shares answers within one
// process, so with it the shards send (and count) more requests than one
// run, and mark fewer cases shared; the output is the same either way.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	for _, tc := range []struct{ input, ext string }{
		{exampleJSONL, ".jsonl"}, {exampleDump, ".jsonl"}, {verlParquet, ".parquet"},
	} {
		for _, n := range []int{3} {
			name := fmt.Sprintf("%s/%d", filepath.Base(tc.input), n)
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				opts := func(out string) Options {
					o := jobOptions(tc.input, out)
					o.Reader.BatchRows = 4 // several batches, cut by the shards
					o.CasesOut = out + ".cases"
					return o
				}
				want := filepath.Join(dir, "whole"+tc.ext)
				wantSum, err := runNoDedup(t, opts(want))
				if err != nil {
					t.Fatal(err)
				}
				var outs []string
				for k := n - 1; k >= 0; k-- { // any order
					out := filepath.Join(dir, fmt.Sprintf("shard-%d%s", k, tc.ext))
					o := opts(out)
					o.Shard = &rollout.ShardSpec{K: k, N: n}
					sum, err := runNoDedup(t, o)
					if err != nil {
						t.Fatalf("shard %d/%d: %v", k, n, err)
					}
					if sum.Shard != fmt.Sprintf("%d/%d", k, n) {
						t.Errorf("shard summary says %q", sum.Shard)
					}
					outs = append(outs, out)
				}
				merged := filepath.Join(dir, "merged"+tc.ext)
				sum, err := Merge(MergeOptions{Output: merged, Shards: outs, CasesOut: merged + ".cases"})
				if err != nil {
					t.Fatal(err)
				}
				for _, pair := range [][2]string{{want, merged}, {want + ".cases", merged + ".cases"}} {
					a, _ := os.ReadFile(pair[0])
					b, err := os.ReadFile(pair[1])
					if strings.HasSuffix(pair[0], ".cases") {
						// Run and CPU times differ from one run to the next.
						a, b = durations.ReplaceAll(a, nil), durations.ReplaceAll(b, nil)
					}
					if err != nil || !bytes.Equal(a, b) || len(a) == 0 {
						t.Errorf("%s differs from the unsharded %s (%d and %d bytes, %v)", pair[1], pair[0], len(b), len(a), err)
					}
				}
				wantSum.Output = merged
				if a, b := stableSummary(t, wantSum), stableSummary(t, sum); !bytes.Equal(a, b) {
					t.Errorf("merged summary differs:\n%s\nwant\n%s", b, a)
				}
			})
		}
	}
}

// Merge refuses what would not give the unsharded run's output.
func TestMergeRefusesIncompleteShards(t *testing.T) {
	dir := t.TempDir()
	var outs []string
	for k := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", k))
		o := jobOptions(exampleJSONL, out)
		o.Shard = &rollout.ShardSpec{K: k, N: 3}
		if _, err := runOn(context.Background(), embedded(t), o); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	other := filepath.Join(dir, "other.jsonl")
	o := jobOptions(exampleJSONL, other)
	o.Shard = &rollout.ShardSpec{K: 1, N: 3}
	o.DataSource = "codecontests" // other settings
	if _, err := runOn(context.Background(), embedded(t), o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shards []string
		want   string
	}{
		{outs[:2], "2 shard outputs were given"},
		{[]string{outs[0], outs[1], outs[1]}, "missing (or given twice)"},
		{[]string{outs[0], other, outs[2]}, "other settings"},
		{[]string{outs[0], outs[1], filepath.Join(dir, "nope.jsonl")}, "no shard file"},
	} {
		_, err := Merge(MergeOptions{Output: filepath.Join(dir, "m.jsonl"), Shards: tc.shards})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %v: got %v, want %q", tc.shards, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.jsonl")); err == nil {
		t.Error("a refused merge left an output")
	}
}

var durations = regexp.MustCompile(`,?"(compile_)?(duration|cpu_time|cpu_wait)":[0-9.e-]+`)

func runNoDedup(t *testing.T, opts Options) (*results.Summary, error) {
	t.Helper()
	eo := engineOptions()
	eo.NoDedup = true
	eng, err := score.New(embedded(t), eo)
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), eng, opts)
}

// Merged cases files keep one provenance line: the first shard's.
func TestConcatKeepsOneProvenanceLine(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("c%d.jsonl", i))
		line, _ := json.Marshal(map[string]any{"provenance": &results.Provenance{Tool: "verl-score", Started: fmt.Sprint(i)}})
		os.WriteFile(p, []byte(string(line)+"\n"+fmt.Sprintf(`{"row": %d}`, i)+"\n"), 0o644)
		files = append(files, p)
	}
	out := filepath.Join(dir, "merged.jsonl")
	if err := concatFiles(out, files); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `"started":"0"`) || strings.Count(string(b), "provenance") != 1 {
		t.Errorf("merged:\n%s", b)
	}
}
