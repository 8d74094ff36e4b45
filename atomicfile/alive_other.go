//go:build !unix

package atomicfile

import "os"

// ProcessAlive reports whether a process with this id exists. Where there
// is no signal 0 to ask with, a process that can be found counts.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
