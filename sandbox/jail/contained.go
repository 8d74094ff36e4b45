//go:build linux

package jail

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// initSetupTimeout bounds how long a step's init may take to build the
// view before the program's own clock starts.
const initSetupTimeout = 30 * time.Second

// InitReport reads what a step's init reports on its fd 4.
type InitReport struct {
	r        *os.File
	startedC chan struct{}
	data     chan []byte
	eof      chan struct{} // closed once the report has ended
	any      bool          // a record came (valid once eof is closed)
	pending  []*os.File    // the init's ends, closed here once it has started
}

func NewInitReport(r *os.File, pending ...*os.File) *InitReport {
	return &InitReport{
		r:        r,
		startedC: make(chan struct{}),
		data:     make(chan []byte, 1),
		eof:      make(chan struct{}),
		pending:  pending,
	}
}

type initResult struct {
	status  syscall.WaitStatus
	elapsed time.Duration
	cost    *StartCost // what a fork-server run cost, as the server and its program report it
	files   map[string]string
	noStart string // the program could not be started: the message
}

// InitCommand is the command that starts a contained step: this executable
// as the step's init, reading its script on fd 3 and reporting on fd 4;
// extra files are its fds 5, 6, ...
func (r *Runner) InitCommand(
	script []byte,
	attr *syscall.SysProcAttr,
	extra ...*os.File,
) (*exec.Cmd, *InitReport, error) {
	pipes, err := OpenPipes(2)
	if err != nil {
		return nil, nil, err
	}
	scriptR, scriptW, repR, repW := pipes[0], pipes[1], pipes[2], pipes[3]
	go func() {
		scriptW.Write(script) // an init that died early is seen by Wait
		scriptW.Close()
	}()
	cmd := &exec.Cmd{
		Path:        r.Iso.SelfExe,
		Args:        []string{"verl-score-sandbox-init"},
		Env:         []string{nsinit.EnvMarker + "=1"},
		SysProcAttr: attr,
		ExtraFiles:  append([]*os.File{scriptR, repW}, extra...),
	}
	return cmd, NewInitReport(repR, scriptR, repW), nil
}

// Started closes the init's ends of the pipes in this process and starts
// reading the report.
func (r *InitReport) Started(ok bool) {
	for _, f := range r.pending {
		f.Close()
	}
	r.pending = nil
	if !ok {
		close(r.data)
		close(r.eof)
		return
	}
	go func() {
		defer close(r.eof)
		var b [1]byte
		// The first record is ReportStarted: one op byte, a zero count.
		n, _ := io.ReadFull(r.r, b[:])
		r.any = n > 0
		if n == 1 && b[0] == nsinit.ReportStarted {
			io.ReadFull(r.r, b[:])
			close(r.startedC)
			rest, _ := io.ReadAll(r.r)
			r.data <- rest
			return
		}
		rest, _ := io.ReadAll(r.r)
		r.data <- append(b[:n:n], rest...)
	}()
}

func (r *InitReport) Close() { r.r.Close() }

// hasStarted reports whether the program started (valid once the report
// has ended).
func (r *InitReport) hasStarted() bool {
	select {
	case <-r.startedC:
		return true
	default:
		return false
	}
}

