package score

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sync"

	"github.com/verl-score/verl-score/sandboxclient"
)

// maxSharedAnswers bounds the answers a run keeps for identical executions
// still to come; the oldest go first. GRPO groups and repeated files put
// their repeats close together.
const maxSharedAnswers = 1 << 16

// execKey identifies an execution: everything of a request that can change
// its answer.
type execKey [sha256.Size]byte

func keyOf(req *sandboxclient.Request) execKey {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(req.Language))
	field([]byte(req.Code))
	if req.Stdin == nil {
		field([]byte{0}) // no stdin differs from an empty one
	} else {
		field(append([]byte{1}, *req.Stdin...))
	}
	for _, f := range []float64{req.CompileTimeout, req.RunTimeout, float64(req.MemoryLimitMB)} {
		binary.LittleEndian.PutUint64(n[:], math.Float64bits(f))
		h.Write(n[:])
	}
	var k execKey
	h.Sum(k[:0])
	return k
}

// flight is one execution, in progress or answered.
type flight struct {
	done chan struct{}
	resp *sandboxclient.Response // nil when it failed: the others send their own
}

// flights shares identical executions within a run: the first to ask
// sends the request, those asking meanwhile wait for its answer, those
// asking later take the kept answer. Only answers are shared, never
// failures (an API error may not repeat).
type flights struct {
	mu       sync.Mutex
	m        map[execKey]*flight
	answered []execKey // in the order answered, for eviction
}

func newFlights() *flights { return &flights{m: map[execKey]*flight{}} }

// join returns the flight of k and whether the caller leads it (must send
// the request and call land).
func (f *flights) join(k execKey) (*flight, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[k]; ok {
		return fl, false
	}
	fl := &flight{done: make(chan struct{})}
	f.m[k] = fl
	return fl, true
}

// land ends the flight of k with resp (nil: it failed, and is forgotten).
func (f *flights) land(k execKey, fl *flight, resp *sandboxclient.Response) {
	f.mu.Lock()
	if resp == nil {
		delete(f.m, k)
	} else {
		fl.resp = resp
		f.answered = append(f.answered, k)
		if len(f.answered) > maxSharedAnswers {
			delete(f.m, f.answered[0])
			f.answered = f.answered[1:]
		}
	}
	f.mu.Unlock()
	close(fl.done)
}

// wait returns the flight's answer, or nil if it failed or ctx ended.
func (fl *flight) wait(ctx context.Context) *sandboxclient.Response {
	select {
	case <-fl.done:
		return fl.resp
	case <-ctx.Done():
		return nil
	}
}
