package sandbox

import (
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

func TestStarvationRule(t *testing.T) {
	const L = time.Second
	for _, tc := range []struct {
		name             string
		elapsed, granted time.Duration
		cpu              stepCPU
		extra            time.Duration
		starved          bool
	}{
		{"a sleeper did not wait", L, 0, stepCPU{run: time.Millisecond, busiestWait: time.Millisecond, threads: 1}, 0, false},
		{"a loop on an idle machine", L, 0, stepCPU{run: L - 10*time.Millisecond, busiestWait: 10 * time.Millisecond, threads: 1}, 0, false},
		{"a loop that had a third of a CPU", L, 0, stepCPU{run: L / 3, busiestWait: 2 * L / 3, threads: 1}, 2 * L / 3, false},
		{"given back already", 5 * L / 3, 2 * L / 3, stepCPU{run: 5 * L / 9, busiestWait: 10 * L / 9, threads: 1}, 10*L/9 - 2*L/3, false},
		{"more threads than CPUs, all its own", L, 0, stepCPU{run: 2 * L, busiestWait: 900 * time.Millisecond, threads: 64}, 0, false},
		{"the grace nearly spent", 3 * L, 2800 * time.Millisecond, stepCPU{run: L / 5, busiestWait: 4 * L, threads: 1}, 200 * time.Millisecond, false},
		{"the grace spent", 4 * L, 3 * L, stepCPU{run: L / 5, busiestWait: 3800 * time.Millisecond, threads: 1}, 0, true},
		{"no threads left", L, 0, stepCPU{}, 0, false},
	} {
		extra, starved := starvation(L, tc.elapsed, tc.granted, tc.cpu)
		if extra != tc.extra || starved != tc.starved {
			t.Errorf("%s: extra %v starved %v, want %v %v", tc.name, extra, starved, tc.extra, tc.starved)
		}
	}
}

// hogs keeps n busy loops running on the host until the test ends, each
// in a session of its own: where the kernel groups the scheduling by
// session (autogroup), as it does each step's, each is one more neighbour.
func hogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
}

// TestStarvedStepGetsItsTimeBack: with 3 busy loops per CPU on the host, a
// program that needs half its limit of CPU reaches the limit having run a
// fraction of it: it gets the time it waited back and finishes, where a
// wall-clock rule says -3 (or, on a machine busier still, it is reported
// starved: never a plain timeout). A program that sleeps past its limit
// still times out, and so does one that loops forever.
func TestStarvedStepGetsItsTimeBack(t *testing.T) {
	l := sharedSandbox(t)
	needTools(t, l, "python")
	// What half a second of CPU is here, measured on the quiet machine.
	calibrate := "import time\nt = time.process_time()\nn = 0\nwhile n < 3000000:\n    n += 1\nprint(int(3000000 * 0.5 / (time.process_time() - t)))\n"
	resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: calibrate, RunTimeout: 10, MemoryLimitMB: 1024})
	if err != nil || resp.RunResult == nil || resp.RunResult.Stdout == "" {
		t.Fatalf("calibration: %s", respText(resp, err))
	}
	work := "n = 0\nwhile n < " + resp.RunResult.Stdout[:len(resp.RunResult.Stdout)-1] + ":\n    n += 1\nprint('done')\n"

	hogs(t, 3*runtime.NumCPU())
	before := l.Stats()
	run := func(code string) *sandboxclient.Response {
		t.Helper()
		resp, err := l.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: code, RunTimeout: 1, MemoryLimitMB: 1024})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := run(work)
	finished := r.Status == sandboxclient.StatusSuccess && r.RunResult.Stdout == "done\n"
	starved := r.RunResult != nil && r.RunResult.Status == sandboxclient.StepTimeLimitExceeded && r.RunResult.Starved
	if !finished && !starved {
		t.Errorf("half a limit of work under load: %s", respText(r, nil))
	}
	if starved {
		t.Logf("the machine was busier than the test's own load: the work was starved past its grace")
	}
	if l.Stats().StarveGrants == before.StarveGrants {
		t.Error("no time was given back")
	}
	// A sleeper gets back at most what its start-up waited, and times out.
	if r := run("import time\ntime.sleep(5)\n"); r.RunResult == nil || r.RunResult.Status != sandboxclient.StepTimeLimitExceeded || r.RunResult.Starved {
		t.Errorf("a sleeper under load: %s", respText(r, nil))
	}
	if r := run("while True:\n    pass\n"); r.RunResult == nil || r.RunResult.Status != sandboxclient.StepTimeLimitExceeded {
		t.Errorf("a loop under load: %s", respText(r, nil))
	}
}

// TestStepTasksAreTheSteps: a step's tasks are found by its user, and a
// process of that user that started before the step is not one of them.
func TestStepTasksAreTheSteps(t *testing.T) {
	old := exec.Command("/bin/sleep", "30")
	old.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0x3fff0001, Gid: 0x3fff0001}}
	if err := old.Start(); err != nil {
		t.Skipf("SKIPPED: cannot start a process as another user: %v", err)
	}
	defer func() { old.Process.Kill(); old.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	young := exec.Command("/bin/sleep", "30")
	young.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0x3fff0001, Gid: 0x3fff0001}}
	if err := young.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { young.Process.Kill(); young.Wait() }()
	got := stepTasks(0x3fff0001, 0, 100*time.Millisecond)
	if len(got) != 1 || got[0] != "/proc/"+strconv.Itoa(young.Process.Pid) {
		t.Errorf("the step's tasks: %v, want only the younger sleep (%d; the older is %d)", got, young.Process.Pid, old.Process.Pid)
	}
	if all := stepTasks(0x3fff0001, 0, time.Hour); len(all) != 2 {
		t.Errorf("with a step an hour old: %v, want both", all)
	}
	if c := readStepCPU(got); c.threads != 1 {
		t.Errorf("schedstat of the sleep: %+v", c)
	}
}
