//go:build linux

package sandbox

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
)

// BenchmarkServeVsSandboxFusion sends the same mixed requests (Python, C++
// and Java solutions, each against six test cases, as scoring sends them)
// to `serve` and to a real SandboxFusion, interleaved, at the same client
// concurrency, and reports both rates and their ratio. It needs a running
// SandboxFusion: VERL_SCORE_BENCH_SANDBOX_FUSION=http://host:port/run_code
// (docs/performance.md says how to start one on this machine).
func BenchmarkServeVsSandboxFusion(b *testing.B) {
	sfURL := os.Getenv("VERL_SCORE_BENCH_SANDBOX_FUSION")
	if sfURL == "" {
		b.Skip("set VERL_SCORE_BENCH_SANDBOX_FUSION to a SandboxFusion /run_code URL")
	}
	const clients = 4
	local, err := New(Options{Concurrency: clients, Warn: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	srv := httptest.NewServer(server.New(local, server.Options{Slots: clients}).Handler())
	defer srv.Close()
	client := func(url string) *sandboxclient.HTTPClient {
		hc, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{URL: url, MaxConns: clients})
		if err != nil {
			b.Fatal(err)
		}
		return hc
	}
	ours, theirs := client(srv.URL+"/run_code"), client(sfURL)

	var oursT, theirsT time.Duration
	requests := 0
	b.ResetTimer()
	for i := range b.N {
		reqs := mixedRequests(i)
		for _, side := range []struct {
			c *sandboxclient.HTTPClient
			t *time.Duration
		}{{ours, &oursT}, {theirs, &theirsT}} {
			start := time.Now()
			sendAll(b, side.c, reqs, clients)
			*side.t += time.Since(start)
		}
		requests += len(reqs)
	}
	b.StopTimer()
	oursRate, theirsRate := float64(requests)/oursT.Seconds(), float64(requests)/theirsT.Seconds()
	b.ReportMetric(oursRate, "serve-req/s")
	b.ReportMetric(theirsRate, "sandboxfusion-req/s")
	b.ReportMetric(oursRate/theirsRate, "ratio")
}

// mixedRequests is one round: three Python, two C++ and one Java solution,
// each with six inputs; round makes the sources new, so each is compiled
// once in the round.
func mixedRequests(round int) []*sandboxclient.Request {
	tag := strconv.Itoa(round)
	sources := []struct{ lang, code string }{
		{"python", "# " + tag + "\nn = int(input())\nprint(sum(map(int, input().split())) * n // n)\n"},
		{"python", "# " + tag + "\nimport sys\ndata = sys.stdin.read().split()\nprint(sum(int(x) for x in data[1:]))\n"},
		{
			"python",
			"# " + tag + "\nfrom collections import Counter\nn = int(input())\nc = Counter(map(int, input().split()))\nprint(sum(k * v for k, v in c.items()))\n",
		},
		{"cpp", typicalCpp + "// " + tag + "\n"},
		{
			"cpp",
			"#include <iostream>\n// " + tag + "\nint main(){long n, s = 0, x; std::cin >> n; while (n--) { std::cin >> x; s += x; } std::cout << s << std::endl;}\n",
		},
		{
			"java",
			"// " + tag + "\nimport java.util.*;\npublic class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in); int n = s.nextInt(); long t = 0; for (int i = 0; i < n; i++) t += s.nextLong(); System.out.println(t); } }\n",
		},
	}
	var out []*sandboxclient.Request
	for _, src := range sources {
		for k := 1; k <= 6; k++ {
			in := strconv.Itoa(k) + "\n"
			for j := 1; j <= k; j++ {
				in += strconv.Itoa(j) + " "
			}
			in += "\n"
			out = append(out, &sandboxclient.Request{Language: src.lang, Code: src.code, Stdin: &in,
				CompileTimeout: 60, RunTimeout: 20, MemoryLimitMB: -1}) // SandboxFusion cannot start javac under a limit
		}
	}
	return out
}

// sendAll sends reqs with n at once and checks every answer: the sum of
// 1..k for input k.
func sendAll(b *testing.B, c *sandboxclient.HTTPClient, reqs []*sandboxclient.Request, n int) {
	jobs := make(chan *sandboxclient.Request)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				resp, err := c.Run(context.Background(), r)
				k, _ := strconv.Atoi((*r.Stdin)[:1])
				if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != strconv.Itoa(k*(k+1)/2)+"\n" {
					b.Errorf("%s: got %s", r.Language, respText(resp, err))
				}
			}
		}()
	}
	for _, r := range reqs {
		jobs <- r
	}
	close(jobs)
	wg.Wait()
}
