package progress

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tasks are the long pieces of work a run does besides scoring (an image's
// unpack, once per image), shown with its progress: on the bar's line, and
// in each plain line. The zero value holds none.
type Tasks struct {
	mu   sync.Mutex
	list []*Task
}

// Task is one piece of work in Tasks: its name and the bytes done so far.
type Task struct {
	name  string
	start time.Time
	bytes atomic.Int64
}

// Begin starts a task named name ("unpacking image python:3.11").
func (ts *Tasks) Begin(name string) *Task {
	t := &Task{name: name, start: time.Now()}
	ts.mu.Lock()
	ts.list = append(ts.list, t)
	ts.mu.Unlock()
	return t
}

// Add counts n more bytes done.
func (t *Task) Add(n int64) { t.bytes.Add(n) }

// End ends a task: it is no longer shown.
func (ts *Tasks) End(t *Task) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for i, x := range ts.list {
		if x == t {
			ts.list = append(ts.list[:i], ts.list[i+1:]...)
			return
		}
	}
}

// String is the tasks under way, "" when there are none: "unpacking image
// x: 120.5 MB at 80.1 MB/s".
func (ts *Tasks) String() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	parts := make([]string, 0, len(ts.list))
	for _, t := range ts.list {
		mb := float64(t.bytes.Load()) / (1 << 20)
		s := fmt.Sprintf("%s: %.1f MB", t.name, mb)
		if secs := time.Since(t.start).Seconds(); secs >= 1 {
			s += fmt.Sprintf(" at %.1f MB/s", mb/secs)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
