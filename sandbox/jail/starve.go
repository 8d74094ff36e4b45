//go:build linux

package jail

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Time a step spent waiting for a CPU is not the program's. SandboxFusion
// ends a step at its wall-clock limit, which is right for a program that
// uses the time (a loop, a sleep) and noise for one the machine starved: on
// a loaded host a compile or a run can reach its limit having run for a
// fraction of it. So when a step reaches its limit, the sandbox reads, from
// /proc/PID/task/TID/schedstat, how long the step's threads were runnable
// but not running. If the step got less than the machine's CPUs (it could
// have run on more than it did) and its busiest thread waited, it gets
// that waiting time back and goes on; at
// the next limit the same again, up to starveGrace times the limit in all.
// A program that loops or sleeps reaches its limit without having waited
// and ends there, as on SandboxFusion; a program that keeps the CPUs busy
// itself (more threads than CPUs) got its CPU and ends there too. A step
// still starved when its grace is spent is marked Starved: the request is
// run once more, alone among the sandbox's runs, and a starved answer
// again is an infrastructure failure (status starved, -1), never a verdict.
//
// A step whose program has ended by its limit (no live process of it is
// left: only zombies and the init that reaps them) finished in time, even
// when the sandbox's side (the init's report, the fork server's answer)
// has not told so yet: it is waited for, up to endedGrace, not timed out.
// So is a step whose live processes have all but not run (together less
// than starveMin of the limit): a wrapper script (kotlinc and scalac are
// shell scripts that run java without exec) waiting for, or
// about to report, a program that printed its answer and is tearing down
// its threads, which on a loaded machine can take past the limit, when
// the step's processes that ended did the work (its group counted more).
// A program that only sleeps is timed out at its limit.
//
// The step's tasks are found by its user (steps under a user of their own)
// or by its PID namespace (contained steps run as root); a step with
// neither (isolation none, as root) keeps the plain wall-clock rule.

const (
	// starveGrace bounds the waiting given back, as a multiple of the
	// limit: a step ends by (1 + starveGrace) times its limit.
	starveGrace = 3
	// starveMin is the least waiting, as a fraction of the limit, worth
	// giving back; a step that waited less than that at its limit was
	// not starved.
	starveMin = 0.05
	// endedGrace bounds the wait for a step whose program has ended at
	// its limit but whose end has not been reported yet.
	endedGrace = time.Second
)

// stepCPU is what the scheduler says of a step's live threads: the CPU
// time they used, and the waiting of the thread that wanted a CPU the
// longest (ran plus waited the most).
type stepCPU struct {
	run, busiestWait time.Duration
	threads          int
}

// stepTasks finds the step's live processes: those of user uid when uid
// is not negative, else those in the PID namespace of process pid (its
// init); none when neither can tell them apart from the host's. Processes
// started before the step (age, with a second's slack) are not its.
func stepTasks(uid, pid int, age time.Duration) []string {
	oldest := uptime() - age - time.Second
	var ns string
	if uid < 0 {
		if pid <= 0 {
			return nil
		}
		self, _ := os.Readlink("/proc/self/ns/pid")
		ns, _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
		if ns == "" || ns == self {
			return nil
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		dir := "/proc/" + name
		if uid >= 0 {
			var st syscall.Stat_t
			if syscall.Stat(dir, &st) != nil || int(st.Uid) != uid {
				continue
			}
		} else if l, _ := os.Readlink(dir + "/ns/pid"); l != ns {
			continue
		}
		if started(dir) < oldest {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// clockTick is the unit of /proc/PID/stat's start time (USER_HZ, 100 on
// every architecture Linux runs Go on).
const clockTick = 10 * time.Millisecond

// uptime is the time since boot, as /proc/PID/stat counts start times.
func uptime() time.Duration {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0
	}
	s, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// started is when the process of /proc directory dir started, since boot;
// 0 when it cannot be read.
func started(dir string) time.Duration {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold anything: the start time is the 22nd field, the 20th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0
	}
	ticks, err := strconv.ParseInt(string(f[19]), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ticks) * clockTick
}

// programs keeps, of a step's processes, those that are the program's and
// still live: a process that ended (a zombie not yet reaped, or gone) has
// nothing left to run, and a contained step's init (PID 1 of its
// namespace) only reaps and reports. None left means the program is over
// and what remains of the step is the sandbox's own bookkeeping.
func programs(procs []string) []string {
	out := procs[:0:0]
	for _, dir := range procs {
		b, err := os.ReadFile(dir + "/status")
		if err != nil {
			continue // gone
		}
		keep := true
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("State:")); ok {
				if st := bytes.TrimSpace(v); len(st) > 0 && (st[0] == 'Z' || st[0] == 'X') {
					keep = false
				}
			} else if v, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
				if f := bytes.Fields(v); len(f) > 1 && string(f[len(f)-1]) == "1" {
					keep = false
				}
			}
		}
		if keep {
			out = append(out, dir)
		}
	}
	return out
}

// idle reports whether run, CPU time of a step's processes, is too little
// for them to be at work at the limit.
func idle(run, limit time.Duration) bool {
	return run < time.Duration(starveMin*float64(limit))
}

// over reports whether a step is over but for its end's report (see
// above): none of it is live, or its live processes (which ran c) are idle
// while those that ended did the work (its group, when it has one, counted
// group in all).
func over(live []string, c stepCPU, group *time.Duration, limit time.Duration) bool {
	return len(live) == 0 || (group != nil && idle(c.run, limit) && !idle(*group-c.run, limit))
}

// readStepCPU sums the schedstat of every thread of procs.
func readStepCPU(procs []string) stepCPU {
	var c stepCPU
	var busiest time.Duration
	for _, p := range procs {
		tasks, _ := filepath.Glob(p + "/task/*/schedstat")
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			f := bytes.Fields(b)
			if len(f) < 2 {
				continue
			}
			run, err1 := strconv.ParseInt(string(f[0]), 10, 64)
			wait, err2 := strconv.ParseInt(string(f[1]), 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			c.threads++
			c.run += time.Duration(run)
			if d := time.Duration(run + wait); d > busiest {
				busiest, c.busiestWait = d, time.Duration(wait)
			}
		}
	}
	return c
}

// starvation decides, at a step's limit, what the waiting it was given
// back so far (granted) and what the scheduler says now (c) mean: more
// time to give (extra > 0), or an end that is starved (the grace is spent
// and it still waited) or a plain timeout.
//
// cpus is how many CPUs the sandbox's steps may run on. A step that kept
// them all busy (within starveMin) had the machine, and its threads' waiting
// was for one another: a program with more busy threads than CPUs. One
// that had less was held back by something else's use of the CPUs: a JVM
// whose main thread waited while its compiler threads and a neighbour ran
// had more than one CPU's worth and was still starved.
func starvation(limit, elapsed, granted time.Duration, cpus int, c stepCPU) (extra time.Duration, starved bool) {
	if c.threads == 0 || elapsed <= 0 {
		return 0, false
	}
	owed := c.busiestWait - granted
	had := float64(c.run) / float64(elapsed) // CPUs, on average
	if owed < time.Duration(starveMin*float64(limit)) || had >= float64(max(cpus, 1))*(1-starveMin) {
		// It did not wait much, or it had the machine's CPUs: the time
		// was the program's.
		return 0, false
	}
	if left := time.Duration(starveGrace)*limit - granted; owed > left {
		if left < time.Duration(starveMin*float64(limit)) {
			return 0, true
		}
		owed = left
	}
	return owed, false
}
