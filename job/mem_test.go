package job

import (
	"bufio"
	"context"
	"fmt"
	"github.com/verl-score/verl-score/results"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// echoClient answers at once like a healthy server whose program prints
// its stdin: no latency, so the pipeline itself is what is measured.
type echoClient struct{}

func (echoClient) Run(_ context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	out := ""
	if req.Stdin != nil {
		out = *req.Stdin + "\n"
	}
	rc := 0
	return &sandboxclient.Response{Status: sandboxclient.StatusSuccess, Attempts: 1,
		RunResult: &sandboxclient.StepResult{Status: sandboxclient.StepFinished, ReturnCode: &rc, Stdout: out}}, nil
}

// writeRows writes n verl rows with one response and two cases each.
func writeRows(t testing.TB, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	pad := strings.Repeat("x", 200)
	for i := range n {
		fmt.Fprintf(
			w,
			`{"data_source":"taco","prompt":[{"role":"user","content":"problem %d %s"}],"reward_model":{"style":"rule","ground_truth":"{\"inputs\": [\"%d\", \"b\"], \"outputs\": [\"%d\", \"b\"]}"},"responses":["`+"```python\\nprint(input())\\n```"+`"]}`+"\n",
			i,
			pad,
			i,
			i,
		)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// peakHeap runs fn while sampling the heap in use and returns the peak in MB.
func peakHeap(fn func()) float64 {
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return float64(peak.Load()) / (1 << 20)
}

// BenchmarkMemoryFlat scores 20k and 200k responses against a client with
// no latency and reports the peak heap of each and their ratio: streaming
// keeps it flat, so the ratio should be near 1.
func BenchmarkMemoryFlat(b *testing.B) {
	dir := b.TempDir()
	peaks := map[int]float64{}
	for _, n := range []int{20_000, 200_000} {
		in := filepath.Join(dir, fmt.Sprintf("rows-%d.jsonl", n))
		writeRows(b, in, n)
		var worst float64
		for range b.N {
			out := filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", n))
			os.Remove(out)
			var sum *results.Summary
			var err error
			mb := peakHeap(func() { sum, err = runOn(context.Background(), echoClient{}, jobOptions(in, out)) })
			if err != nil {
				b.Fatal(err)
			}
			if sum.Overall.Responses != n || sum.Overall.MeanScore != 1 {
				b.Fatalf("got %d responses with mean %v, want %d with 1", sum.Overall.Responses, sum.Overall.MeanScore, n)
			}
			worst = max(worst, mb)
		}
		peaks[n] = worst
		b.ReportMetric(worst, fmt.Sprintf("peak-MB-%dk", n/1000))
	}
	b.ReportMetric(peaks[200_000]/peaks[20_000], "peak-ratio-200k/20k")
}
