//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/testcases"
)

// BenchmarkPythonThroughput runs trivial Python cases through a Local with
// the fork server, through one that starts each run plainly, and bare
// `/usr/bin/python3 -c pass` starts, all at the Local's concurrency and
// interleaved, and reports the three rates and the fork server's ratio to
// each of the others.
func BenchmarkPythonThroughput(b *testing.B) {
	fast := newLocal(b, Options{})
	plain := newLocal(b, Options{NoFastPaths: true})
	py := fast.tools["python3"]
	if py == "" {
		b.Skip("python3 not installed")
	}
	workers := fast.opts.Concurrency
	in := "hi"
	req := &sandboxclient.Request{
		Language:      "python",
		Code:          "print(input())",
		Stdin:         &in,
		RunTimeout:    10,
		MemoryLimitMB: 1024,
	}

	// Interleave rounds of all three so that a noisy machine hurts them alike.
	const round = 16
	var fastT, plainT, bareT time.Duration
	n := 0
	parallel := func(n int, f func() error) time.Duration { return runParallel(b, workers, n, f) }
	through := func(l *Local) func() error {
		return func() error {
			resp, err := l.Run(context.Background(), req)
			if err == nil && (resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "hi\n") {
				b.Errorf("got %s", respText(resp, nil))
			}
			return err
		}
	}
	through(fast)() // start the fork server
	b.ResetTimer()
	for ; n < b.N; n += round {
		fastT += parallel(round, through(fast))
		plainT += parallel(round, through(plain))
		bareT += parallel(round, func() error { return exec.Command(py, "-c", "pass").Run() })
	}
	b.StopTimer()
	fastRate, plainRate, bareRate := float64(n)/fastT.Seconds(), float64(n)/plainT.Seconds(), float64(n)/bareT.Seconds()
	b.ReportMetric(fastRate, "cases/s-fork")
	b.ReportMetric(plainRate, "cases/s-plain")
	b.ReportMetric(bareRate, "bare-starts/s")
	b.ReportMetric(fastRate/bareRate, "fork/bare")
	b.ReportMetric(fastRate/plainRate, "fork/plain")
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
				resp, err := l.Run(
					context.Background(),
					&sandboxclient.Request{
						Language:       "cpp",
						Code:           src,
						Stdin:          &inputs[i],
						CompileTimeout: 60,
						RunTimeout:     10,
						MemoryLimitMB:  1024,
					},
				)
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
	if !full.j.Iso.Contained {
		b.Skip("no filesystem view on this host")
	}
	in := "1 2"
	reqs := map[string]*sandboxclient.Request{
		"python": {
			Language:      "python",
			Code:          "a, b = map(int, input().split())\nprint(a + b)",
			Stdin:         &in,
			RunTimeout:    10,
			MemoryLimitMB: 1024,
		},
		"cpp": {
			Language:       "cpp",
			Code:           "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
			Stdin:          &in,
			CompileTimeout: 60,
			RunTimeout:     10,
			MemoryLimitMB:  1024,
		},
	}
	for name, req := range reqs {
		if full.tools[lang.Get(name).Programs()[0]] == "" {
			continue
		}
		b.Run(name, func(b *testing.B) {
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
	fast.caches.WaitPCH(context.Background())
	if using, why := fast.caches.PCHState(); !using {
		b.Skipf("no precompiled header: %s", why)
	}
	in := "3\n1 2 3\n"
	compareFastPath(b, fast, plain, "compile-pch", "compile-plain", func(i int) *sandboxclient.Request {
		code := typicalCpp + "// " + decimal(i) + "\n" // a new source each time: compiled, not cached
		return &sandboxclient.Request{
			Language:       "cpp",
			Code:           code,
			Stdin:          &in,
			CompileTimeout: 60,
			RunTimeout:     10,
			MemoryLimitMB:  1024,
		}
	}, "6\n")
}

// compareFastPath sends request(i) to fast and to plain, interleaved, b.N
// times each, requires stdout want from every answer, and reports the mean
// time of each (as ms/<fastName>, ms/<plainName>) and their ratio.
func compareFastPath(
	b *testing.B,
	fast, plain *Local,
	fastName, plainName string,
	request func(i int) *sandboxclient.Request,
	want string,
) {
	var fastT, plainT time.Duration
	b.ResetTimer()
	for i := range b.N {
		req := request(i)
		for _, l := range []*Local{fast, plain} {
			start := time.Now()
			resp, err := l.Run(context.Background(), req)
			if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != want {
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
	b.ReportMetric(float64(plainT.Milliseconds())/float64(b.N), "ms/"+plainName)
	b.ReportMetric(float64(fastT.Milliseconds())/float64(b.N), "ms/"+fastName)
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

// BenchmarkPythonMemory runs eight sleeping Python cases at once, with the
// fork server and with plain starts, and reports the memory of each
// in-flight case: the RSS and the PSS (shared pages divided among their
// sharers) of the program and of the run's PID 1 (nsinit in a plain start,
// a sleeping reaper beside a forked program), read from smaps_rollup while
// they sleep.
func BenchmarkPythonMemory(b *testing.B) {
	const n = 8
	for _, mode := range []struct {
		name  string
		plain bool
	}{{"fork", false}, {"plain", true}} {
		l := newLocal(b, Options{Concurrency: n, NoFastPaths: mode.plain})
		if !l.j.Iso.Contained || !l.j.Iso.PerRunUser {
			b.Skip("needs the full containment")
		}
		var rss, pss, cases float64
		for range b.N {
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "python",
						Code: "import time\nprint('up', flush=True)\ntime.sleep(1.5)", RunTimeout: 10, MemoryLimitMB: 1024})
					if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "up\n" {
						b.Errorf("got %s", respText(resp, err))
					}
				}()
			}
			time.Sleep(700 * time.Millisecond)
			r, p, c := inFlightMemory(b)
			rss, pss, cases = rss+r, pss+p, cases+float64(c)
			wg.Wait()
		}
		if cases == 0 {
			b.Fatal("no case seen in flight")
		}
		b.ReportMetric(rss/cases, "RSS-KiB/case-"+mode.name)
		b.ReportMetric(pss/cases, "PSS-KiB/case-"+mode.name)
	}
}

// inFlightMemory sums the RSS and PSS, in KiB, of the processes of this
// process's step users and of their parents up to their run's PID 1, and
// counts the runs.
func inFlightMemory(b testing.TB) (rss, pss float64, runs int) {
	seen := map[int]bool{}
	for _, pid := range stepProcesses(b) {
		runs++
		for p := pid; p > 1 && !seen[p]; {
			seen[p] = true
			r, s, ppid, nsPID1 := procMemory(p)
			rss, pss = rss+r, pss+s
			if nsPID1 || ppid <= 1 {
				break
			}
			// A forked program's parent is the server, shared by all:
			// its PID 1 is the reaper, which the program's group names.
			if pp := procComm(ppid); pp == "python3" {
				if g, err := syscall.Getpgid(p); err == nil && !seen[g] {
					seen[g] = true
					r, s, _, _ := procMemory(g)
					rss, pss = rss+r, pss+s
				}
				break
			}
			p = ppid
		}
	}
	return rss, pss, runs
}

// procMemory reads a process's RSS and PSS (KiB), its parent, and whether
// it is PID 1 of its namespace.
func procMemory(pid int) (rss, pss float64, ppid int, nsPID1 bool) {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "Rss:":
				rss = v
			case "Pss:":
				pss = v
			}
		}
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "PPid:":
			ppid, _ = strconv.Atoi(f[1])
		case len(f) >= 2 && f[0] == "NSpid:":
			nsPID1 = f[len(f)-1] == "1"
		}
	}
	return rss, pss, ppid, nsPID1
}

func procComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// BenchmarkJavacArchive compiles a typical Java solution with javac's
// class-data archive and without, interleaved, and reports both times and
// their ratio.
func BenchmarkJavacArchive(b *testing.B) {
	fast := newLocal(b, Options{})
	plain := newLocal(b, Options{NoFastPaths: true})
	if fast.tools["javac"] == "" {
		b.Skip("javac not installed")
	}
	fast.caches.WaitJavacArchive(context.Background())
	if using, why := fast.caches.JavacArchiveState(); !using {
		b.Skipf("no javac archive: %s", why)
	}
	in := "3 4 1 7\n"
	compareFastPath(b, fast, plain, "case-archive", "case-plain", func(i int) *sandboxclient.Request {
		code := toolchain.JavacArchiveSample + "// " + decimal(i) + "\n" // a new source each time: compiled, not cached
		return &sandboxclient.Request{
			Language:       "java",
			Code:           code,
			Stdin:          &in,
			CompileTimeout: 60,
			RunTimeout:     10,
			MemoryLimitMB:  1024,
		}
	}, "1 4 7 14 Pair[a=1, b=1] zero 3\n")
}

// runParallel runs f n times on workers goroutines and returns the time it
// took; an error fails the benchmark.
func runParallel(b *testing.B, workers, n int, f func() error) time.Duration {
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

// BenchmarkPythonDriverThroughput runs a call-based (fn_name) case, the
// program testcases builds, through a Local whose fork server has run the
// driver's imports already (PythonPrelude), one without that, and one that
// starts each run plainly, interleaved at the Local's concurrency, and
// reports the three rates and their ratios.
func BenchmarkPythonDriverThroughput(b *testing.B) {
	prelude := newLocal(b, Options{PythonPrelude: testcases.DriverHead})
	fork := newLocal(b, Options{})
	plain := newLocal(b, Options{NoFastPaths: true})
	if prelude.tools["python3"] == "" {
		b.Skip("python3 not installed")
	}
	in := "3\n4"
	req := &sandboxclient.Request{
		Language:      "python",
		Code:          testcases.WrapFnName("def add(a, b):\n    return a + b\n", "add"),
		Stdin:         &in,
		RunTimeout:    10,
		MemoryLimitMB: 1024,
	}
	through := func(l *Local) func() error {
		return func() error {
			resp, err := l.Run(context.Background(), req)
			if err == nil && (resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "7\n") {
				b.Errorf("got %s", respText(resp, nil))
			}
			return err
		}
	}
	for _, l := range []*Local{prelude, fork} {
		through(l)() // start the servers
	}
	const round = 16
	workers := prelude.opts.Concurrency
	var preludeT, forkT, plainT time.Duration
	n := 0
	b.ResetTimer()
	for ; n < b.N; n += round {
		preludeT += runParallel(b, workers, round, through(prelude))
		forkT += runParallel(b, workers, round, through(fork))
		plainT += runParallel(b, workers, round, through(plain))
	}
	b.StopTimer()
	if st := prelude.Stats(); st.PreludeRuns == 0 {
		b.Errorf("no run went through the prelude server: %+v", st)
	}
	pr, fr, pl := float64(n)/preludeT.Seconds(), float64(n)/forkT.Seconds(), float64(n)/plainT.Seconds()
	b.ReportMetric(pr, "cases/s-prelude")
	b.ReportMetric(fr, "cases/s-fork")
	b.ReportMetric(pl, "cases/s-plain")
	b.ReportMetric(pr/fr, "prelude/fork")
	b.ReportMetric(pr/pl, "prelude/plain")
}

// BenchmarkSeccompCost runs trivial cases through a Local whose programs
// start under the seccomp filter and through one with --seccomp=off, in
// batches of two cases per CPU, interleaved (which goes first alternates),
// and reports the cases/s of each and their ratio: Python forked from the
// server, Python started plainly, and a compiled C++ program.
func BenchmarkSeccompCost(b *testing.B) {
	in := "1 2"
	sum := &sandboxclient.Request{Language: "python", Code: "a, b = map(int, input().split())\nprint(a + b)", Stdin: &in,
		RunTimeout: 10, MemoryLimitMB: 1024}
	cpp := &sandboxclient.Request{
		Language:       "cpp",
		Code:           "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
		Stdin:          &in,
		CompileTimeout: 60,
		RunTimeout:     10,
		MemoryLimitMB:  1024,
	}
	for _, c := range []struct {
		name  string
		req   *sandboxclient.Request
		plain bool
	}{{"python", sum, false}, {"python-plain", sum, true}, {"cpp", cpp, false}} {
		b.Run(c.name, func(b *testing.B) {
			on := newLocal(b, Options{NoFastPaths: c.plain})
			off := newLocal(b, Options{NoFastPaths: c.plain, NoSeccomp: true})
			if !on.j.Iso.Contained || on.filter == nil {
				b.Skip("no filesystem view, so no filter, on this host")
			}
			if on.tools[lang.Get(c.req.Language).Programs()[0]] == "" {
				b.Skipf("%s not installed", c.req.Language)
			}
			batch := 2 * runtime.NumCPU()
			one := func(l *Local) func() error {
				return func() error {
					resp, err := l.Run(context.Background(), c.req)
					if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "3\n" {
						return fmt.Errorf("got %s", respText(resp, err))
					}
					return nil
				}
			}
			runParallel(b, runtime.NumCPU(), batch, one(on)) // compile, start the servers
			runParallel(b, runtime.NumCPU(), batch, one(off))
			var onT, offT time.Duration
			ratios := make([]float64, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				var a, o time.Duration
				if i%2 == 0 {
					a = runParallel(b, runtime.NumCPU(), batch, one(on))
					o = runParallel(b, runtime.NumCPU(), batch, one(off))
				} else {
					o = runParallel(b, runtime.NumCPU(), batch, one(off))
					a = runParallel(b, runtime.NumCPU(), batch, one(on))
				}
				onT, offT = onT+a, offT+o
				ratios = append(ratios, o.Seconds()/a.Seconds())
			}
			b.StopTimer()
			cases := float64(b.N * batch)
			b.ReportMetric(cases/onT.Seconds(), "cases/s-filter")
			b.ReportMetric(cases/offT.Seconds(), "cases/s-off")
			b.ReportMetric(offT.Seconds()/onT.Seconds(), "ratio")
			// The median of the pairs' ratios: a burst of the machine's
			// own noise moves one pair, not the figure.
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
		})
	}
}
