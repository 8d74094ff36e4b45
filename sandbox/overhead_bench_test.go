//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
)

// BenchmarkCaseOverhead runs b.N distinct trivial Python cases (`pass`
// and a comment naming the case) through the engine and a Local at the
// Local's concurrency, and reports the CPU time a case costs outside its
// program, by where it goes:
//
//   - engine: the score engine's own work, measured in the same run with
//     the same solutions against a client that answers at once;
//   - sandbox-go: the rest of this process (the jail: pipes, cgroup,
//     users, the report; the fork server's socket);
//   - server: the fork server's own work on a run's start (of which fork:
//     the program's fork), and its residue (server-idle: waking, reading
//     requests, answering); with
//     server-faults, the page faults it takes per case (each fork makes
//     every page it then writes fault once more). A server does this one
//     run at a time: serial is its sum, the CPU per case that a server's
//     thread puts in line;
//   - init: the server's init, which prepares each run (its network
//     namespace, its PID namespace and that one's PID 1: spawn), passes it
//     to the server and sees it to its end (reaping, the PID 1's end, the
//     network namespace, the report);
//   - setup: the program's CPU from its fork to its first line (its
//     namespaces, mounts, files, limits, user, and the pages it copies
//     from the server on the way: setup-faults);
//   - reaper: the run's PID 1;
//   - elsewhere: the whole machine's busy CPU time less all of the above
//     and the programs (the kernel's deferred work, as namespaces are torn
//     down; anything else the machine runs, so keep it quiet).
//
// overhead is the sum outside the program (everything but the program's
// own CPU from its first line), and attributed the same without
// elsewhere; program is that CPU from its first line to its exit (the
// interpreter's last steps of start-up, the run, its exit), with the page
// faults it took (program-faults). For scale, bare is the CPU time of one bare
// `python3 -c pass` start, measured in the same run; ratios are to it.
func BenchmarkCaseOverhead(b *testing.B) {
	l := newLocal(b, Options{})
	py := l.tools["python3"]
	if py == "" {
		b.Skip("python3 not installed")
	}
	if using, why := l.forks.State(); !using {
		b.Skipf("the fork server is not used here: %s", why)
	}
	conc := l.opts.Concurrency
	sols := trivialSolutions
	run := func(c sandboxclient.Client, s []score.Solution) { scoreAll(b, c, conc, s) }
	run(l, sols(conc, -conc)) // start the servers
	cost0, pids, inits := l.ForkCosts()
	server0, serverFaults0 := procCPU(b, pids)
	init0, _ := procCPU(b, inits)
	self0, machine0 := selfCPU(), machineBusy(b)
	start := time.Now()
	b.ResetTimer()
	run(l, sols(b.N, 0))
	b.StopTimer()
	wall := time.Since(start)
	self1, machine1 := selfCPU(), machineBusy(b)
	cost1, pids1, _ := l.ForkCosts()
	slices.Sort(pids)
	slices.Sort(pids1)
	if !slices.Equal(pids, pids1) {
		b.Fatalf("the fork servers changed during the run: %v, then %v", pids, pids1)
	}
	server1, serverFaults1 := procCPU(b, pids)
	init1, _ := procCPU(b, inits)
	c := cost1.Since(cost0)
	if c.Runs != int64(b.N) {
		b.Fatalf("%d of %d runs reported their cost", c.Runs, b.N)
	}

	// The engine alone, on the same solutions, answered at once.
	e0 := selfCPU()
	run(instantClient{}, sols(b.N, 0))
	engine := selfCPU() - e0

	// A bare interpreter's start, for scale.
	var ru0, ru1 syscall.Rusage
	const bareN = 40
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru0)
	for range bareN {
		if err := exec.Command(py, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru1)
	bare := (rusageCPU(&ru1) - rusageCPU(&ru0)) / bareN

	n := time.Duration(b.N)
	per := func(d time.Duration) float64 { return float64(d/n) / 1e6 }
	ns := func(v int64) time.Duration { return time.Duration(v) }
	serverAll := server1 - server0
	program := ns(c.Program - c.Setup)
	parts := []struct {
		name string
		d    time.Duration
	}{
		{"engine", engine},
		{"sandbox-go", self1 - self0 - engine},
		{"server-start", ns(c.ServerStart)},
		{"server-idle", serverAll - ns(c.ServerStart)},
		{"init", init1 - init0},
		{"setup", ns(c.Setup)},
		{"reaper", ns(c.Reaper)},
	}
	var attributed time.Duration
	for _, p := range parts {
		attributed += p.d
		b.ReportMetric(per(p.d), "ms-"+p.name+"/case")
	}
	elsewhere := machine1 - machine0 - attributed - program
	b.ReportMetric(per(serverAll), "ms-serial/case")
	b.ReportMetric(float64(serverFaults1-serverFaults0)/float64(b.N), "server-faults/case")
	b.ReportMetric(per(ns(c.Fork)), "ms-fork/case")
	b.ReportMetric(per(ns(c.Spawn)), "ms-spawn/case")
	b.ReportMetric(float64(c.SetupFaults)/float64(b.N), "setup-faults/case")
	b.ReportMetric(float64(c.Faults-c.SetupFaults)/float64(b.N), "program-faults/case")
	b.ReportMetric(per(program), "ms-program/case")
	b.ReportMetric(per(elsewhere), "ms-elsewhere/case")
	b.ReportMetric(per(attributed), "ms-attributed/case")
	b.ReportMetric(per(attributed+elsewhere), "ms-overhead/case")
	b.ReportMetric(float64(bare)/1e6, "ms-bare-start")
	b.ReportMetric(float64(attributed+elsewhere)/float64(n)/float64(bare), "overhead/bare")
	b.ReportMetric(float64(n)/wall.Seconds(), "cases/s")
}

