// Package progress shows a scoring run's progress: a bar on a terminal,
// plain lines elsewhere, from the engine's counters and the run's rows.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/verl-score/verl-score/score"
)

// Mode chooses how progress is shown.
type Mode int

// Progress modes.
const (
	Auto  Mode = iota // a bar on a terminal, log lines otherwise
	Bar               // always a bar
	Lines             // always plain lines
	Off               // nothing (--quiet)
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Rows are a run's row counts, kept by the run and read by the display.
type Rows struct {
	Total   atomic.Int64 // rows the input holds; -1 while unknown (stdin, not yet counted)
	Done    atomic.Int64 // rows finished, those from the journal included
	Resumed atomic.Int64 // rows taken from the journal
	// Fed counts the rows of this run handed to the engine (not those from
	// the journal): with the engine's cases known, the cases per row.
	Fed atomic.Int64
	// Tasks are the run's work besides scoring (image unpacks), shown with
	// the counts.
	Tasks Tasks
}

// SetTotal sets the rows to score; -1 while unknown.
func (r *Rows) SetTotal(n int64) { r.Total.Store(n) }

// RowFed counts a row handed to the engine.
func (r *Rows) RowFed() { r.Fed.Add(1) }

// RowDone counts a finished row, and a resumed one (taken from the
// journal) as such.
func (r *Rows) RowDone(resumed bool) {
	r.Done.Add(1)
	if resumed {
		r.Resumed.Add(1)
	}
}

// NewRows returns counters whose total is not known yet.
func NewRows() *Rows {
	r := &Rows{}
	r.Total.Store(-1)
	return r
}

// noRows marks a display without row counters (check).
const noRows = -2

// progressState is one reading of the counters.
type progressState struct {
	rowsTotal, rowsDone, rowsResumed, rowsFed int64
	casesDone, casesTotal, infra, inFlight    int64
	elapsed                                   time.Duration
	tasks                                     string // Tasks.String
}

// estimate is the share of the work done and the time left, one estimate
// for the bar and the lines. The rows' total is fixed before scoring (the
// parquet footer, a count of JSONL lines). Where the engine has parsed some
// rows, the work is counted in cases, which finish in any order (rows are
// written in input order, so one slow row would hold a count of rows
// still): the cases per row so far stand in for the rows not parsed yet.
// Otherwise the rows written count. The time left is this run's rate so
// far (resumed rows excluded) applied to what is left. ok is false while
// there is nothing to go on.
func (s progressState) estimate() (frac float64, left time.Duration, ok bool) {
	if s.rowsTotal <= 0 {
		return 0, 0, false
	}
	frac = min(float64(s.rowsDone)/float64(s.rowsTotal), 1)
	if s.rowsFed > 0 && s.casesTotal > 0 && s.elapsed > 0 {
		perRow := float64(s.casesTotal) / float64(s.rowsFed)
		fresh := float64(s.rowsTotal - s.rowsResumed) // rows this run scores
		done := min(float64(s.casesDone)/perRow, fresh)
		frac = max(frac, min((float64(s.rowsResumed)+done)/float64(s.rowsTotal), 1))
		if done <= 0 {
			return frac, 0, false
		}
		return frac, time.Duration(float64(s.elapsed) * (fresh - done) / done), true
	}
	run := s.rowsDone - s.rowsResumed
	if run <= 0 || s.elapsed <= 0 {
		return frac, 0, false
	}
	perRow := float64(s.elapsed) / float64(run)
	return frac, time.Duration(perRow * float64(s.rowsTotal-s.rowsDone)), true
}

// line is the plain progress line written when stderr is not a terminal.
func (s progressState) line() string {
	rate := 0.0
	if s.elapsed > 0 {
		rate = float64(s.casesDone) / s.elapsed.Seconds()
	}
	var b strings.Builder
	b.WriteString("verl-score: ")
	switch {
	case s.rowsTotal == noRows:
		b.WriteString("scoring")
	case s.rowsTotal >= 0:
		fmt.Fprintf(&b, "%d/%d rows", s.rowsDone, s.rowsTotal)
		if frac, left, ok := s.estimate(); ok {
			fmt.Fprintf(&b, " (%.0f%%, about %s left)", 100*frac, roundLeft(left))
		} else {
			fmt.Fprintf(&b, " (%.0f%%)", 100*frac)
		}
	default:
		fmt.Fprintf(&b, "%s done (total unknown: stdin)", Count(int(s.rowsDone), "row"))
	}
	fmt.Fprintf(&b, ", %s, %.1f cases/s, %s, %d in flight", Count(int(s.casesDone), "case"), rate,
		Count(int(s.infra), "infrastructure error"), s.inFlight)
	if s.tasks != "" {
		b.WriteString("; " + s.tasks)
	}
	return b.String()
}

// roundLeft rounds a time left to what is worth reading.
func roundLeft(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(10 * time.Second)
	}
	return d.Round(time.Second)
}

