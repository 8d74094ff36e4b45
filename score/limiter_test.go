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
