//go:build linux

package jail

import "time"

// Limits are the rlimits of one step; zero means "leave as is".
type Limits struct {
	AddressMB int
	DataMB    int
	StackMB   int
	CPUSec    int
	Nproc     int
	FsizeMB   int
	Nofile    int
	// GroupMB, if set, bounds the memory of the run's processes together
	// (its cgroup) instead of RunMemoryBytes's rule.
	GroupMB int
}

const (
	RunNproc  = 256
	fileMB    = 64
	runNofile = 1024
)

func CPUSeconds(timeout time.Duration) int {
	// A backstop: the wall clock ends the step first unless it runs on
	// several cores at once.
	return 2*int(timeout.Seconds()+0.999) + 1
}

// RunLimits: the address space is limited to memory_limit_MB as upstream
// does (the stack may use all of it, as upstream allows); heap-limited
// runtimes get a data limit with room above their heap flag instead.
func RunLimits(heapLimited bool, memMB int, timeout time.Duration) Limits {
	lim := Limits{CPUSec: CPUSeconds(timeout), Nproc: RunNproc, FsizeMB: fileMB, Nofile: runNofile}
	if memMB > 0 {
		if heapLimited {
			lim.DataMB = memMB + 256
		} else {
			lim.AddressMB = memMB
			lim.StackMB = memMB
		}
	}
	return lim
}

// CompileLimits: compilers are trusted programs reading untrusted input;
// they get a generous data limit so that a template bomb cannot take the
// host's memory.
func CompileLimits(memMB int, timeout time.Duration) Limits {
	data := 4096
	if memMB > data {
		data = memMB
	}
	return Limits{DataMB: data, CPUSec: CPUSeconds(timeout), Nproc: RunNproc, FsizeMB: 512, Nofile: runNofile}
}