// trivialSolutions are n distinct trivial Python solutions (`pass` and a
// comment naming the case), one case each, numbered from from.
func trivialSolutions(n, from int) []score.Solution {
	gt := trivialTruth()
	out := make([]score.Solution, n)
	for i := range out {
		out[i] = score.Solution{
			ID:          int64(from + i),
			Completion:  fmt.Sprintf("```python\npass  # case %d\n```", from+i),
			GroundTruth: gt,
			DataSource:  "taco",
		}
	}
	return out
}

// scoreAll scores sols through c at concurrency conc and requires each to
// score 1.
func scoreAll(b *testing.B, c sandboxclient.Client, conc int, sols []score.Solution) {
	e, err := score.New(c, score.Options{MaxConcurrent: conc, Timeout: 10, MemoryLimitMB: 1024, Language: "python"})
	if err != nil {
		b.Fatal(err)
	}
	in := make(chan score.Solution, 64)
	go func() {
		defer close(in)
		for _, x := range sols {
			in <- x
		}
	}()
	n := 0
	err = e.Run(context.Background(), in, func(r *score.Result) error {
		if n++; r.Score != 1 {
			b.Errorf("solution %d scored %v: %+v", r.ID, r.Score, r.Cases)
		}
		return nil
	})
	if err != nil || n != len(sols) {
		b.Fatalf("ran %d of %d: %v", n, len(sols), err)
	}
}

// trivialTruth is a ground truth of one case whose expected output is
// empty.
func trivialTruth() []byte {
	obj, _ := json.Marshal(map[string][]string{"inputs": {""}, "outputs": {""}})
	s, _ := json.Marshal(string(obj))
	return s
}

// instantClient answers every request at once as a run that printed
// nothing and exited 0.
type instantClient struct{}

func (instantClient) Run(_ context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	rc := 0
	return &sandboxclient.Response{Status: sandboxclient.StatusSuccess,
		RunResult: &sandboxclient.StepResult{Status: sandboxclient.StepFinished, ReturnCode: &rc, ExecutionTime: 0.01}}, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return rusageCPU(&ru)
}

func rusageCPU(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is USER_HZ, the unit of /proc's CPU times.
const clockTick = 100

// procCPU sums the user and system time of these processes (not their
// children), and their minor page faults.
func procCPU(b testing.TB, pids []int) (cpu time.Duration, faults int64) {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			b.Fatalf("read a fork server's CPU time: %v", err)
		}
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
		flt, _ := strconv.ParseInt(f[7], 10, 64) // minflt, field 10
		faults += flt
		u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
		s, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / clockTick, faults
}

// machineBusy is the CPU time the whole machine has spent busy: user,
// nice, system, interrupts (not idle, waiting for I/O or stolen).
func machineBusy(b *testing.B) time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// BenchmarkScaling is issue #33's table: b.N distinct trivial Python cases
// through the engine and a Local at P programs at once, against b.N bare
// `python3 -c pass` starts by P workers, for P in 1, 8, 16 and the number
// of CPUs (those this machine has). It reports each rate, their ratio,
// and how each rate grew from P=1 to the largest P (scale). On a 16-core
// machine: go test ./sandbox -run XXX -bench Scaling -benchtime 2000x.
func BenchmarkScaling(b *testing.B) {
	cpus := runtime.NumCPU()
	var ps []int
	for _, p := range []int{1, 8, 16, cpus} {
		if p <= cpus && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	var first, firstBare, last, lastBare float64
	for _, p := range ps {
		l := newLocal(b, Options{Concurrency: p})
		py := l.tools["python3"]
		if py == "" {
			b.Skip("python3 not installed")
		}
		scoreAll(b, l, p, trivialSolutions(p, -p)) // start the servers
		start := time.Now()
		scoreAll(b, l, p, trivialSolutions(b.N, 0))
		rate := float64(b.N) / time.Since(start).Seconds()
		bare := float64(b.N) / runParallel(b, p, b.N, func() error { return exec.Command(py, "-c", "pass").Run() }).Seconds()
		l.Close()
		b.ReportMetric(rate, fmt.Sprintf("cases/s-%d", p))
		b.ReportMetric(bare, fmt.Sprintf("bare/s-%d", p))
		b.ReportMetric(rate/bare, fmt.Sprintf("ratio-%d", p))
		if p == ps[0] {
			first, firstBare = rate, bare
		}
		last, lastBare = rate, bare
	}
	b.ReportMetric(last/first, "scale")
	b.ReportMetric(lastBare/firstBare, "bare-scale")
}