// Reporter shows an engine's progress on w until Stop is called.
type Reporter struct {
	stop chan struct{}
	done sync.WaitGroup
	w    io.Writer
	bar  *progressbar.ProgressBar // nil unless a bar is drawn
	mu   sync.Mutex               // held while the bar is drawn or cleared
}

// Start renders a run's progress (rows may be nil: cases only): on a
// terminal a bar over the input's rows (a spinner with counts while the
// total is unknown) with rate, time left and errors; elsewhere a plain
// line every interval.
func Start(w io.Writer, mode Mode, eng *score.Engine, rows *Rows, interval time.Duration) *Reporter {
	r := &Reporter{stop: make(chan struct{}), w: w}
	if mode == Off {
		return r
	}
	if mode == Auto {
		mode = Lines
		if isTerminal(w) {
			mode = Bar
		}
	}
	p := eng.Progress()
	start := time.Now()
	read := func() progressState {
		s := progressState{
			rowsTotal:  noRows,
			casesDone:  p.CasesDone.Load(),
			casesTotal: p.CasesTotal.Load(),
			infra:      p.InfraErrs.Load(),
			inFlight:   p.InFlight.Load(),
			elapsed:    time.Since(start),
		}
		if rows != nil {
			s.rowsTotal, s.rowsDone = rows.Total.Load(), rows.Done.Load()
			s.rowsResumed, s.rowsFed = rows.Resumed.Load(), rows.Fed.Load()
			s.tasks = rows.Tasks.String()
		}
		return s
	}
	barMax := int64(-1)
	if rows != nil {
		barMax = rows.Total.Load()
	}
	r.done.Add(1)
	if mode == Bar {
		bar := progressbar.NewOptions64(barMax,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("scoring"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetPredictTime(false), // ours, in the description, is the one estimate
		)
		r.bar = bar
		shown := int64(0) // the bar never goes back
		go func() {
			defer r.done.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				s := read()
				desc := fmt.Sprintf(
					"scoring: %s written, %s, %s",
					Count(int(s.rowsDone), "row"),
					Count(int(s.casesDone), "case"),
					Count(int(s.infra), "infra error"),
				)
				frac, left, ok := s.estimate()
				if ok {
					desc += fmt.Sprintf(", about %s left", roundLeft(left))
				}
				if s.tasks != "" {
					desc += "; " + s.tasks
				}
				r.mu.Lock()
				bar.Describe(desc)
				if s.rowsTotal != barMax && s.rowsTotal >= 0 {
					barMax = s.rowsTotal // counted after the display started
					bar.ChangeMax64(barMax)
				}
				pos := s.rowsDone // rows' worth of work done, cases counted
				if s.rowsTotal > 0 {
					pos = max(pos, int64(frac*float64(s.rowsTotal)))
				}
				shown = max(shown, pos)
				_ = bar.Set64(shown)
				r.mu.Unlock()
				select {
				case <-r.stop:
					r.mu.Lock()
					_ = bar.Finish()
					r.bar = nil
					r.mu.Unlock()
					return
				case <-t.C:
				}
			}
		}()
		return r
	}
	go func() {
		defer r.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			fmt.Fprintln(w, read().line())
		}
	}()
	return r
}

// Println writes a message of its own line beside the display: on a
// terminal it clears the bar first (the bar is drawn again on its next
// tick), so the message is not written into the bar's line.
func (r *Reporter) Println(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Clear()
	}
	fmt.Fprintln(r.w, msg)
}

// Stop ends the display.
func (r *Reporter) Stop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.done.Wait()
}

// Count writes n and noun, plural unless n is 1: "1 row", "3 rows".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
