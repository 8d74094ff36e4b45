package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The row total known before scoring equals the rows the reader gives.
func TestCountRowsMatchesTheReader(t *testing.T) {
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "rows.jsonl")
	line := `{"responses":["a"],"reward_model":{"ground_truth":"{}"}}`
	if err := os.WriteFile(jsonl, []byte(line+"\n\n  \n"+line+"\r\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{jsonl, fixtureParquet, "../testdata/dump", "../testdata/example.jsonl"} {
		r, err := Open(path, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		n := CountRows(r)
		got := len(rowsOf(readAll(t, r)))
		r.Close()
		if n != int64(got) {
			t.Errorf("%s: CountRows %d, the reader gave %d rows", path, n, got)
		}
	}
	r, err := OpenReader(strings.NewReader(line+"\n"), "-", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if n := CountRows(r); n != -1 {
		t.Errorf("stdin: CountRows %d, want -1", n)
	}
}
