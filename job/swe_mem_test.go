package job

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/swe"
)

// logRunner stands in for the sandbox's SWE runner with no latency: each
// rollout "runs" to a pytest log of about logBytes in which every test of
// the instance passes, and the log is graded by swe.Judge as a real one
// is. What is measured is the engine and the job around it.
type logRunner struct{ logBytes int }

func (r logRunner) Evaluate(_ context.Context, inst *swe.Instance, plan *swe.Plan, patch string) *swe.Outcome {
	var b strings.Builder
	b.WriteString(">>>>> Start Test Output\n")
	for b.Len() < r.logBytes {
		b.WriteString("tests/test_calc.py::test_noise collected, output of the tests' own prints ...........\n")
	}
	for _, t := range append(append([]string{}, inst.FailToPass...), inst.PassToPass...) {
		b.WriteString("PASSED " + t + "\n")
	}
	b.WriteString(">>>>> End Test Output\n>>>>> Test Exit Code: 0\n")
	out := swe.StepOutput{ApplyExit: 0, ApplyOutput: ">>>>> Applied Patch (git apply --verbose)\n", EvalOutput: b.String()}
	return swe.Judge(inst, plan, patch, out, swe.DefaultRules)
}

// writeSWERows writes n verl rows of repository tasks, each its own
// instance with two FAIL_TO_PASS and three PASS_TO_PASS tests, and a
// response holding a patch.
func writeSWERows(t testing.TB, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	patch := "```diff\ndiff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-return a - b\n+return a + b\n```"
	for i := range n {
		inst := map[string]any{
			"instance_id": fmt.Sprintf("calc__calc-%d", i), "repo": "calc/calc", "base_commit": "0123abc",
			"version":    "1.0",
			"test_patch": "diff --git a/tests/test_calc.py b/tests/test_calc.py\n",
			"FAIL_TO_PASS": []string{
				fmt.Sprintf("tests/test_calc.py::test_add_%d", i), "tests/test_calc.py::test_add_zero",
			},
			"PASS_TO_PASS": []string{"tests/test_calc.py::test_sub", "tests/test_calc.py::test_mul",
				"tests/test_calc.py::test_div"},
			"eval_script": "pytest -rA tests/test_calc.py",
			"image":       "calc:1",
		}
		truth, err := json.Marshal(inst)
		if err != nil {
			t.Fatal(err)
		}
		row := map[string]any{
			"data_source":  "swe-calc",
			"prompt":       []map[string]string{{"role": "user", "content": fmt.Sprintf("fix issue %d", i)}},
			"reward_model": map[string]string{"style": "rule", "ground_truth": string(truth)},
			"responses":    []string{"Here is the fix.\n" + patch},
		}
		line, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// BenchmarkSWEMemoryFlat scores 2k and 20k rollouts of repository tasks,
// each with a 64 KiB test log graded as SWE-bench grades it, and reports
// the peak heap of each and their ratio: rows and logs are streamed, so
// the ratio should be near 1 (the issue's "memory of the scorer flat in
// the number of rows").
func BenchmarkSWEMemoryFlat(b *testing.B) {
	dir := b.TempDir()
	peaks := map[int]float64{}
	for _, n := range []int{2_000, 20_000} {
		in := filepath.Join(dir, fmt.Sprintf("swe-%d.jsonl", n))
		writeSWERows(b, in, n)
		var worst float64
		for range b.N {
			out := filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", n))
			os.Remove(out)
			var sum *results.Summary
			var err error
			mb := peakHeap(func() {
				o := engineOptions()
				o.SWE = logRunner{logBytes: 64 << 10}
				eng, e := score.New(echoClient{}, o)
				if e != nil {
					err = e
					return
				}
				sum, err = Run(context.Background(), eng, jobOptions(in, out))
			})
			if err != nil {
				b.Fatal(err)
			}
			if sum.Overall.Responses != n || sum.Overall.MeanScore != 1 {
				b.Fatalf("got %d responses with mean %v, want %d with 1", sum.Overall.Responses, sum.Overall.MeanScore, n)
			}
			worst = max(worst, mb)
		}
		peaks[n] = worst
		b.ReportMetric(worst, fmt.Sprintf("peak-MB-%dk", n/1000))
	}
	b.ReportMetric(peaks[20_000]/peaks[2_000], "peak-ratio-20k/2k")
}
