package sandboxclient

import (
	"testing"
	"time"
)

// answer is an answer whose steps took server and that waited wait at
// the server, as serve tells it.
func answer(server, wait time.Duration) *Response {
	return &Response{
		Status:         "Success",
		RunResult:      &StepResult{ExecutionTime: server.Seconds()},
		QueueWait:      wait,
		QueueWaitKnown: true,
	}
}

// fill takes every free place and returns how many it took.
func fill(a *adaptive) int {
	n := 0
	for a.tryAcquire() {
		n++
	}
	return n
}

// TestAdaptiveLimitMoves follows the rule window by window: the opening
// doubles while nothing waits, a limit whose requests wait more than
// adaptWait of their round trip loses a tenth, one that does not gains
// one, an overload halves it at once (once per window), and the limit
// stays within its floor and ceiling.
func TestAdaptiveLimitMoves(t *testing.T) {
	a := newAdaptive(AdaptiveOptions{Start: 100, Max: 200})
	if got := fill(a); got != adaptOpening {
		t.Fatalf("the first window let out %d, want %v", got, adaptOpening)
	}
	window := func(n int, wait time.Duration) {
		for range n {
			a.release(100*time.Millisecond, answer(100*time.Millisecond-wait, wait), false)
			fill(a)
		}
	}
	window(4, 0)
	if got := a.current(); got != 8 {
		t.Fatalf("after a window with no waiting the opening is %d, want 8", got)
	}
	window(8, 50*time.Millisecond) // half the round trip waiting
	if got := a.current(); got != 7 {
		t.Fatalf("the opening met a queue at 8: the limit is %d, want 7 (8, less a tenth)", got)
	}
	window(7, 50*time.Millisecond)
	if got := a.current(); got != 6 { // 7.2 × 0.9
		t.Errorf("a window waiting half its round trip: limit %d, want 6", got)
	}
	window(a.current(), 0)
	if got := a.current(); got != 7 {
		t.Errorf("a full window with no waiting: limit %d, want 7", got)
	}
	a.release(time.Millisecond, nil, true)
	if got := a.current(); got != 3 {
		t.Errorf("after an overload: limit %d, want 3 (7 halved)", got)
	}
	a.release(time.Millisecond, nil, true)
	if got := a.current(); got != 3 {
		t.Errorf("a second overload in the same window cut again: limit %d, want 3", got)
	}
	if st := a.stats(); st.Overloads != 2 || st.Lowest != 3 || st.Highest != 8 {
		t.Errorf("stats %+v, want 2 overloads, lowest 3, highest 8", st)
	}
	for range 10 {
		a.release(time.Millisecond, nil, true)
		a.adjust()
	}
	if got := a.current(); got != 1 {
		t.Errorf("after many overloads: limit %d, want the floor 1", got)
	}

	// From a start far too low, slow start doubles.
	b := newAdaptive(AdaptiveOptions{Start: 1, Max: 16})
	fill(b)
	for want := 1; want < 16; want *= 2 {
		if got := b.current(); got != want {
			t.Fatalf("slow start: limit %d, want %d", got, want)
		}
		for range want {
			b.release(10*time.Millisecond, answer(10*time.Millisecond, 0), false)
			fill(b)
		}
	}
	if got := b.current(); got != 16 {
		t.Errorf("slow start went to %d, want the ceiling 16", got)
	}
	// Each answer counts under the limit it came back under: 1 at 1, 2
	// at 2, 4 at 4, 8 at 8.
	if got, want := b.stats().Mean, (1.0+2*2+4*4+8*8)/15; got != want {
		t.Errorf("mean limit %v, want %v", got, want)
	}
}

// TestAdaptiveEstimatesWaitingWithoutTheHeader: from a server that does
// not say how long a request waited, the waiting is the round trip less
// the steps' time, over the least such overhead seen.
func TestAdaptiveEstimatesWaitingWithoutTheHeader(t *testing.T) {
	a := newAdaptive(AdaptiveOptions{Start: 4, Max: 64})
	plain := func(rtt, server time.Duration) *Response {
		return &Response{Status: "Success", RunResult: &StepResult{ExecutionTime: server.Seconds()}}
	}
	fill(a)
	// 5 ms of overhead, a program of 95 ms: nothing waits, the limit
	// (already at its start) grows.
	for range 4 {
		a.release(100*time.Millisecond, plain(100*time.Millisecond, 95*time.Millisecond), false)
		fill(a)
	}
	grown := a.current()
	if grown <= 4 {
		t.Fatalf("no waiting, a used limit: %d, want more than 4", grown)
	}
	// Now each request spends 60 of its 160 ms waiting, a program still
	// of 95 ms: the estimate sees it and the limit comes down.
	for range grown {
		a.release(160*time.Millisecond, plain(160*time.Millisecond, 95*time.Millisecond), false)
		fill(a)
	}
	if got := a.current(); got >= grown {
		t.Errorf("waiting 60 of 160 ms: limit %d, want below %d", got, grown)
	}
}
