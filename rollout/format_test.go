package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScoredName(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "dump")
	if err := os.Mkdir(dump, 0o755); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"-":                   "scored.jsonl",
		"data.parquet":        "data.scored.parquet",
		"a/b/data.jsonl":      "a/b/data.scored.jsonl",
		"data.json":           "data.scored.jsonl",
		"data.PARQUET":        "data.scored.jsonl",
		"data.csv":            "data.scored.jsonl",
		dump:                  dump + ".scored.jsonl",
		dump + "/":            dump + ".scored.jsonl",
		"no-extension":        "no-extension.scored.jsonl",
		"x.parquet.jsonl":     "x.parquet.scored.jsonl",
		"rows.scored.parquet": "rows.scored.scored.parquet",
	} {
		if got := ScoredName(in); got != want {
			t.Errorf("ScoredName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every format's names reach its own codec: an output written under each
// name reads back as the same rows.
func TestEveryFormatRoundTrips(t *testing.T) {
	if got := knownExts(); got != ".parquet, .jsonl or .json" {
		t.Errorf("knownExts() = %q", got)
	}
	dir := t.TempDir()
	for _, f := range formats {
		for _, ext := range f.exts {
			in, err := Open(fixtureParquet, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "out"+strings.ToUpper(ext))
			w, err := Create(path, in)
			if err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
			n := 0
			for _, b := range readAll(t, in) {
				if err := w.Write(b, fakeResults(b.Rows)); err != nil {
					t.Fatal(err)
				}
				n += len(b.Rows)
			}
			in.Close()
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			sr, err := OpenScored(path, DefaultOptions())
			if err != nil {
				t.Fatalf("%s %s: %v", f.name, ext, err)
			}
			back := 0
			for {
				if _, err := sr.Next(); err != nil {
					break
				}
				back++
			}
			sr.Close()
			if back != n || n == 0 {
				t.Errorf("%s as %s: wrote %d rows, read back %d", f.name, ext, n, back)
			}
		}
	}
}
