//go:build noisy

// The noisy-neighbour test (issue #26). It keeps the machine busy for
// minutes, so it is not in the README's test command; .ci/run runs it on
// its own, after the other tests. By hand:
//
//	go test -count=1 -tags noisy -run TestNoisyNeighbour -v ./job

package job

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/verl-score/verl-score/results"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/verl-score/verl-score/score"
)

// hogRows are solutions that keep the machine busy while they run: 64
// spinning threads, and a Python program that forks spinning children up
// to the process limit.
func hogRows() []string {
	cpp := "```cpp\n#include <bits/stdc++.h>\nusing namespace std;\nint main() { vector<thread> ts; for (int i = 0; i < 64; i++) ts.emplace_back([]{ volatile unsigned long x = 0; for (;;) x++; }); for (auto &t : ts) t.join(); }\n```"
	py := "```python\nimport os\nwhile True:\n    try:\n        if os.fork() == 0:\n            while True:\n                pass\n    except OSError:\n        pass\n```"
	gt, _ := json.Marshal(`{"inputs": ["1\n"], "outputs": ["1\n"]}`)
	var rows []string
	for i, c := range []struct{ code, lang string }{{cpp, "cpp"}, {py, "python"}, {cpp, "cpp"}, {py, "python"}} {
		resp, _ := json.Marshal([]string{strings.Replace(c.code, "x++", fmt.Sprintf("x += %d", i+1), 1) + "\n"})
		rows = append(
			rows,
			fmt.Sprintf(
				`{"data_source": "hogs", "responses": %s, "reward_model": {"ground_truth": %s}, "extra_info": {"response_languages": [%q]}}`,
				resp,
				gt,
				c.lang,
			),
		)
	}
	return rows
}

// TestNoisyNeighbourOnRealCorpus scores a sample of the real corpus, every
// language of it, on a quiet machine and again with 2 x nproc busy loops
// on the host (each in a session of its own) and CPU-hog solutions mixed
// in: no verdict of the corpus may differ.
func TestNoisyNeighbourOnRealCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realDir, "*.jsonl"))
	if len(files) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the real corpus is missing")
		}
		skipNoCorpus(t, "no *.jsonl")
	}
	var real []string
	for _, f := range files {
		every := 10
		if strings.Contains(f, "multipl_e") || strings.Contains(f, "humaneval_x") {
			every = 3 // the compiled languages
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for i := 0; sc.Scan(); i++ {
			if i%every == 0 {
				real = append(real, sc.Text())
			}
		}
		fh.Close()
	}
	dir := t.TempDir()
	quietIn, loadedIn := filepath.Join(dir, "quiet.jsonl"), filepath.Join(dir, "loaded.jsonl")
	os.WriteFile(quietIn, []byte(strings.Join(real, "\n")+"\n"), 0o644)
	var loaded []string
	hogs := hogRows()
	for i, line := range real {
		loaded = append(loaded, line)
		if i%(len(real)/len(hogs)) == 0 && len(hogs) > 0 {
			loaded, hogs = append(loaded, hogs[0]), hogs[1:]
		}
	}
	os.WriteFile(loadedIn, []byte(strings.Join(loaded, "\n")+"\n"), 0o644)

	run := func(in string) ([][]int8, *results.Summary) {
		eo := engineOptions()
		eng, err := score.New(embedded(t), eo)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+filepath.Base(in))
		jo := jobOptions(in, out)
		jo.Reader.LanguageKey = "extra_info.response_languages"
		jo.CasesOut = out + ".cases"
		sum, err := Run(context.Background(), eng, jo)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(jo.CasesOut)
		var verdicts [][]int8
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var c struct {
				Verdict    int8   `json:"verdict"`
				DataSource string `json:"data_source"`
			}
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatal(err)
			}
			if c.DataSource == "hogs" {
				continue
			}
			verdicts = append(verdicts, []int8{c.Verdict})
		}
		return verdicts, sum
	}
	quiet, _ := run(quietIn)

	n := 2 * runtime.NumCPU()
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
	}
	noisy, sum := run(loadedIn)
	if len(quiet) != len(noisy) {
		t.Fatalf("%d cases quiet, %d with neighbours", len(quiet), len(noisy))
	}
	differ := 0
	for i := range quiet {
		if quiet[i][0] != noisy[i][0] {
			differ++
			t.Errorf("case %d: %d quiet, %d with neighbours", i, quiet[i][0], noisy[i][0])
		}
	}
	t.Logf(
		"%d rows, %d cases: %d verdicts differ; %d busy loops and %d hog solutions beside; %d requests rerun as starved",
		len(real),
		len(quiet),
		differ,
		n,
		len(hogRows()),
		sum.Overall.StarvedReruns,
	)
}
