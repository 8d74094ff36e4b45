package sandbox

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// BenchmarkPythonThroughput runs trivial Python cases through Local and,
// in the same benchmark, bare `/usr/bin/python3 -c pass` starts, both with
// the Local's concurrency, and reports both rates and their ratio.
func BenchmarkPythonThroughput(b *testing.B) {
	l := newLocal(b, Options{})
	py := l.tools["python3"]
	if py == "" {
		b.Skip("python3 not installed")
	}
	workers := l.opts.Concurrency
	in := "hi"
	req := &sandboxclient.Request{Language: "python", Code: "print(input())", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024}

	// Interleave rounds of both so that a noisy machine hurts both alike.
	const round = 8
	var localTime, bareTime time.Duration
	var localN, bareN int
	parallel := func(n int, f func() error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		jobs := make(chan struct{}, n)
		for range n {
			jobs <- struct{}{}
		}
		close(jobs)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					if err := f(); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		localTime += parallel(round, func() error {
			resp, err := l.Run(context.Background(), req)
			if err == nil && (resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "hi\n") {
				b.Errorf("got %s", respText(resp, nil))
			}
			return err
		})
		localN += round
		bareTime += parallel(round, func() error { return exec.Command(py, "-c", "pass").Run() })
		bareN += round
	}
	b.StopTimer()
	localRate := float64(localN) / localTime.Seconds()
	bareRate := float64(bareN) / bareTime.Seconds()
	b.ReportMetric(localRate, "cases/s")
	b.ReportMetric(bareRate, "bare-starts/s")
	b.ReportMetric(localRate/bareRate, "ratio")
}

// BenchmarkCppCompileOnce runs a C++ solution against 20 cases: it is
// compiled once and the binary reused.
func BenchmarkCppCompileOnce(b *testing.B) {
	l := newLocal(b, Options{})
	if l.tools["g++"] == "" {
		b.Skip("g++ not installed")
	}
	code := "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n"
	inputs := make([]string, 20)
	for i := range inputs {
		inputs[i] = "1 " + decimal(i)
	}
	b.ResetTimer()
	start := time.Now()
	cases := 0
	for range b.N {
		// A fresh source text per iteration, so each one compiles once.
		src := code + "// " + decimal(cases) + "\n"
		var wg sync.WaitGroup
		for i := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "cpp", Code: src, Stdin: &inputs[i], CompileTimeout: 60, RunTimeout: 10, MemoryLimitMB: 1024})
				if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != decimal(i+1)+"\n" {
					b.Errorf("case %d: got %s", i, respText(resp, err))
				}
			}()
		}
		wg.Wait()
		cases += len(inputs)
	}
	b.StopTimer()
	st := l.Stats()
	b.ReportMetric(float64(cases)/time.Since(start).Seconds(), "cases/s")
	b.ReportMetric(float64(st.Compiles)/float64(b.N), "compiles/solution")
}

// BenchmarkContainmentCost runs the same trivial cases through a Local with
// the full containment (a filesystem view, PID, IPC and network namespaces
// per run) and through one with the basic containment (per-run user and
// network namespace only), interleaved, and reports the per-case cost of
// each and their ratio, for Python and for a compiled C++ program.
func BenchmarkContainmentCost(b *testing.B) {
	full := newLocal(b, Options{})
	basic := newLocal(b, Options{Isolation: IsolationBasic})
	if !full.iso.contained {
		b.Skip("no filesystem view on this host")
	}
	in := "1 2"
	reqs := map[string]*sandboxclient.Request{
		"python": {Language: "python", Code: "a, b = map(int, input().split())\nprint(a + b)", Stdin: &in, RunTimeout: 10, MemoryLimitMB: 1024},
		"cpp": {Language: "cpp", Code: "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
			Stdin: &in, CompileTimeout: 60, RunTimeout: 10, MemoryLimitMB: 1024},
	}
	for lang, req := range reqs {
		if full.tools[languages[lang].programs[0]] == "" {
			continue
		}
		b.Run(lang, func(b *testing.B) {
			var fullT, basicT time.Duration
			one := func(l *Local) time.Duration {
				start := time.Now()
				resp, err := l.Run(context.Background(), req)
				if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "3\n" {
					b.Fatalf("got %s", respText(resp, err))
				}
				return time.Since(start)
			}
			one(full) // compile once in each
			one(basic)
			b.ResetTimer()
			for range b.N {
				fullT += one(full)
				basicT += one(basic)
			}
			b.StopTimer()
			b.ReportMetric(float64(fullT.Microseconds())/float64(b.N), "µs/case-contained")
			b.ReportMetric(float64(basicT.Microseconds())/float64(b.N), "µs/case-basic")
			b.ReportMetric(fullT.Seconds()/basicT.Seconds(), "ratio")
		})
	}
}

// BenchmarkCppCompilePCH compiles a typical competitive-programming
// solution (bits/stdc++.h) with and without the precompiled header,
// interleaved, and reports both times and their ratio.
func BenchmarkCppCompilePCH(b *testing.B) {
	fast := newLocal(b, Options{})
	plain := newLocal(b, Options{NoFastPaths: true})
	if fast.tools["g++"] == "" {
		b.Skip("g++ not installed")
	}
	fast.waitPCH(context.Background())
	if using, why := fast.PCHState(); !using {
		b.Skipf("no precompiled header: %s", why)
	}
	in := "3\n1 2 3\n"
	var fastT, plainT time.Duration
	b.ResetTimer()
	for i := range b.N {
		code := typicalCpp + "// " + decimal(i) + "\n" // a new source each time: compiled, not cached
		for _, l := range []*Local{fast, plain} {
			start := time.Now()
			resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "cpp", Code: code, Stdin: &in, CompileTimeout: 60, RunTimeout: 10, MemoryLimitMB: 1024})
			if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "6\n" {
				b.Fatalf("got %s", respText(resp, err))
			}
			if l == fast {
				fastT += time.Since(start)
			} else {
				plainT += time.Since(start)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(plainT.Milliseconds())/float64(b.N), "ms/compile-plain")
	b.ReportMetric(float64(fastT.Milliseconds())/float64(b.N), "ms/compile-pch")
	b.ReportMetric(plainT.Seconds()/fastT.Seconds(), "speedup")
}

// typicalCpp is a competitive-programming solution of the usual shape.
const typicalCpp = `#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    int n;
    cin >> n;
    vector<ll> a(n);
    for (auto &x : a) cin >> x;
    map<ll, int> seen;
    for (ll x : a) seen[x]++;
    sort(a.begin(), a.end());
    ll total = accumulate(a.begin(), a.end(), 0LL);
    priority_queue<ll> pq(a.begin(), a.end());
    set<ll> distinct(a.begin(), a.end());
    cout << total << "\n";
    return 0;
}
`
