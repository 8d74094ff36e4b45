package sandboxclient

import (
	"context"
	"math"
	"sync"
	"time"
)

// An adaptive limit sizes the requests in flight to one endpoint from
// what the endpoint's answers say, instead of a number the user guessed.
//
// The signal is the share of a request's round trip it spent waiting at
// the server for a slot. A server that says how long the request waited
// (serve does, in QueueWaitHeader) is taken at its word. Otherwise it is
// estimated: a sandbox answer carries the time its steps took
// (compile_result and run_result execution_time), so the round trip less
// those is the server's overhead (the transfer, the process start, the
// wait); the least overhead seen lately is the part that is not waiting.
// That is TCP Vegas's idea with the program's own run time taken out: a
// plain latency gradient (Netflix's concurrency-limits) would read a slow
// program as a full server, and the programs of one batch run from
// microseconds to their whole limit.
//
// The waiting share is the same for every client of a first-come server,
// so the clients that share it read one signal, and the limit follows it
// the way TCP's window follows loss, additive increase and multiplicative
// decrease, which brings clients on one signal to equal shares with no
// coordinator (Chiu and Jain). Each window (as many answers as the limit,
// about one round trip):
//   - waiting more than adaptWait of the round trip takes a tenth off; the
//     server's queue then stays near adaptWait/(1-adaptWait) of its slots
//     however many clients share it, never empty, so it stays busy;
//   - less adds one (doubling while it has never seen the server queue:
//     slow start, from a start far too low), if the limit was used;
//   - an overload answer (429, 503, a refused or reset connection) halves
//     the limit at once, once per window.
//
// A start is a guess, and a guess far too high would send its whole
// window at once into a server that sheds most of it. So the requests let
// out open like TCP's window: from adaptOpening, doubling each window,
// until they reach the limit or the server queues or sheds; then the
// limit starts from there.
const (
	// adaptWait is the share of the round trip spent waiting that the
	// limit holds the server's queue at.
	adaptWait = 0.2
	// adaptBaseline is how many answers the least overhead is kept over
	// before the newest window's least replaces it: a server whose
	// fixed costs change is followed.
	adaptBaseline = 500
	// adaptOpening is how many requests the first window lets out.
	adaptOpening = 4.0
)

// AdaptiveOptions configure an adaptive limit per endpoint.
type AdaptiveOptions struct {
	// Start is the limit of the first window (default 8, bounded by Max).
	Start int
	// Max is the ceiling per endpoint: the limit never goes above it.
	Max int
	// Min is the floor (default 1).
	Min int
}

type adaptive struct {
	mu       sync.Mutex
	limit    float64
	opening  float64 // while below limit, the requests let out (see above)
	min, max float64
	inFlight int
	// wake is closed and replaced whenever a place frees.
	wake chan struct{}

	slowStart bool
	// The current window: answers, summed estimate of queued requests,
	// whether it saw an overload.
	winN, winSize int
	winWait       float64 // the waiting shares summed
	winOverload   bool
	// The least overhead: of the baseline period and of the current one.
	base, next  time.Duration
	baseSamples int

	// Figures for the summary.
	lowest, highest float64
	overloads       int64
	// The limit each request was answered under, summed, and how many:
	// the mean limit, which a sawtooth's last tooth does not decide.
	limitSum float64
	answers  int64
}

func newAdaptive(o AdaptiveOptions) *adaptive {
	if o.Min <= 0 {
		o.Min = 1
	}
	if o.Max < o.Min {
		o.Max = o.Min
	}
	if o.Start <= 0 {
		o.Start = 8
	}
	start := float64(min(max(o.Start, o.Min), o.Max))
	a := &adaptive{
		limit:     start,
		opening:   min(start, adaptOpening),
		min:       float64(o.Min),
		max:       float64(o.Max),
		wake:      make(chan struct{}),
		slowStart: true,
		base:      -1,
		next:      -1,
	}
	a.lowest, a.highest = float64(a.current()), float64(a.current())
	a.winSize = a.current()
	return a
}

// current is the limit (or, while opening, the opening) as a whole
// number of requests.
func (a *adaptive) current() int { return max(int(min(a.limit, a.opening)), 1) }

// tryAcquire takes a place if one is free.
func (a *adaptive) tryAcquire() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inFlight < a.current() {
		a.inFlight++
		return true
	}
	return false
}

// full reports whether every place is taken.
func (a *adaptive) full() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight >= a.current()
}

// waitChan is closed when a place may have freed.
func (a *adaptive) waitChan() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wake
}

