package sandboxclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// simFleet stands in for a sandbox fleet: a fixed number of slots, each
// request holding one for a fixed service time (reported as the run's
// execution_time, as a sandbox reports it), a first-come queue in front
// of them (so latency grows with the queue), and HTTP 429 for a request
// that finds more than bound waiting. With reportWait, it also says how
// long each request waited, as serve does; without, it is SandboxFusion,
// which does not.
type simFleet struct {
	srv     *httptest.Server
	slots   chan struct{}
	service time.Duration
	bound   int64
	// reportWait: answers say how long the request waited for a slot,
	// as serve's do (sandboxclient.QueueWaitHeader).
	reportWait bool

	waiting  atomic.Int64
	received atomic.Int64
	shed     atomic.Int64
	// busy is the time slots were held, summed (ns): over the slots
	// times the run's length, how busy the fleet was kept.
	busy    atomic.Int64
	mu      sync.Mutex
	byShard map[string]int64 // answered, per X-Shard header
}

func newSimFleet(t testing.TB, slots int, service time.Duration, bound int) *simFleet {
	f := &simFleet{slots: make(chan struct{}, slots), service: service, bound: int64(bound), byShard: map[string]int64{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *simFleet) serve(w http.ResponseWriter, r *http.Request) {
	f.received.Add(1)
	var req sandboxclient.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	arrived := time.Now()
	select {
	case f.slots <- struct{}{}:
	default:
		if f.waiting.Add(1) > f.bound {
			f.waiting.Add(-1)
			f.shed.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"detail":"too many requests"}`, http.StatusTooManyRequests)
			return
		}
		f.slots <- struct{}{}
		f.waiting.Add(-1)
	}
	held := time.Now()
	wait := held.Sub(arrived)
	time.Sleep(f.service)
	f.busy.Add(int64(time.Since(held)))
	<-f.slots
	if shard := r.Header.Get("X-Shard"); shard != "" {
		f.mu.Lock()
		f.byShard[shard]++
		f.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	if f.reportWait {
		w.Header().Set(sandboxclient.QueueWaitHeader, fmt.Sprintf("%.6f", wait.Seconds()))
	}
	fmt.Fprintf(
		w,
		`{"status":"Success","message":"","compile_result":null,"run_result":{"status":"Finished","execution_time":%g,"return_code":0,"stdout":"%s\n","stderr":""},"files":{}}`,
		f.service.Seconds(),
		stdin(req.Stdin),
	)
}

// simRun sends n requests through a client built for the fleet: with a
// static limit (workers requests in flight, as the engine's limit holds
// them) or, with adaptive set, the engine's ceiling in flight and the
// fleet's adaptive limit deciding. It returns the answers per second and
// the client's endpoint figures.
func simRun(
	t testing.TB,
	f *simFleet,
	n, workers int,
	adaptive *sandboxclient.AdaptiveOptions,
	shard string,
) (float64, sandboxclient.EndpointStats) {
	ho := sandboxclient.HTTPOptions{MaxConns: workers}
	if shard != "" {
		ho.Header = http.Header{"X-Shard": {shard}}
	}
	fl, err := sandboxclient.NewFleet(
		sandboxclient.FleetOptions{URLs: []string{f.srv.URL + "/run_code"}, HTTP: ho, Adaptive: adaptive},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				in := fmt.Sprint(i)
				req := &sandboxclient.Request{
					Language:       "python",
					Code:           "print(input())",
					Stdin:          &in,
					RunTimeout:     10,
					CompileTimeout: 10,
				}
				resp, err := fl.Run(context.Background(), req)
				if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != fmt.Sprint(i)+"\n" {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests got no right answer", failed.Load(), n)
	}
	return float64(n) / took.Seconds(), fl.Stats()[0]
}

// The simulated fleet of the benchmark and the test: 8 slots of 5 ms,
// 429 past 8 waiting.
const (
	simSlots   = 8
	simService = 5 * time.Millisecond
	simBound   = 8
)

// BenchmarkAdaptiveFleet measures, against the simulated fleet, the best
// static --max-concurrent (a sweep), then auto from a start 10 times too
// low and one 10 times too high, each as a ratio of the best static
// throughput with the share of requests shed (429); then four shards
// started together, each auto: the spread of their throughputs (answers
// per shard while all four ran), as the slowest over the fastest, against
// a fleet that says how long each request waited (serve) and one that
// does not (SandboxFusion). The single clients run against the second.
func BenchmarkAdaptiveFleet(b *testing.B) {
	const n = 4000
	for range b.N {
		best, bestAt := 0.0, 0
		for _, c := range []int{2, 4, 8, 12, 16, 24, 32, 64} {
			f := newSimFleet(b, simSlots, simService, simBound)
			tput, _ := simRun(b, f, n, c, nil, "")
			b.Logf("static %3d: %6.0f answers/s, %4.1f%% shed", c, tput, 100*float64(f.shed.Load())/float64(f.received.Load()))
			if tput > best {
				best, bestAt = tput, c
			}
		}
		b.ReportMetric(float64(bestAt), "best-static")
		for _, tc := range []struct {
			name  string
			start int
		}{{"low", max(bestAt/10, 1)}, {"high", bestAt * 10}} {
			f := newSimFleet(b, simSlots, simService, simBound)
			tput, st := simRun(b, f, n, 256, &sandboxclient.AdaptiveOptions{Start: tc.start, Max: 256}, "")
			shed := float64(f.shed.Load()) / float64(f.received.Load())
			b.Logf(
				"auto from %d (%s): %6.0f answers/s = %.3f of the best static (%d), %.2f%% shed; limit %d at the end, %.2f on average (%d-%d)",
				tc.start,
				tc.name,
				tput,
				tput/best,
				bestAt,
				100*shed,
				st.Adaptive.Limit,
				st.Adaptive.Mean,
				st.Adaptive.Lowest,
				st.Adaptive.Highest,
			)
			b.ReportMetric(tput/best, "auto-"+tc.name+"/best")
			b.ReportMetric(100*shed, "auto-"+tc.name+"-shed-%")
		}
		spread, _ := fourShards(b, n, true)
		b.ReportMetric(spread, "shards-told-wait-slowest/fastest")
		spread, _ = fourShards(b, n, false)
		b.ReportMetric(spread, "shards-untold-slowest/fastest")
	}
}

// fourShards runs four auto clients together against one simulated fleet
// and returns the slowest shard's answers over the fastest's, counted
// when the first shard finishes (while all four were running), and the
// share of all requests shed.
func fourShards(t testing.TB, n int, reportWait bool) (spread, shed float64) {
	f := newSimFleet(t, simSlots, simService, simBound)
	f.reportWait = reportWait
	var snap map[string]int64
	var once sync.Once
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, st := simRun(t, f, n, 256, &sandboxclient.AdaptiveOptions{Max: 256}, fmt.Sprint("shard", s))
			t.Logf(
				"shard %d: limit %d, mean %.2f (%d-%d), %d shed",
				s,
				st.Adaptive.Limit,
				st.Adaptive.Mean,
				st.Adaptive.Lowest,
				st.Adaptive.Highest,
				st.Adaptive.Overloads,
			)
			once.Do(func() {
				f.mu.Lock()
				snap = map[string]int64{}
				for k, v := range f.byShard {
					snap[k] = v
				}
				f.mu.Unlock()
			})
		}()
	}
	wg.Wait()
	lo, hi := int64(-1), int64(0)
	for s := range 4 {
		v := snap[fmt.Sprint("shard", s)]
		if lo < 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	t.Logf(
		"four shards (the server says its queue wait: %v), answers each when the first finished: %v; %.2f%% of all requests shed",
		reportWait,
		snap,
		100*float64(f.shed.Load())/float64(f.received.Load()),
	)
	return float64(lo) / float64(hi), float64(f.shed.Load()) / float64(f.received.Load())
}

func stdin(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
