package rollout

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestAtomicWrites(t *testing.T) {
	for _, name := range []string{"out.jsonl", "out.parquet"} {
		t.Run(name, func(t *testing.T) {
			for _, commit := range []bool{false, true} {
				dir := t.TempDir()
				final := filepath.Join(dir, name)
				src, err := Open(fixtureParquet, DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				w, err := Create(final, src)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range readAll(t, src) {
					if err := w.Write(b, fakeResults(b.Rows)); err != nil {
						t.Fatal(err)
					}
				}
				src.Close()
				names := dirNames(t, dir)
				if len(names) != 1 || !strings.HasPrefix(names[0], name+".tmp-") {
					t.Fatalf("before Commit the directory holds %q, want only a %s.tmp-* file", names, name)
				}
				if commit {
					if err := w.Commit(); err != nil {
						t.Fatal(err)
					}
					if err := w.Abort(); err != nil { // a deferred Abort after Commit
						t.Errorf("Abort after Commit: %v", err)
					}
					if names := dirNames(t, dir); len(names) != 1 || names[0] != name {
						t.Errorf("after Commit the directory holds %q, want only %s", names, name)
					}
					if st, err := os.Stat(final); err != nil || st.Size() == 0 {
						t.Errorf("final file: %v, %v", st, err)
					}
				} else {
					if err := w.Abort(); err != nil {
						t.Fatal(err)
					}
					if names := dirNames(t, dir); len(names) != 0 {
						t.Errorf("after Abort the directory holds %q, want nothing", names)
					}
				}
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path string
		want string
	}{
		{filepath.Join(dir, "out.csv"), "unknown format"},
		{filepath.Join(dir, "missing", "out.jsonl"), "no such file or directory"},
	}
	for _, tt := range tests {
		if _, err := Create(tt.path, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Create(%s) error = %v, want one containing %q", tt.path, err, tt.want)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("failed Creates left %q behind", names)
	}
}

func TestEmptyInputGivesValidOutput(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"out.parquet", "out.jsonl"} {
		r, err := OpenReader(strings.NewReader("\n\n"), "-", DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		w, err := Create(filepath.Join(dir, name), r)
		if err != nil {
			t.Fatal(err)
		}
		scoreAll(t, r, w)
		sr, err := OpenScored(filepath.Join(dir, name), DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if row, err := sr.Next(); err == nil {
			t.Errorf("%s: got row %+v, want none", name, row)
		}
		sr.Close()
	}
}

// writeGenerated writes n dataset rows of about 600 bytes each.
func writeGenerated(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for i := 0; i < n; i++ {
		fmt.Fprintf(
			bw,
			`{"data_source":"taco","prompt":[{"role":"user","content":"Problem %d: read two numbers and print their sum, then explain."}],"ability":"code","reward_model":{"style":"rule","ground_truth":"{\"inputs\": [\"%d 2\\n\", \"3 4\\n\"], \"outputs\": [\"%d\\n\", \"7\\n\"]}"},"extra_info":{"index":%d,"split":"train"},"responses":["`+"```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```"+`","`+"```python\\nimport sys\\nprint(sum(map(int, sys.stdin.read().split())))\\n```"+`"]}`+"\n",
			i,
			i,
			i+2,
			i,
		)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// peakHeapInuse runs fn while sampling runtime.MemStats.HeapInuse and
// returns the highest sample.
func peakHeapInuse(fn func()) uint64 {
	runtime.GC()
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peak = max(peak, ms.HeapInuse)
		mu.Unlock()
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	fn()
	sample()
	close(stop)
	<-done
	return peak
}

// TestMemoryFlat streams 20k and 200k generated rows through the JSONL
// reader and both writers and compares the peak heap in use: it must not
// grow with the number of rows.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~250 MB of temporary files")
	}
	dir := t.TempDir()
	peaks := map[int]map[string]uint64{}
	for _, n := range []int{20_000, 200_000} {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", n))
		writeGenerated(t, in, n)
		peaks[n] = map[string]uint64{}
		for _, ext := range []string{"jsonl", "parquet"} {
			peaks[n][ext] = peakHeapInuse(func() {
				src, err := Open(in, DefaultOptions())
				if err != nil {
					t.Error(err)
					return
				}
				defer src.Close()
				w, err := Create(filepath.Join(dir, fmt.Sprintf("out%d.%s", n, ext)), src)
				if err != nil {
					t.Error(err)
					return
				}
				defer w.Abort()
				count := 0
				for {
					b, err := src.Next()
					if err != nil {
						break
					}
					count += len(b.Rows)
					if err := w.Write(b, fakeResults(b.Rows)); err != nil {
						t.Error(err)
						return
					}
				}
				if err := w.Commit(); err != nil {
					t.Error(err)
				}
				if count != n {
					t.Errorf("got %d rows, want %d", count, n)
				}
			})
			os.Remove(filepath.Join(dir, fmt.Sprintf("out%d.%s", n, ext)))
		}
		os.Remove(in)
	}
	for _, ext := range []string{"jsonl", "parquet"} {
		small, large := peaks[20_000][ext], peaks[200_000][ext]
		ratio := float64(large) / float64(small)
		t.Logf("JSONL -> %s: peak HeapInuse %.1f MiB at 20k rows, %.1f MiB at 200k rows: ratio %.2f",
			ext, float64(small)/(1<<20), float64(large)/(1<<20), ratio)
		if ratio > 2.5 {
			t.Errorf("JSONL -> %s: heap grew %.2fx for 10x the rows, want it flat", ext, ratio)
		}
	}
}

// The input parquet's key-value metadata (a dataset card's "huggingface"
// entry, say) is kept in the output; its ARROW:schema is the output's own.
func TestParquetKeepsKeyValueMetadata(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.parquet")
	// A copy of the fixture with a metadata entry of its own.
	pf, err := file.OpenParquetFile(fixtureParquet, false)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	pf.Close()
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(tbl.Schema(), f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteTable(tbl, 1024); err != nil {
		t.Fatal(err)
	}
	fw.AppendKeyValueMetadata("huggingface", `{"info": {"dataset": "x"}}`)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}

	src, err := Open(in, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	w, err := Create(out, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range readAll(t, src) {
		if err := w.Write(b, fakeResults(b.Rows)); err != nil {
			t.Fatal(err)
		}
	}
	src.Close()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	pf, err = file.OpenParquetFile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	kv := pf.MetaData().KeyValueMetadata()
	if v := kv.FindValue("huggingface"); v == nil || *v != `{"info": {"dataset": "x"}}` {
		t.Errorf("huggingface metadata: %v", v)
	}
	// And the output reads back, its own columns included.
	sr, err := OpenScored(out, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if _, err := sr.Next(); err != nil {
		t.Fatal(err)
	}
}
