package progress

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
)

// The estimate over a known total: the share only grows, and the time left
// is this run's rate applied to the rows left (resumed rows excluded).
func TestProgressEstimate(t *testing.T) {
	s := progressState{rowsTotal: 1000, rowsDone: 250, elapsed: 30 * time.Second, casesDone: 2000}
	frac, left, ok := s.estimate()
	if !ok || frac != 0.25 || left != 90*time.Second {
		t.Errorf("250 of 1000 rows in 30 s: got %v, %v, %v; want 0.25, 1m30s", frac, left, ok)
	}
	if got := s.line(); got != "verl-score: 250/1000 rows (25%, about 1m30s left), 2000 cases, 66.7 cases/s, 0 infrastructure errors, 0 in flight" {
		t.Errorf("line: %q", got)
	}
	// 600 rows from the journal, 100 scored in 10 s: 300 left at 10 rows/s.
	s = progressState{rowsTotal: 1000, rowsDone: 700, rowsResumed: 600, elapsed: 10 * time.Second}
	if _, left, _ := s.estimate(); left != 30*time.Second {
		t.Errorf("after a resume: %v left, want 30s", left)
	}
	if _, _, ok := (progressState{rowsTotal: 10, elapsed: time.Second}).estimate(); ok {
		t.Error("an estimate before any row finished")
	}
	if got := (progressState{rowsTotal: -1, rowsDone: 1, casesDone: 1}).line(); !strings.Contains(
		got,
		"1 row done (total unknown: stdin)",
	) ||
		!strings.Contains(got, "1 case,") {
		t.Errorf("unknown total: %q", got)
	}
}

// Fed rows at a steady rate with a known total, the plain display shows a
// share that never goes back and a time left within 2x of the truth.
func TestProgressLinesFollowAKnownTotal(t *testing.T) {
	const total, perRow = 60, 10 * time.Millisecond
	c := &Rows{}
	c.Total.Store(total)
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
	eng := newTestEngine(t)
	start := time.Now()
	r := Start(w, Lines, eng, c, 50*time.Millisecond)
	for range total {
		time.Sleep(perRow)
		c.Done.Add(1)
	}
	r.Stop()
	elapsed := time.Since(start)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	re := regexp.MustCompile(`(\d+)/60 rows \((\d+)%, about ([^ ]+) left\)`)
	last, seen := -1, 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		seen++
		pct, _ := strconv.Atoi(m[2])
		if pct < last {
			t.Errorf("share went back from %d%% to %d%%:\n%s", last, pct, out)
		}
		last = pct
		done, _ := strconv.Atoi(m[1])
		left, err := time.ParseDuration(m[3])
		if err != nil {
			t.Fatal(err)
		}
		// What was truly left, at the average rate of the whole run.
		truth := time.Duration(float64(elapsed) * float64(total-done) / total)
		if done >= 10 && total-done >= 10 && (left > 2*truth+time.Second || 2*left+time.Second < truth) {
			t.Errorf("at %d rows: %v left, truly about %v", done, left, truth)
		}
	}
	if seen < 3 {
		t.Fatalf("only %d progress lines:\n%s", seen, out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// newTestEngine is an engine that is never run: the display only reads its
// counters.
func newTestEngine(t *testing.T) *score.Engine {
	t.Helper()
	c, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{URL: "http://127.0.0.1:1/run_code"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := score.New(c, score.Options{MaxConcurrent: 1, Timeout: 1, MemoryLimitMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Counted in cases: rows are written in input order, so a slow first row
// holds the rows written at 0 while the cases of the others finish; the
// share and the time left follow the cases.
func TestProgressEstimateFollowsCases(t *testing.T) {
	// 100 rows, 40 parsed with 400 cases, 300 of them done, no row written.
	s := progressState{rowsTotal: 100, rowsFed: 40, casesTotal: 400, casesDone: 300, elapsed: 30 * time.Second}
	frac, left, ok := s.estimate()
	if !ok || frac != 0.3 || left != 70*time.Second {
		t.Errorf("300 of about 1000 cases in 30 s, no row written: %v, %v, %v; want 0.3, 1m10s", frac, left, ok)
	}
	// Never below the rows written.
	s.rowsDone = 50
	if frac, _, _ := s.estimate(); frac != 0.5 {
		t.Errorf("50 of 100 rows written: share %v", frac)
	}
	// After a resume: 60 rows from the journal, 10 cases a row, 200 of the
	// 400 left done in 20 s: 20 s more.
	s = progressState{
		rowsTotal:   100,
		rowsDone:    60,
		rowsResumed: 60,
		rowsFed:     40,
		casesTotal:  400,
		casesDone:   200,
		elapsed:     20 * time.Second,
	}
	if frac, left, _ := s.estimate(); frac != 0.8 || left != 20*time.Second {
		t.Errorf("after a resume: %v, %v; want 0.8, 20s", frac, left)
	}
}

// A task under way (an image's unpack) is shown with its bytes in the
// plain lines and on the bar, and is gone once it ends; a message written
// beside the bar gets a line of its own (the bar is cleared first).
func TestProgressShowsTasks(t *testing.T) {
	for _, mode := range []Mode{Lines, Bar} {
		rows := NewRows()
		rows.SetTotal(4)
		var mu sync.Mutex
		var buf bytes.Buffer
		w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
		read := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
		r := Start(w, mode, newTestEngine(t), rows, 20*time.Millisecond)
		task := rows.Tasks.Begin("unpacking image calc:1")
		task.Add(3 << 20)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(read(), "unpacking image calc:1: 3.0 MB") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(read(), "unpacking image calc:1: 3.0 MB") {
			t.Fatalf("mode %d: the task is not shown:\n%q", mode, read())
		}
		rows.Tasks.End(task)
		if s := rows.Tasks.String(); s != "" {
			t.Errorf("mode %d: an ended task is still listed: %q", mode, s)
		}
		r.Println("verl-score: image calc:1 unpacked")
		r.Stop()
		out := read()
		i := strings.Index(out, "verl-score: image calc:1 unpacked\n")
		if i < 0 {
			t.Fatalf("mode %d: the message is missing:\n%q", mode, out)
		}
		if before := out[:i]; before != "" && !strings.HasSuffix(before, "\n") && !strings.HasSuffix(before, "\r") {
			t.Errorf("mode %d: the message is written into another line:\n%q", mode, out)
		}
	}
}
