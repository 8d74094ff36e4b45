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
