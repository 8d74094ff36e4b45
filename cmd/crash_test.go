package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/server"
)

// buildBinary builds the verl-score command into a directory of the test.
func buildBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "verl-score")
	out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// requestLog is a /run_code server (the embedded sandbox behind the real
// handler) that remembers, per request body, when it was answered.
type requestLog struct {
	mu         sync.Mutex
	answered   map[string]time.Time // row/stdin -> answer time
	delay      time.Duration
	count      int
	resent     int // requests for a body already answered
	resentKeys map[string]bool
	onAnswer   func(n int)
}

func (l *requestLog) server(t *testing.T) *httptest.Server {
	local, err := sandbox.New(sandbox.Options{Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	h := server.New(local, server.Options{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost { // run's probe
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct{ Code, Stdin string }
		json.Unmarshal(body, &req)
		row := "?"
		if m := rowMark.FindStringSubmatch(req.Code); m != nil {
			row = m[1]
		}
		key := row + "/" + req.Stdin
		l.mu.Lock()
		if _, ok := l.answered[key]; ok {
			l.resent++
			l.resentKeys[key] = true
		}
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		time.Sleep(l.delay) // a remote sandbox's latency: makes the run last
		h.ServeHTTP(w, r)
		l.mu.Lock()
		l.answered[key] = time.Now()
		l.count++
		n, f := l.count, l.onAnswer
		l.mu.Unlock()
		if f != nil {
			f(n)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

var rowMark = regexp.MustCompile(`# row (\d+)\n`)

// crashRows writes rows of one Python response each with casesPerRow
// cases; every request body differs, so re-sent ones can be told apart.
func crashRows(t *testing.T, path string, rows, casesPerRow int) {
	writeRows(t, path, "crash", rows, casesPerRow, func(i int) string { return crashCode(i, casesPerRow) })
}

// writeRows writes rows of one Python response each (code(i) for row i)
// with casesPerRow cases that double their input.
func writeRows(t *testing.T, path, source string, rows, casesPerRow int, code func(i int) string) {
	var b strings.Builder
	for i := range rows {
		var ins, outs []string
		for c := range casesPerRow {
			ins = append(ins, fmt.Sprintf("%d\n", i*100+c))
			outs = append(outs, fmt.Sprintf("%d\n", 2*(i*100+c)))
		}
		gt, _ := json.Marshal(map[string]any{"inputs": ins, "outputs": outs})
		line, _ := json.Marshal(map[string]any{
			"data_source":  source,
			"responses":    []string{"```python\n" + code(i) + "```"},
			"reward_model": map[string]any{"style": "rule", "ground_truth": string(gt)},
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// crashCode is the program of row i: it doubles its input, and every third
// row is wrong on its last case, so that the verdicts vary.
func crashCode(i, casesPerRow int) string {
	return fmt.Sprintf(
		"# row %d\nn = int(input())\nprint(2 * n + (1 if n %% 100 == %d and %d %% 3 == 0 else 0))\n",
		i,
		casesPerRow-1,
		i,
	)
}

// casesWithoutTimes reads a --cases-out file without the fields that
// measure time, which differ from run to run.
func casesWithoutTimes(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if _, ok := m["provenance"]; ok {
			continue // when and where each run started
		}
		for _, k := range []string{"duration", "compile_duration", "cpu_time", "compile_cpu_time", "cpu_wait"} {
			delete(m, k)
		}
		norm, _ := json.Marshal(m)
		out.Write(norm)
		out.WriteByte('\n')
	}
	return out.String()
}

// journalRows counts the finished rows a journal holds (its first line is
// the header).
func journalRows(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return max(0, bytes.Count(b, []byte("\n"))-1)
}

// journalIndices are the rows a journal holds.
func journalIndices(path string) map[int]bool {
	b, _ := os.ReadFile(path)
	rows := map[int]bool{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Index *int `json:"index"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Index != nil {
			rows[*rec.Index] = true
		}
	}
	return rows
}

// TestKill9ThenResume kills the real binary with SIGKILL at random moments
// of a run and resumes it: every row finished before the kill is in the
// journal (a row is written the moment it finishes, in whatever order),
// rows finished more than a second before it are not sent again, the
// requests sent again are at most those in flight at the kill (and the
// answered cases of rows partly done), the output equals an
// uninterrupted run's, and no temporary file is left.
func TestKill9ThenResume(t *testing.T) {
	bin := buildBinary(t)
	const (
		rows        = 160
		casesPerRow = 2
		inFlight    = 2
		latency     = 20 * time.Millisecond
		// A finished row is written to the journal at once; allow a
		// loaded machine this long between a row's last answer and its
		// line in the journal.
		syncBound = time.Second
	)
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	crashRows(t, in, rows, casesPerRow)
	args := func(out string) []string {
		return []string{"run", in, "-o", out, "--cases-out", out + ".cases", "--summary", out + ".summary",
			"-q", "--max-concurrent", fmt.Sprint(inFlight)}
	}

	base := &requestLog{answered: map[string]time.Time{}, resentKeys: map[string]bool{}, delay: latency}
	srv := base.server(t)
	want := filepath.Join(dir, "want.jsonl")
	cmd := exec.Command(bin, append(args(want), "--sandbox-url", srv.URL+"/run_code")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	if base.count != rows*casesPerRow {
		t.Fatalf("uninterrupted run sent %d requests, want %d", base.count, rows*casesPerRow)
	}
	wantOut, _ := os.ReadFile(want)
	wantCases := casesWithoutTimes(t, want+".cases")

	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 9))
			sub := filepath.Join(dir, fmt.Sprintf("seed%d", seed))
			os.Mkdir(sub, 0o755)
			out := filepath.Join(sub, "out.jsonl")
			killAt := rows*casesPerRow*35/100 + r.IntN(rows*casesPerRow*6/10) // 35%..95% of the requests
			extra := time.Duration(r.IntN(40)) * time.Millisecond

			log := &requestLog{answered: map[string]time.Time{}, resentKeys: map[string]bool{}, delay: latency}
			reached := make(chan struct{})
			var once sync.Once
			log.onAnswer = func(n int) {
				if n >= killAt {
					once.Do(func() { close(reached) })
				}
			}
			srv := log.server(t)
			url := srv.URL + "/run_code"
			cmd := exec.Command(bin, append(args(out), "--sandbox-url", url)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-reached:
			case err := <-exited:
				t.Fatalf("the run ended before the kill: %v", err)
			}
			time.Sleep(extra)
			log.mu.Lock() // no answer is recorded between the kill and the snapshot
			killTime := time.Now()
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			before := map[string]time.Time{}
			for k, v := range log.answered {
				before[k] = v
			}
			sentBefore := log.count
			log.mu.Unlock()
			journaled := journalRows(out + ".journal")
			inJournal := journalIndices(out + ".journal")

			// A row is finished once all its cases are answered, whatever
			// the rows before it are doing: the engine hands each result
			// over as it finishes and the job journals the row at once.
			// The rows finished more than the sync bound before the kill
			// must not be sent again; the rows partly answered at the kill
			// (their other cases in flight or waiting for a slot) and those
			// finished within the bound may be.
			var old, recentCases, partialCases, partialRows int
			var oldRows []int
			for i := range rows {
				answered := 0
				var finished time.Time
				for c := range casesPerRow {
					at, ok := before[fmt.Sprintf("%d/%d\n", i, i*100+c)]
					if !ok {
						continue
					}
					answered++
					if at.After(finished) {
						finished = at
					}
				}
				switch {
				case answered == 0:
				case answered < casesPerRow:
					partialCases += answered
					partialRows++
				case killTime.Sub(finished) > syncBound:
					old++
					oldRows = append(oldRows, i)
				case !inJournal[i]:
					recentCases += casesPerRow
				}
			}
			// The limiter serves the earliest solution first, so the rows
			// partly answered are those of the requests in flight, and one
			// whose next case waits for a slot.
			if partialRows > inFlight+1 {
				t.Errorf(
					"%d rows partly answered at the kill (%d cases); with %d requests in flight, want at most %d",
					partialRows,
					partialCases,
					inFlight,
					inFlight+1,
				)
			}

			resume := exec.Command(bin, append(args(out), "--sandbox-url", url, "--resume")...)
			if msg, err := resume.CombinedOutput(); err != nil {
				t.Fatalf("resume: %v\n%s", err, msg)
			}
			log.mu.Lock()
			resent := log.resent
			var oldResent []int
			for _, i := range oldRows {
				for c := range casesPerRow {
					if log.resentKeys[fmt.Sprintf("%d/%d\n", i, i*100+c)] {
						oldResent = append(oldResent, i)
						break
					}
				}
			}
			log.mu.Unlock()
			t.Logf(
				"killed after %d answers: %d rows journaled, %d finished over %v before the kill, %d cases of rows finished within it and not journaled, "+
					"%d answered of %d rows partly done; resume re-sent %d requests",
				sentBefore,
				journaled,
				old,
				syncBound,
				recentCases,
				partialCases,
				partialRows,
				resent,
			)

			if journaled < old {
				t.Errorf(
					"the journal holds %d rows, but %d rows had finished more than %v before the kill",
					journaled,
					old,
					syncBound,
				)
			}
			if len(oldResent) > 0 {
				t.Errorf("rows %v finished more than %v before the kill and were sent again", oldResent, syncBound)
			}
			// In flight at the kill: answered by the server after it, so
			// sent again by the resume.
			if bound := inFlight + partialCases + recentCases; resent > bound {
				t.Errorf(
					"resume re-sent %d requests; bound %d: %d in flight + %d answered of rows partly done at the kill + %d of rows finished within %v and not journaled",
					resent,
					bound,
					inFlight,
					partialCases,
					recentCases,
					syncBound,
				)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, wantOut) {
				t.Errorf("resumed output differs from the uninterrupted run's")
			}
			if got := casesWithoutTimes(t, out+".cases"); got != wantCases {
				t.Errorf("resumed --cases-out differs from the uninterrupted run's")
			}
			entries, _ := os.ReadDir(sub)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, " ") != "out.jsonl out.jsonl.cases out.jsonl.summary" {
				t.Errorf("after the resume the directory holds %q", names)
			}
		})
	}
}
