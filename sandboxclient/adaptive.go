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
// The signal is the time a request waited at the server for a slot. A
// sandbox answer carries the time its steps took (compile_result and
// run_result execution_time), so a request's round trip less those is
// the server's overhead: the transfer, the process start, and the wait in
// its queue. The least overhead seen lately is the part that is not
// waiting; the rest of a request's overhead is queueing. By Little's law
// the requests of this client waiting at the server are then, on average,
// in-flight × queueing / round trip. That is TCP Vegas's estimate, with
// the program's own run time taken out: a plain latency gradient (Netflix's
// concurrency-limits) would read a slow program as a full server, and the
// programs of one batch run from microseconds to their whole limit.
//
// Each window (as many answers as the limit, about one round trip) the
// limit moves:
//   - an overload answer (429, 503, a refused or reset connection) halves
//     it, once per window;
//   - more than adaptBeta of this client's requests waiting takes half the
//     excess off, so that a start far too high comes down in a few windows;
//   - fewer than adaptAlpha waiting adds one (doubling while it has never
//     seen the server queue: slow start, from a start far too low).
//
// Every client of a fleet aims at a few requests of its own in the queue,
// no more: the server stays busy, and shards that share it hold about the
// same number each, so a first-come queue gives them the same throughput
// with no coordinator.
const (
	adaptAlpha = 2.0
	adaptBeta  = 4.0
	// adaptBaseline is how many answers the least overhead is kept over
	// before the newest window's least replaces it: a server whose
	// fixed costs change is followed.
	adaptBaseline = 500
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
	min, max float64
	inFlight int
	// wake is closed and replaced whenever a place frees.
	wake chan struct{}

	slowStart bool
	// The current window: answers, summed estimate of queued requests,
	// whether it saw an overload.
	winN, winSize int
	winQueued     float64
	winOverload   bool
	// The least overhead: of the baseline period and of the current one.
	base, next  time.Duration
	baseSamples int

	// Figures for the summary.
	lowest, highest float64
	overloads       int64
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
	a := &adaptive{limit: start, min: float64(o.Min), max: float64(o.Max), wake: make(chan struct{}), slowStart: true,
		base: -1, next: -1, lowest: start, highest: start}
	a.winSize = int(math.Ceil(start))
	return a
}

// current is the limit as a whole number of requests.
func (a *adaptive) current() int { return max(int(a.limit), 1) }

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

// waitChan is closed when a place may have freed.
func (a *adaptive) waitChan() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wake
}

// release gives a place back after a request of round trip rtt whose
// answer says its steps took server (0 when there was no answer); overload
// says the endpoint shed it.
func (a *adaptive) release(rtt, server time.Duration, answered, overload bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	inFlight := float64(a.inFlight)
	a.inFlight--
	if overload {
		a.overloads++
		a.winOverload = true
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
		a.winQueued += inFlight * float64(queueing) / float64(rtt)
	}
	a.winN++
	if a.winN >= a.winSize {
		a.adjust()
	}
	close(a.wake)
	a.wake = make(chan struct{})
}

// adjust ends a window and moves the limit.
func (a *adaptive) adjust() {
	queued := a.winQueued / float64(a.winN)
	switch {
	case a.winOverload:
		a.limit /= 2
		a.slowStart = false
	case queued > adaptBeta:
		a.limit -= max(1, (queued-(adaptAlpha+adaptBeta)/2)/2)
		a.slowStart = false
	case queued < adaptAlpha && a.inFlight+1 >= a.current():
		// Only a limit that is used grows: a client that cannot fill it
		// learns nothing about the server.
		if a.slowStart {
			a.limit *= 2
		} else {
			a.limit++
		}
	}
	a.limit = min(max(a.limit, a.min), a.max)
	a.lowest, a.highest = min(a.lowest, a.limit), max(a.highest, a.limit)
	a.winN, a.winQueued, a.winOverload = 0, 0, false
	a.winSize = a.current()
}

// AdaptiveStats say where an endpoint's limit went.
type AdaptiveStats struct {
	Limit     int   `json:"limit"`      // at the end
	Lowest    int   `json:"lowest"`     // over the run
	Highest   int   `json:"highest"`    // over the run
	Overloads int64 `json:"overloads"` // answers that shed the request
}

func (a *adaptive) stats() AdaptiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdaptiveStats{Limit: a.current(), Lowest: max(int(a.lowest), 1), Highest: max(int(a.highest), 1), Overloads: a.overloads}
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
