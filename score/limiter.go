package score

import (
	"container/heap"
	"context"
	"sync"
)

// limiter is the global limit on requests in flight. Unlike a plain
// semaphore it hands a freed slot to the waiter of the earliest solution
// (then the earliest case), so solutions finish roughly in input order:
// results are emitted in order, and an interrupted run leaves few
// half-done solutions behind.
type limiter struct {
	mu      sync.Mutex
	free    int
	waiters waitHeap
}

func newLimiter(n int) *limiter { return &limiter{free: n} }

type waiter struct {
	sol     int64
	cas     int
	ready   chan struct{}
	granted bool
	index   int
}

// acquire takes a slot for case cas of solution sol, or fails when ctx
// ends first.
func (l *limiter) acquire(ctx context.Context, sol int64, cas int) error {
	l.mu.Lock()
	if l.free > 0 && len(l.waiters) == 0 {
		l.free--
		l.mu.Unlock()
		return nil
	}
	w := &waiter{sol: sol, cas: cas, ready: make(chan struct{})}
	heap.Push(&l.waiters, w)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		if w.granted {
			l.mu.Unlock()
			l.release()
		} else {
			heap.Remove(&l.waiters, w.index)
			l.mu.Unlock()
		}
		return ctx.Err()
	}
}

// slot is one place under the limit, for case cas of solution sol. Its
// holder takes it with acquire and gives it back with release, which does
// nothing when the slot is not held, so every path out of a case can call
// it. A slot belongs to one goroutine at a time.
type slot struct {
	l    *limiter
	sol  int64
	cas  int
	held bool
}

// slot returns case cas of solution sol's place under the limit, not held.
func (l *limiter) slot(sol int64, cas int) *slot { return &slot{l: l, sol: sol, cas: cas} }

// acquire takes the place, or fails when ctx ends first; it does nothing
// when the place is held already.
func (s *slot) acquire(ctx context.Context) error {
	if s.held {
		return nil
	}
	if err := s.l.acquire(ctx, s.sol, s.cas); err != nil {
		return err
	}
	s.held = true
	return nil
}

// release gives the place back if it is held.
func (s *slot) release() {
	if s.held {
		s.held = false
		s.l.release()
	}
}

// release frees a slot, handing it to the first waiter if there is one.
func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) > 0 {
		w := heap.Pop(&l.waiters).(*waiter)
		w.granted = true
		close(w.ready)
		return
	}
	l.free++
}

type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].sol != h[j].sol {
		return h[i].sol < h[j].sol
	}
	return h[i].cas < h[j].cas
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