// release gives a place back after a request of round trip rtt and answer
// resp (nil when there was none); overload says the endpoint shed it.
func (a *adaptive) release(rtt time.Duration, resp *Response, overload bool) {
	answered := resp != nil
	server := serverTime(resp)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	a.limitSum += float64(a.current())
	a.answers++
	if overload {
		a.overloads++
		if !a.winOverload {
			a.shed()
		}
	} else if answered && rtt > 0 {
		over := max(rtt-server, 0)
		if a.next < 0 || over < a.next {
			a.next = over
		}
		if a.base < 0 || over < a.base {
			a.base = over
		}
		if a.baseSamples++; a.baseSamples >= adaptBaseline {
			a.base, a.next, a.baseSamples = a.next, -1, 0
		}
		queueing := max(over-a.base, 0)
		if resp.QueueWaitKnown {
			// The server said how long it waited: no estimate needed,
			// and clients that share it read the same queue.
			queueing = resp.QueueWait
		}
		a.winWait += float64(queueing) / float64(rtt)
	}
	a.winN++
	if a.winN >= a.winSize {
		a.adjust()
	}
	close(a.wake)
	a.wake = make(chan struct{})
}

// shed answers the first overload of a window at once (the requests let
// out meanwhile would be shed too): the limit halves and the window starts
// again; the overloads of requests already sent count in it but cut no
// more.
func (a *adaptive) shed() {
	a.limit = max(float64(a.current())/2, a.min)
	a.opening = math.Inf(1)
	a.slowStart = false
	a.lowest = min(a.lowest, float64(a.current()))
	a.winN, a.winWait, a.winOverload = 0, 0, true
	a.winSize = max(a.current(), a.inFlight)
}

// adjust ends a window and moves the limit.
func (a *adaptive) adjust() {
	wait := a.winWait / float64(a.winN)
	used := a.inFlight+1 >= a.current()
	if a.opening < a.limit {
		if !a.winOverload && wait <= adaptWait {
			a.opening *= 2
			a.winN, a.winWait = 0, 0
			a.winSize = a.current()
			a.highest = max(a.highest, float64(a.current()))
			return
		}
		// The server queued or shed at the opening: that is where the
		// limit starts, and moves from.
		a.limit = a.opening
	}
	a.opening = math.Inf(1)
	switch {
	case a.winOverload:
		// Cut already, at the overload.
	case wait > adaptWait:
		a.limit *= 0.9
		a.slowStart = false
	case used && a.slowStart && wait < adaptWait/3:
		a.limit *= 2
	case used:
		// Only a limit that is used grows: a client that cannot fill it
		// learns nothing about the server.
		a.limit++
	}
	a.limit = min(max(a.limit, a.min), a.max)
	c := float64(a.current())
	a.lowest, a.highest = min(a.lowest, c), max(a.highest, c)
	a.winN, a.winWait, a.winOverload = 0, 0, false
	a.winSize = a.current()
}

// AdaptiveStats say where an endpoint's limit went.
type AdaptiveStats struct {
	Limit int `json:"limit"` // at the end
	// Mean is the limit averaged over the answers (each counted under
	// the limit it was released under): where the limit sat, which the
	// end's value, one tooth of a sawtooth, does not say.
	Mean      float64 `json:"mean"`
	Lowest    int     `json:"lowest"`    // over the run
	Highest   int     `json:"highest"`   // over the run
	Overloads int64   `json:"overloads"` // answers that shed the request
}

func (a *adaptive) stats() AdaptiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	mean := float64(a.current())
	if a.answers > 0 {
		mean = a.limitSum / float64(a.answers)
	}
	return AdaptiveStats{
		Limit:     a.current(),
		Mean:      mean,
		Lowest:    max(int(a.lowest), 1),
		Highest:   max(int(a.highest), 1),
		Overloads: a.overloads,
	}
}

// serverTime is what an answer says its steps took.
func serverTime(r *Response) time.Duration {
	if r == nil {
		return 0
	}
	var s float64
	for _, st := range []*StepResult{r.CompileResult, r.RunResult} {
		if st != nil && st.ExecutionTime > 0 && !math.IsInf(st.ExecutionTime, 0) {
			s += st.ExecutionTime
		}
	}
	return time.Duration(s * float64(time.Second))
}

// waitAny waits until one of chans is closed or ctx ends.
func waitAny(ctx context.Context, chans []<-chan struct{}) error {
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range chans {
		go func() {
			select {
			case <-c:
				select {
				case done <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
