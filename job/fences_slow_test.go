//go:build slowlangs

package job

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/score"
)

// TestSlowFenceAutoMatchesLanguageKey: the bundled rows fenced r, R, ts,
// kotlin, rb ... and MultiPL-E's Go test files (fenced go) score under
// --language auto exactly as with --language-key
// extra_info.response_languages: the same language, score and verdict
// for every response and case.
func TestSlowFenceAutoMatchesLanguageKey(t *testing.T) {
	skipUnderRace(t)
	data, err := os.ReadFile("../testdata/fences/auto.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	input := string(data)
	goRows := 0
	if real, err := os.ReadFile(filepath.Join(realDir, "multipl_e.jsonl")); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(real)), "\n") {
			if strings.Contains(line, `"response_languages": ["go_test"]`) {
				input += line + "\n"
				goRows++
			}
		}
	}
	if goRows == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no MultiPL-E go_test rows in " + realDir)
		}
		t.Log("LOUD SKIP of the Go rows: no MultiPL-E go_test rows in " + realDir)
	}
	in := filepath.Join(t.TempDir(), "fences.jsonl")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	// run scores the rows and gives one string per response (its reward,
	// verdicts, statuses and error) and, per response, the times of its
	// cases, which a failure prints.
	run := func(auto bool) (got, times []string) {
		eo := engineOptions()
		opts := jobOptions(in, filepath.Join(t.TempDir(), "out.jsonl"))
		opts.CasesOut = filepath.Join(t.TempDir(), "cases.jsonl")
		if auto {
			eo.Language = score.LanguageAuto
		} else {
			opts.Reader.LanguageKey = "extra_info.response_languages"
		}
		eng, err := score.New(embedded(t), eo)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), eng, opts); err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(opts.Output)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := os.ReadFile(opts.CasesOut)
		if err != nil {
			t.Fatal(err)
		}
		byResponse := map[[2]int]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(cases)), "\n") {
			var c struct {
				Row      *int     `json:"row"`
				Response int      `json:"response_index"`
				Status   string   `json:"status"`
				Duration *float64 `json:"duration"`
				CPU      *float64 `json:"cpu_time"`
				Wait     *float64 `json:"cpu_wait"`
			}
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatal(err)
			}
			if c.Row == nil {
				continue // the provenance line
			}
			byResponse[[2]int{*c.Row, c.Response}] += fmt.Sprintf(
				" [%s: %s wall, %s cpu, %s waited]",
				c.Status,
				seconds(c.Duration),
				seconds(c.CPU),
				seconds(c.Wait),
			)
		}
		for n, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var row struct {
				Reward []float64         `json:"reward"`
				Cases  []json.RawMessage `json:"case_results"`
				Status []json.RawMessage `json:"case_status"`
				Err    []*string         `json:"reward_error"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			for i := range row.Reward {
				e := "<nil>"
				if row.Err[i] != nil {
					e = *row.Err[i]
				}
				got = append(
					got,
					fmt.Sprintf("reward %g, verdicts %s, statuses %s, error %s", row.Reward[i], row.Cases[i], row.Status[i], e),
				)
				times = append(times, byResponse[[2]int{n, i}])
			}
		}
		return got, times
	}
	auto, autoTimes := run(true)
	keyed, keyedTimes := run(false)
	if len(auto) != len(keyed) || len(auto) < 17+goRows {
		t.Fatalf("%d responses under auto, %d with the key; want %d each", len(auto), len(keyed), 17+goRows)
	}
	right := 0
	for i := range auto {
		if auto[i] != keyed[i] {
			t.Errorf("response %d: auto %s; keyed %s", i, auto[i], keyed[i])
			if i < len(autoTimes) && i < len(keyedTimes) {
				t.Logf("response %d's cases: auto%s; keyed%s", i, autoTimes[i], keyedTimes[i])
			}
		}
		if strings.HasPrefix(auto[i], "reward 1,") {
			right++
		}
	}
	// Not every response may fail alike: most of them are right.
	if right < len(auto)/2 {
		t.Errorf("only %d of %d responses scored 1", right, len(auto))
	}
}

// seconds shows an optional time of the cases file.
func seconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fs", *s)
}
