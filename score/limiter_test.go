package score

import (
	"context"
	"testing"
	"time"
)

func TestLimiterServesEarliestSolutionFirst(t *testing.T) {
	l := newLimiter(1)
	if err := l.acquire(context.Background(), 0, 0); err != nil {
		t.Fatal(err)
	}
	order := make(chan int64, 3)
	for _, sol := range []int64{7, 3, 5} {
		go func() {
			if err := l.acquire(context.Background(), sol, 0); err == nil {
				order <- sol
				l.release()
			}
		}()
	}
	// Wait until all three are queued.
	for {
		l.mu.Lock()
		n := len(l.waiters)
		l.mu.Unlock()
		if n == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.release()
	for _, want := range []int64{3, 5, 7} {
		if got := <-order; got != want {
			t.Fatalf("got solution %d, want %d", got, want)
		}
	}
}

func TestLimiterCancelledWaiterLeavesNoSlotBehind(t *testing.T) {
	l := newLimiter(1)
	_ = l.acquire(context.Background(), 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.acquire(ctx, 1, 0) }()
	time.Sleep(5 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("got nil, want the context's error")
	}
	l.release()
	if l.free != 1 || len(l.waiters) != 0 {
		t.Errorf("got free %d with %d waiters, want 1 and 0", l.free, len(l.waiters))
	}
}

// A slot's release is idempotent and its acquire does nothing while held:
// however often the paths out of a case call them, the limit ends where it
// started.
func TestSlotReleaseIsIdempotent(t *testing.T) {
	l := newLimiter(2)
	ctx := context.Background()
	a, b := l.slot(0, 0), l.slot(0, 1)
	for range 3 {
		if err := a.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if l.free != 1 {
		t.Fatalf("after acquiring one slot three times: %d free, want 1", l.free)
	}
	a.release()
	a.release()
	b.release() // never held
	if l.free != 2 {
		t.Fatalf("after releasing twice and releasing a slot never held: %d free, want 2", l.free)
	}
	// Given back and taken again, as execute does around a shared wait.
	if err := a.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.release()
	if l.free != 2 || a.held {
		t.Fatalf("got %d free (held %v), want 2", l.free, a.held)
	}
}
