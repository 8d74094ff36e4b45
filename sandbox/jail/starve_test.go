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
		cpus             int
		cpu              stepCPU
		extra            time.Duration
		starved          bool
	}{
		{"a sleeper did not wait", L, 0, 1, stepCPU{run: time.Millisecond, busiestWait: time.Millisecond, threads: 1}, 0,
			false},
		{"a loop on an idle machine", L, 0, 1, stepCPU{run: L - 10*time.Millisecond, busiestWait: 10 * time.Millisecond,
			threads: 1}, 0, false},
		{"a loop that had a third of a CPU", L, 0, 1, stepCPU{run: L / 3, busiestWait: 2 * L / 3, threads: 1}, 2 * L / 3,
			false},
		{"given back already", 5 * L / 3, 2 * L / 3, 1, stepCPU{run: 5 * L / 9, busiestWait: 10 * L / 9, threads: 1},
			10*L/9 - 2*L/3, false},
		{"more threads than CPUs, all its own", L, 0, 1, stepCPU{run: 2 * L, busiestWait: 900 * time.Millisecond,
			threads: 64}, 0, false},
		{"the grace nearly spent", 3 * L, 2800 * time.Millisecond, 1, stepCPU{run: L / 5, busiestWait: 4 * L, threads: 1},
			200 * time.Millisecond, false},
		{"the grace spent", 4 * L, 3 * L, 1, stepCPU{run: L / 5, busiestWait: 3800 * time.Millisecond, threads: 1}, 0, true},
		{"no threads left", L, 0, 1, stepCPU{}, 0, false},
		// On two CPUs: a JVM whose main thread waited while its compiler
		// threads and a neighbour ran had more than one CPU's worth, and
		// was held back all the same; a program that kept both CPUs busy
		// with its own threads had the machine.
		{"a JVM with a neighbour", L, 0, 2, stepCPU{run: 1050 * time.Millisecond, busiestWait: 900 * time.Millisecond,
			threads: 17}, 900 * time.Millisecond, false},
		{"more threads than two CPUs, all its own", L, 0, 2, stepCPU{run: 1980 * time.Millisecond,
			busiestWait: 600 * time.Millisecond, threads: 3}, 0, false},
		{"a loop on one of two idle CPUs", L, 0, 2, stepCPU{run: L - 10*time.Millisecond,
			busiestWait: 10 * time.Millisecond, threads: 1}, 0, false},
	} {
		extra, starved := starvation(L, tc.elapsed, tc.granted, tc.cpus, tc.cpu)
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
		t.Errorf(
			"the step's tasks: %v, want only the younger sleep (%d; the older is %d)",
			got,
			young.Process.Pid,
			old.Process.Pid,
		)
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

// TestWrapperBesideItsEndedChildIsIdle: a step left with a process asleep
// beside its ended child (a wrapper script waits so for a java whose
// threads are tearing down) is ending, and waited for; a step with a
// process that loops is at work.
func TestWrapperBesideItsEndedChildIsIdle(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3: CI has it")
		}
		t.Skip("LOUD SKIP: no python3")
	}
	dir := func(pid int) string { return "/proc/" + strconv.Itoa(pid) }
	wrapper := exec.Command(py, "-c", `import os, sys, time
if os.fork() == 0:
    os._exit(0)
print(os.getpid(), flush=True)
time.sleep(30)`)
	outp, err := wrapper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wrapper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { wrapper.Process.Kill(); wrapper.Wait() }()
	if _, err := outp.Read(make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	var kid string
	deadline := time.Now().Add(5 * time.Second)
	for kid == "" && time.Now().Before(deadline) {
		kids, _ := os.ReadFile(dir(wrapper.Process.Pid) + "/task/" + strconv.Itoa(wrapper.Process.Pid) + "/children")
		if f := strings.Fields(string(kids)); len(f) == 1 && isZombie(f[0]) {
			kid = f[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	if kid == "" {
		t.Fatal("the wrapper's child did not become a zombie")
	}
	for !sleeping(dir(wrapper.Process.Pid)) {
		time.Sleep(time.Millisecond)
	}
	const limit = 10 * time.Second
	step := programs([]string{dir(wrapper.Process.Pid), "/proc/" + kid})
	if len(step) != 1 {
		t.Errorf("programs: %v, want the wrapper alone", step)
	}
	if c := readStepCPU(step); !idle(c.run, limit) {
		t.Errorf("the wrapper beside its ended child: %+v, want idle at a %v limit", c, limit)
	}

	loop := exec.Command(py, "-c", "while True: pass")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { loop.Process.Kill(); loop.Wait() }()
	step = append(step, dir(loop.Process.Pid))
	// However busy the machine, the loop comes to have run more than a
	// twentieth of the limit.
	for deadline := time.Now().Add(30 * time.Second); idle(readStepCPU(step).run,
		limit); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("with a loop that ran for 30 s: %+v, still idle", readStepCPU(step))
		}
	}
}

// sleeping reports whether the process of /proc directory dir is asleep
// (state S).
func sleeping(dir string) bool {
	b, _ := os.ReadFile(dir + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "S")
}
