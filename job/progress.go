package job

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/verl-score/verl-score/score"
)

// ProgressMode chooses how progress is shown.
type ProgressMode int

// Progress modes.
const (
	ProgressAuto  ProgressMode = iota // a bar on a terminal, log lines otherwise
	ProgressBar                       // always a bar
	ProgressLines                     // always plain lines
	ProgressOff                       // nothing (--quiet)
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Reporter shows an engine's progress on w until Stop is called.
type Reporter struct {
	stop chan struct{}
	done sync.WaitGroup
}

// StartProgress renders the engine's counters: a bar with cases done of
// the cases known so far, rate, ETA and errors on a terminal; a plain line
// every interval otherwise.
func StartProgress(w io.Writer, mode ProgressMode, eng *score.Engine, interval time.Duration) *Reporter {
	r := &Reporter{stop: make(chan struct{})}
	if mode == ProgressOff {
		return r
	}
	if mode == ProgressAuto {
		mode = ProgressLines
		if IsTerminal(w) {
			mode = ProgressBar
		}
	}
	p := eng.Progress()
	start := time.Now()
	r.done.Add(1)
	if mode == ProgressBar {
		bar := progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("scoring"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("cases"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		go func() {
			defer r.done.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				total, done := p.CasesTotal.Load(), p.CasesDone.Load()
				if total > 0 && bar.GetMax64() != total {
					bar.ChangeMax64(total)
				}
				bar.Describe(fmt.Sprintf("scoring (%d infra errors)", p.InfraErrs.Load()))
				_ = bar.Set64(done)
				select {
				case <-r.stop:
					_ = bar.Finish()
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
			done, total := p.CasesDone.Load(), p.CasesTotal.Load()
			el := time.Since(start).Seconds()
			fmt.Fprintf(w, "verl-score: %d/%d cases done, %d responses, %.1f cases/s, %d infrastructure errors, %d requests in flight\n",
				done, total, p.Solutions.Load(), float64(done)/el, p.InfraErrs.Load(), p.InFlight.Load())
		}
	}()
	return r
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
