package job

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrOutputBusy is wrapped by Run's error when another run is writing the
// same output.
var ErrOutputBusy = errors.New("another verl-score run is writing this output")

// LockPath is the lock file that keeps two runs from writing one output.
func LockPath(output string) string { return output + ".lock" }

// outputLock is an exclusive flock on LockPath(output), held for a run.
type outputLock struct {
	path string
	f    *os.File
}

// lockOutput takes the lock of output or says who holds it. The kernel
// drops the lock when its holder dies, so a kill -9 leaves no stale lock,
// only the file, which the next run takes over.
func lockOutput(output string) (*outputLock, error) {
	path := LockPath(output)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	if busy, err := tryLock(f); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		if busy {
			return nil, fmt.Errorf(
				"%s: %w%s, holding %s; wait for it to end or choose another -o",
				output,
				ErrOutputBusy,
				holder,
				path,
			)
		}
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	// The holder before us may have removed the file between our open and
	// our lock: then the lock guards nothing, and we start over.
	if st, serr := os.Stat(path); serr != nil || !sameFile(f, st) {
		f.Close()
		return lockOutput(output)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &outputLock{path: path, f: f}, nil
}

// unlock removes the lock file and releases the lock.
func (l *outputLock) unlock() {
	if l == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
}

func sameFile(f *os.File, st os.FileInfo) bool {
	fst, err := f.Stat()
	return err == nil && os.SameFile(fst, st)
}
