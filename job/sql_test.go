package job

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/testcases"
)

// TestSQLRowsByHand scores testdata/sql/shop.jsonl, SQL answers fenced
// ```sql over a setup script, and compares every reward with the one its
// label gives by hand: right 1; wrong, error and slow 0; right in another
// order 1 under --compare rows and 0 under verl's exact rule.
func TestSQLRowsByHand(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 is missing on a CI machine")
		}
		t.Skip("SKIPPED (LOUD): sqlite3 is not installed (Debian: sqlite3)")
	}
	for _, mode := range []string{"exact", "rows"} {
		cmp, err := testcases.ParseComparison(mode)
		if err != nil {
			t.Fatal(err)
		}
		eo := engineOptions()
		eo.Language, eo.Compare, eo.Timeout = score.LanguageAuto, cmp, 2
		eng, err := score.New(embedded(t), eo)
		if err != nil {
			t.Fatal(err)
		}
		opts := jobOptions("../testdata/sql/shop.jsonl", filepath.Join(t.TempDir(), "out.jsonl"))
		if _, err := Run(context.Background(), eng, opts); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(opts.Output)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var row struct {
				Reward    []float64 `json:"reward"`
				ExtraInfo struct {
					Labels []string `json:"labels"`
				} `json:"extra_info"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			for i, label := range row.ExtraInfo.Labels {
				want := 0.0
				if label == "right" || label == "right, another order" && mode == "rows" {
					want = 1
				}
				if row.Reward[i] != want {
					t.Errorf("%s: a %q answer got %g, want %g", mode, label, row.Reward[i], want)
				}
				n++
			}
		}
		if n != 10 {
			t.Errorf("%s: %d answers scored, want 10", mode, n)
		}
	}
}

// TestTextToSQLOnChinook scores testdata/sql/chinook/questions.jsonl: 30
// questions over two SQLite databases cut from the Chinook sample
// database (MIT; see testdata/sql/chinook/README.md), each ground truth a
// gold query and a database file beside the input. The expected output
// is the gold query's result in the same sandbox; --compare rows compares
// result sets, in order where the gold query orders them. Every reward
// must be the one its label gives by hand (right 1; another order 1 unless
// the gold orders; wrong, error and slow 0), the summary's execution
// accuracy their mean, and errors and slow queries -2 and -3.
func TestTextToSQLOnChinook(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 is missing on a CI machine")
		}
		t.Skip("SKIPPED (LOUD): sqlite3 is not installed (Debian: sqlite3)")
	}
	cmp, err := testcases.ParseComparison("rows")
	if err != nil {
		t.Fatal(err)
	}
	eo := engineOptions()
	eo.Language, eo.Compare, eo.Timeout = score.LanguageAuto, cmp, 2
	eng, err := score.New(embedded(t), eo)
	if err != nil {
		t.Fatal(err)
	}
	opts := jobOptions("../testdata/sql/chinook/questions.jsonl", filepath.Join(t.TempDir(), "out.jsonl"))
	sum, err := Run(context.Background(), eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(opts.Output)
	if err != nil {
		t.Fatal(err)
	}
	n, right := 0, 0.0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row struct {
			Reward      []float64 `json:"reward"`
			CaseResults [][]any   `json:"case_results"` // true, false or a negative code
			Errors      []*string `json:"reward_error"`
			ExtraInfo   struct {
				Index    int       `json:"index"`
				Labels   []string  `json:"labels"`
				Expected []float64 `json:"expected_scores"`
			} `json:"extra_info"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		for i, label := range row.ExtraInfo.Labels {
			want := row.ExtraInfo.Expected[i]
			if row.Reward[i] != want {
				t.Errorf(
					"question %d, a %s answer: got %g (verdicts %v), want %g",
					row.ExtraInfo.Index,
					label,
					row.Reward[i],
					row.CaseResults[i],
					want,
				)
			}
			wantVerdict := map[string]float64{"error": -2, "slow": -3}[label]
			if wantVerdict != 0 && (len(row.CaseResults[i]) != 1 || row.CaseResults[i][0] != wantVerdict) {
				t.Errorf(
					"question %d, a %s answer: verdicts %v, want [%g]",
					row.ExtraInfo.Index,
					label,
					row.CaseResults[i],
					wantVerdict,
				)
			}
			n++
			right += want
		}
	}
	if n != 69 {
		t.Errorf("%d answers scored, want 69", n)
	}
	if ea := sum.Overall.ExecutionAccuracy; ea == nil || *ea != right/float64(n) {
		t.Errorf("execution accuracy %v, want %g (%g of %d by hand)", ea, right/float64(n), right, n)
	}
}
