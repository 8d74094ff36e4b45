//go:build linux

package sandbox

import (
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
)

// limits are the rlimits of one step; zero means "leave as is".
type limits struct {
	addressMB int
	dataMB    int
	stackMB   int
	cpuSec    int
	nproc     int
	fsizeMB   int
	nofile    int
}

const (
	runNproc  = 256
	fileMB    = 64
	runNofile = 1024
)

func cpuSeconds(timeout time.Duration) int {
	// A backstop: the wall clock ends the step first unless it runs on
	// several cores at once.
	return 2*int(timeout.Seconds()+0.999) + 1
}

// runLimits: the address space is limited to memory_limit_MB as upstream
// does (the stack may use all of it, as upstream allows); heap-limited
// runtimes get a data limit with room above their heap flag instead.
func runLimits(spec *lang.Language, memMB int, timeout time.Duration) limits {
	lim := limits{cpuSec: cpuSeconds(timeout), nproc: runNproc, fsizeMB: fileMB, nofile: runNofile}
	if memMB > 0 {
		if spec.HeapLimited {
			lim.dataMB = memMB + 256
		} else {
			lim.addressMB = memMB
			lim.stackMB = memMB
		}
	}
	return lim
}

// runLimits are runLimits with the sandbox's own options.
func (l *Local) runLimits(spec *lang.Language, memMB int, timeout time.Duration) limits {
	lim := runLimits(spec, memMB, timeout)
	if spec.Name == "ruby" && l.opts.RubyStackMB > 0 && lim.stackMB > 0 {
		lim.stackMB = l.opts.RubyStackMB
	}
	return lim
}

// compileLimits: compilers are trusted programs reading untrusted input;
// they get a generous data limit so that a template bomb cannot take the
// host's memory.
func compileLimits(memMB int, timeout time.Duration) limits {
	data := 4096
	if memMB > data {
		data = memMB
	}
	return limits{dataMB: data, cpuSec: cpuSeconds(timeout), nproc: runNproc, fsizeMB: 512, nofile: runNofile}
}