// result interprets the report of an init that has exited.
func (r *InitReport) result(state *os.ProcessState) (*initResult, error) {
	var data []byte
	select {
	case data = <-r.data:
	case <-time.After(5 * time.Second):
		return nil, errors.New("the step's init exited without a report")
	}
	recs, ok := nsinit.Parse(data)
	if !ok || len(recs) == 0 {
		return nil, fmt.Errorf("the step's init ended without a report (%v)", state)
	}
	// The last record tells, unless the program could not be set up or
	// started: a fork-server run's status follows that news.
	rec := recs[len(recs)-1]
	for _, r := range recs {
		if r.Op == nsinit.ReportError || r.Op == nsinit.ReportNoStart {
			rec = r
			break
		}
	}
	switch rec.Op {
	case nsinit.ReportExit:
		if len(rec.Args) < 2 || len(rec.Args)%2 != 0 {
			break
		}
		ws, ok1 := nsinit.Atoi(rec.Args[0])
		ns, ok2 := nsinit.Atoi(rec.Args[1])
		if !ok1 || !ok2 {
			break
		}
		res := &initResult{status: syscall.WaitStatus(ws), elapsed: time.Duration(ns), files: map[string]string{}}
		for i := 2; i+1 < len(rec.Args); i += 2 {
			res.files[rec.Args[i]] = base64.StdEncoding.EncodeToString([]byte(rec.Args[i+1]))
		}
		var cost StartCost
		for _, r := range recs {
			switch {
			case r.Op == nsinit.ReportFaults && len(r.Args) == 1:
				cost.Faults = atoi64(r.Args[0])
			case r.Op == nsinit.ReportSetup && len(r.Args) == 2:
				cost.Setup, cost.SetupFaults = atoi64(r.Args[0]), atoi64(r.Args[1])
			case r.Op == nsinit.ReportCost && len(r.Args) == 5:
				cost.Runs = 1
				cost.ServerStart, cost.Fork, cost.Spawn = atoi64(r.Args[0]), atoi64(r.Args[1]), atoi64(r.Args[2])
				cost.Program, cost.Reaper = atoi64(r.Args[3]), atoi64(r.Args[4])
			}
		}
		if cost.Runs == 1 {
			res.cost = &cost
		}
		return res, nil
	case nsinit.ReportNoStart:
		if len(rec.Args) == 1 {
			return &initResult{noStart: rec.Args[0]}, nil
		}
	case nsinit.ReportError:
		if len(rec.Args) == 1 {
			return nil, fmt.Errorf("set up the step's filesystem view: %s", rec.Args[0])
		}
	}
	return nil, fmt.Errorf("the step's init sent a malformed report (%v)", state)
}

// fetchFiles reads back the named regular files under dir, base64, each of
// at most max bytes (steps without a view of their own).
func fetchFiles(dir string, names []string, max int) map[string]string {
	fetched := map[string]string{}
	for _, name := range names {
		p, err := SafeJoin(dir, name)
		if err != nil {
			continue
		}
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(max) {
			continue
		}
		if data, err := os.ReadFile(p); err == nil {
			fetched[name] = base64.StdEncoding.EncodeToString(data)
		}
	}
	return fetched
}

func SafeJoin(dir, name string) (string, error) {
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("file name %q leaves the run directory", name)
	}
	return filepath.Join(dir, clean), nil
}

// Ended is closed once the report has ended.
func (r *InitReport) Ended() <-chan struct{} { return r.eof }

func atoi64(s string) int64 {
	n, _ := nsinit.Atoi(s)
	return int64(n)
}

// StartCost is what the fork server's runs cost, summed over runs: CPU
// time in nanoseconds and minor page faults, as the server and its
// programs report them (nsinit.ReportSetup, nsinit.ReportCost).
type StartCost struct {
	Runs        int64 // runs that reported their cost
	ServerStart int64 // the server's CPU on starting them
	Fork        int64 // of that, the forks of the programs
	Spawn       int64 // the server's init's CPU on starting their PID 1s
	Setup       int64 // the programs' CPU from the fork to the end of their set-up
	SetupFaults int64 // their minor page faults in that time
	Program     int64 // the programs' CPU in all (set-up included)
	Faults      int64 // their minor page faults in all
	Reaper      int64 // the CPU of the runs' PID 1s
}

// StartCosts adds up StartCost as runs end.
type StartCosts struct {
	mu  sync.Mutex
	sum StartCost
}

func (c *StartCosts) add(s *StartCost) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum = c.sum.plus(*s, 1)
}

// Since is what the runs cost from earlier, an earlier Sum, to c.
func (c StartCost) Since(earlier StartCost) StartCost { return c.plus(earlier, -1) }

// plus is c + sign × o, figure by figure.
func (c StartCost) plus(o StartCost, sign int64) StartCost {
	return StartCost{Runs: c.Runs + sign*o.Runs, ServerStart: c.ServerStart + sign*o.ServerStart,
		Fork: c.Fork + sign*o.Fork, Spawn: c.Spawn + sign*o.Spawn,
		Setup: c.Setup + sign*o.Setup, SetupFaults: c.SetupFaults + sign*o.SetupFaults,
		Program: c.Program + sign*o.Program, Faults: c.Faults + sign*o.Faults, Reaper: c.Reaper + sign*o.Reaper}
}

// Sum is the costs so far.
func (c *StartCosts) Sum() StartCost {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum
}
