package job

import (
	"context"
	"fmt"
	"github.com/verl-score/verl-score/results"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verl-score/verl-score/rollout"
)

// resync restarts the journal's syncing under another policy.
func (j *journal) resync(rows int, every time.Duration) {
	j.stop <- struct{}{}
	<-j.stopped
	j.mu.Lock()
	j.syncRows, j.syncEvery = rows, every
	j.mu.Unlock()
	j.startSyncing()
}

// benchRecord is a finished row as a codecontests run journals it: eight
// responses of ten cases.
func benchRecord(i int) *results.Row {
	rec := &results.Row{Index: i, DataSource: "codecontests", IsList: true}
	for range 8 {
		r := results.Response{Reward: 0.7, Requests: 10}
		for c := range 10 {
			r.Verdicts = append(r.Verdicts, int8(c%2))
			r.Statuses = append(r.Statuses, "success")
		}
		rec.Responses = append(rec.Responses, r)
	}
	return rec
}

// BenchmarkJournal measures what making finished rows durable costs: rows
// journaled per second with the default policy (fsync every second or 256
// rows), against one synced only at close (each row still written at once:
// what a machine crash loses entirely) and one that syncs every row.
func BenchmarkJournal(b *testing.B) {
	policies := []struct {
		name  string
		rows  int
		every time.Duration
	}{
		{"unsynced", 1 << 30, time.Hour},
		{"default", journalSyncRows, journalSyncEvery},
		{"every-row", 1, time.Hour},
	}
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "out.jsonl.journal")
			j, err := createJournal(path, journalHeader{Version: journalVersion, Input: "in.jsonl", Fingerprint: "x"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			j.resync(p.rows, p.every)
			syncs0 := j.syncs
			b.ResetTimer()
			for i := range b.N {
				if err := j.write(benchRecord(i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := j.close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(j.syncs-syncs0), "fsyncs")
		})
	}
}

// A row is in the file once write returns (a kill -9 loses none); it is
// synced after journalSyncRows rows, or after journalSyncEvery.
func TestJournalSyncsWithinBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl.journal")
	j, err := createJournal(path, journalHeader{Version: journalVersion, Input: "in.jsonl", Fingerprint: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	// Only the count bound for now: no tick between the writes.
	j.resync(journalSyncRows, time.Hour)
	onDisk := func() int { return journalRows(t, path) }
	for i := range journalSyncRows - 1 {
		j.write(benchRecord(i))
		if i%50 == 0 {
			if n := onDisk(); n != i+1 {
				t.Fatalf("after writing row %d the file holds %d rows", i+1, n)
			}
		}
	}
	count := func() int { j.mu.Lock(); defer j.mu.Unlock(); return j.syncs }
	syncs := count()
	j.write(benchRecord(journalSyncRows - 1))
	if n := onDisk(); n < journalSyncRows || count() == syncs {
		t.Fatalf(
			"after %d rows the file holds %d (fsyncs %d before the last row, %d after)",
			journalSyncRows,
			n,
			syncs,
			count(),
		)
	}
	// Now the time bound.
	j.resync(journalSyncRows, journalSyncEvery)
	syncs = count()
	j.write(benchRecord(journalSyncRows))
	deadline := time.Now().Add(10 * journalSyncEvery)
	for count() == syncs {
		if time.Now().After(deadline) {
			t.Fatalf("a lone row is still not synced after %v", 10*journalSyncEvery)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func journalRows(t *testing.T, path string) int {
	t.Helper()
	rows, err := loadJournal(path, "in.jsonl", "x")
	if err != nil {
		t.Fatal(fmt.Errorf("load journal: %w", err))
	}
	return len(rows)
}

// A run that fails before it has finished a row leaves nothing behind: no
// journal (there is nothing to resume), no output (issue #27, row 12).
// Here --shard on standard input, whose rows cannot be counted first.
func TestFailedRunLeavesNoJournal(t *testing.T) {
	dir := t.TempDir()
	in, err := os.Open("../testdata/example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	opts := jobOptions("-", filepath.Join(dir, "out.jsonl"))
	opts.Stdin = in
	opts.Shard = &rollout.ShardSpec{K: 0, N: 2}
	_, err = runOn(context.Background(), embedded(t), opts)
	if err == nil || !strings.Contains(err.Error(), "--shard") {
		t.Fatalf("got %v, want the --shard error", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left behind after %q: %s", err, e.Name())
	}
}
