//go:build linux

package jail

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestProgramsAreWhatStillRuns: of a step's processes, one that ended (a
// zombie its parent has not reaped) and the init of a PID namespace are
// not the program's; a process that runs is. A step left with none has
// ended, and is waited for rather than timed out.
func TestProgramsAreWhatStillRuns(t *testing.T) {
	live := exec.Command("/bin/sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	ended := exec.Command("/bin/true")
	if err := ended.Start(); err != nil {
		t.Fatal(err)
	}
	defer ended.Wait()
	for !isZombie(strconv.Itoa(ended.Process.Pid)) {
		time.Sleep(time.Millisecond)
	}
	dir := func(pid int) string { return "/proc/" + strconv.Itoa(pid) }
	procs := []string{dir(live.Process.Pid), dir(ended.Process.Pid), "/proc/0"}

	// A sleep that is PID 1 of a namespace of its own, as a contained
	// step's init is (needs root and unshare).
	init := exec.Command("unshare", "--pid", "--fork", "/bin/sleep", "30")
	if err := init.Start(); err == nil {
		defer func() { init.Process.Kill(); init.Wait() }()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			kids, _ := os.ReadFile(dir(init.Process.Pid) + "/task/" + strconv.Itoa(init.Process.Pid) + "/children")
			if f := strings.Fields(string(kids)); len(f) == 1 {
				procs = append(procs, "/proc/"+f[0])
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(procs) < 4 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no PID namespace could be made (unshare --pid --fork): CI has them")
		}
		t.Logf("SKIPPED in part: no PID namespace here, the init case is not checked")
	}
	got := programs(procs)
	if len(got) != 1 || got[0] != dir(live.Process.Pid) {
		t.Errorf("programs(%v) = %v, want only the live sleep", procs, got)
	}
	if got := programs(procs[1:]); len(got) != 0 {
		t.Errorf("with only the zombie, the gone and the init: %v, want none", got)
	}
}
