package progress

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bytes shows one long piece of work counted in bytes (an image's pull or
// unpack, from the images command): a bar with its bytes and rate on a
// terminal, else a line as it starts and one as it ends. add counts bytes
// done; done ends it and says how it went (nil: done).
func Bytes(w io.Writer, what string) (add func(int64), done func(err error)) {
	start := time.Now()
	var n atomic.Int64
	report := func(err error) {
		if err != nil {
			fmt.Fprintf(w, "verl-score: %s: failed after %.1f MB: %v\n", what, float64(n.Load())/(1<<20), err)
			return
		}
		fmt.Fprintf(w, "verl-score: %s: %.1f MB in %.1f s\n", what, float64(n.Load())/(1<<20), time.Since(start).Seconds())
	}
	if !isTerminal(w) {
		fmt.Fprintf(w, "verl-score: %s\n", what)
		return func(b int64) { n.Add(b) }, report
	}
	bar := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSpinnerType(14))
	return func(b int64) { n.Add(b); _ = bar.Add64(b) }, func(err error) {
		_ = bar.Finish()
		report(err)
	}
}
