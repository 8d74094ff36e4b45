//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether a process with this id exists (a process of
// another user counts).
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
