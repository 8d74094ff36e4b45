//go:build linux

package swerun

import (
	"context"
	"sync"
	"time"

	"github.com/verl-score/verl-score/swe"
)

// How rollouts get their images. With prefetching (Options.PrefetchImages
// > 0) a rollout waits for its image without a sandbox slot, and images
// are readied (found, pulled, unpacked) PrefetchImages at a time in the
// order rollouts and the engine's window name them: the slots go to the
// rollouts whose images are ready, and the sandbox waits only when none
// is. Without, a rollout takes a slot first and readies its image in it,
// one image at a time, as a plain harness does.
//
// The idle time measured (IdleWaiting) is the slot time the sandbox had
// free while rollouts waited for images: the integral over time of the
// free slots, up to the rollouts waiting.

// prefetcher readies the images of rollouts ahead, in the order the
// engine names them, with Options.PrefetchImages workers, while the images
// readied and not yet used stay under Options.PrefetchMB.
type prefetcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*swe.Instance
	seen   map[string]bool  // named once: queued, readied or used
	unused map[string]int64 // readied ahead and not yet used: MB
	ahead  int64            // their sum
	stop   bool
	// workers are the workers running, waited for by stopPrefetch; ctx
	// ends their pulls
	workers sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// Prefetch queues an instance's image to be readied in the background
// (found, pulled, unpacked), so that its rollout need not wait: the engine
// calls it as each rollout enters its window. An image readied, queued or
// used already is not queued again.
func (s *Runner) Prefetch(inst *swe.Instance) {
	if s.Opts.PrefetchImages <= 0 {
		return
	}
	ref := inst.ImageRef()
	s.mu.Lock()
	_, ready := s.envs[ref]
	s.mu.Unlock()
	p := s.prefetch()
	p.mu.Lock()
	defer p.mu.Unlock()
	if ready || p.seen[ref] || p.stop {
		return
	}
	p.seen[ref] = true
	p.queue = append(p.queue, inst)
	p.cond.Signal()
}

// prefetch is the runner's prefetcher, its workers started on first use.
func (s *Runner) prefetch() *prefetcher {
	s.prefetchOnce.Do(func() {
		p := &prefetcher{seen: map[string]bool{}, unused: map[string]int64{}}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		p.cond = sync.NewCond(&p.mu)
		s.pf = p
		for range s.Opts.PrefetchImages {
			p.workers.Add(1)
			go func() {
				defer p.workers.Done()
				s.prefetchWorker(p)
			}()
		}
	})
	return s.pf
}

func (s *Runner) prefetchWorker(p *prefetcher) {
	limit := int64(s.Opts.PrefetchMB)
	for {
		p.mu.Lock()
		for !p.stop && (len(p.queue) == 0 || limit > 0 && p.ahead >= limit) {
			p.cond.Wait()
		}
		if p.stop {
			p.mu.Unlock()
			return
		}
		inst := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		ref := inst.ImageRef()
		u, err := s.Environment(p.ctx, inst)
		if err != nil {
			continue // its rollout tries again and records the error
		}
		p.mu.Lock()
		if _, used := p.unused[ref]; !used && p.seen[ref] {
			mb := u.Meta.Bytes >> 20
			p.unused[ref] = mb
			p.ahead += mb
		}
		p.mu.Unlock()
	}
}

// gotImage notes that a rollout has its image, after waiting d for it: an
// image readied ahead no longer counts against the bound.
func (s *Runner) gotImage(ref string, d time.Duration) {
	s.waited.Add(int64(d))
	s.mu.Lock()
	if s.firstRef == "" {
		s.firstRef = ref
		s.firstReady = time.Since(s.idleStart())
	}
	if ref == s.firstRef {
		s.waitedFirst += d
	}
	s.mu.Unlock()
	if s.Opts.PrefetchImages <= 0 {
		return
	}
	p := s.prefetch()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[ref] = true
	if mb, ok := p.unused[ref]; ok && mb >= 0 {
		p.ahead -= mb
		p.unused[ref] = -1 // used: never counted again
		p.cond.Broadcast()
	}
}

// Waited is how long rollouts waited for their images (to be found,
// pulled and unpacked), in all: with prefetching, the first rollouts'
// wait, and little more where pulls are faster than tests.
func (s *Runner) Waited() time.Duration { return time.Duration(s.waited.Load()) }

// FirstReady is how long after the first rollout asked for its image the
// first image was ready: the sandbox's wait that no prefetch can spare.
func (s *Runner) FirstReady() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstReady
}

// idleStart is when the first rollout asked for its image.
func (s *Runner) idleStart() time.Time {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	return s.idleFirst
}

// WaitedFirst is the part of Waited that the rollouts of the run's first
// image spent, which no prefetch can spare.
func (s *Runner) WaitedFirst() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitedFirst
}

// stopPrefetch ends the workers (Close).
func (s *Runner) stopPrefetch() {
	if s.Opts.PrefetchImages <= 0 {
		return
	}
	p := s.prefetch()
	p.mu.Lock()
	p.stop = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.cancel()       // a pull under way stops (and resumes next time)
	p.workers.Wait() // one unpacking finishes it first
}

// gate is what a rollout passes before and after readying its image; see
// above.
func (s *Runner) gate() (release func()) {
	s.initGate()
	if s.Opts.PrefetchImages > 0 {
		return func() {}
	}
	s.slots <- struct{}{}
	return func() { <-s.slots }
}

func (s *Runner) initGate() {
	s.gateOnce.Do(func() {
		s.slots = make(chan struct{}, s.sandboxSlots())
		s.prep = make(chan struct{}, max(1, s.Opts.PrefetchImages))
	})
}

func (s *Runner) sandboxSlots() int {
	if s.Jail == nil {
		return 1
	}
	return max(1, s.Jail.Slots())
}

// idle integrates the sandbox's free slot time while rollouts wait for
// images: called with the change in rollouts running steps and in those
// waiting for images.
func (s *Runner) idle(dRunning, dWaiting int) {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	now := time.Now()
	if !s.idleLast.IsZero() {
		slots := s.sandboxSlots()
		idle := min(slots-min(s.running, slots), s.waiting) // free slots, while some wait
		if s.Opts.PrefetchImages <= 0 {
			idle = min(s.waiting, slots) // those waiting hold their slots, idle
		}
		s.idleSlot += time.Duration(idle) * now.Sub(s.idleLast)
	}
	if s.idleFirst.IsZero() {
		s.idleFirst = now
	}
	s.idleLast = now
	s.running += dRunning
	s.waiting += dWaiting
}

// IdleWaiting is the slot time the sandbox spent free while rollouts
// waited for their images (slot-seconds: two slots idle for a second are
// two seconds).
func (s *Runner) IdleWaiting() time.Duration {
	s.idle(0, 0)
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	return s.idleSlot
}
