package score

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// latencyClient answers every request like a healthy server after a fixed
// latency (none at 0), echoing stdin.
type latencyClient struct{ latency time.Duration }

func (c latencyClient) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	if c.latency > 0 {
		t := time.NewTimer(c.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	return echoRun(req), nil
}

func benchSolutions(n, cases int) []Solution {
	gt := groundTruth(cases)
	sols := make([]Solution, n)
	for i := range sols {
		sols[i] = Solution{ID: int64(i), Completion: "```python\nprint(input())\n```", GroundTruth: gt, DataSource: "taco"}
	}
	return sols
}

func feedAndRun(b *testing.B, e *Engine, sols []Solution) {
	in := make(chan Solution, 64)
	go func() {
		defer close(in)
		for _, s := range sols {
			in <- s
		}
	}()
	n := 0
	if err := e.Run(context.Background(), in, func(r *Result) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	if n != len(sols) {
		b.Fatalf("got %d results, want %d", n, len(sols))
	}
}

// BenchmarkEngine measures the engine's own cost per case against a
// client with no latency, and its achieved throughput against a client
// with fixed latency L at limit C, as a fraction of the ideal C/L.
func BenchmarkEngine(b *testing.B) {
	b.Run("zero-latency", func(b *testing.B) {
		const solutions, cases = 1000, 10
		sols := benchSolutions(solutions, cases)
		e, _ := New(latencyClient{}, Options{MaxConcurrent: 64, Timeout: 10, MemoryLimitMB: 1024, Language: "python"})
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			feedAndRun(b, e, sols)
		}
		total := float64(b.N * solutions * cases)
		b.ReportMetric(total/time.Since(start).Seconds(), "cases/s")
		b.ReportMetric(float64(testing.AllocsPerRun(1, func() { feedAndRun(b, e, sols) }))/(solutions*cases), "allocs/case")
	})
	for _, c := range []int{64, 256} {
		b.Run(fmt.Sprintf("latency-20ms-C%d", c), func(b *testing.B) {
			const latency = 20 * time.Millisecond
			sols := benchSolutions(c*4, 10) // 40 rounds of C requests
			e, _ := New(
				latencyClient{latency: latency},
				Options{MaxConcurrent: c, Timeout: 10, MemoryLimitMB: 1024, Language: "python"},
			)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				feedAndRun(b, e, sols)
			}
			elapsed := time.Since(start).Seconds()
			achieved := float64(b.N*len(sols)*10) / elapsed
			ideal := float64(c) / latency.Seconds()
			b.ReportMetric(achieved, "cases/s")
			b.ReportMetric(achieved/ideal, "fraction-of-C/L")
			// Baseline in the same run: C goroutines doing nothing but the
			// same timed waits, the best any scheduler could reach here.
			b.StopTimer()
			rounds := len(sols) * 10 / c
			bstart := time.Now()
			var wg sync.WaitGroup
			for range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						_, _ = latencyClient{latency: latency}.Run(context.Background(), &sandboxclient.Request{})
					}
				}()
			}
			wg.Wait()
			bare := float64(rounds*c) / time.Since(bstart).Seconds()
			b.ReportMetric(achieved/bare, "fraction-of-bare-waits")
		})
	}
}
