//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
)

// What a language's first cases would otherwise pay inside their time
// limits on a cold machine, built ahead: the precompiled C++ header,
// javac's class-data archive, the Go module cache with testify and a Go
// build cache that holds the standard library and testify compiled. A
// compile that finds one of them being built waits for it before its own
// time starts (waitPCH, waitJavacArchive, warmGo), so a
// cold cache never changes a verdict; Prepare does the same work up front,
// for images (`verl-score doctor --prepare`) and for `serve` at start.

// Prepare builds every cache the languages found here use, waiting for
// each, and says what each now is.
func (l *Local) Prepare(ctx context.Context) []Protection {
	var out []Protection
	timed := func(name string, do func() (bool, string)) {
		start := time.Now()
		ok, detail := do()
		out = append(
			out,
			Protection{Name: name, Available: ok, Detail: fmt.Sprintf("%s (%.1f s)", detail, time.Since(start).Seconds())},
		)
	}
	if l.tools["g++"] != "" {
		timed("cpp: precompiled header", func() (bool, string) {
			l.caches.WaitPCH(ctx)
			return l.caches.PCHState()
		})
	}
	if l.tools["javac"] != "" {
		timed("java: javac class-data archive", func() (bool, string) {
			l.caches.WaitJavacArchive(ctx)
			return l.caches.JavacArchiveState()
		})
	}
	if l.tools["go"] != "" {
		timed("go, go_test: module cache (testify)", func() (bool, string) {
			if mc := l.caches.GoModCache(); mc != "" {
				return true, "in " + mc
			}
			return false, "not filled: go and go_test build without modules (testify cannot be imported)"
		})
		timed("go, go_test: build cache", func() (bool, string) {
			if err := l.warmGo(ctx); err != nil {
				return false, "not warmed: " + err.Error()
			}
			return true, "standard library and testify compiled in " + l.goCache
		})
	}
	if l.tools["npm"] != "" && l.tools["node"] != "" {
		out = append(out, nodeRuntimeState(l.tools[lang.NodeRuntime]))
	}
	return out
}

func nodeRuntimeState(dir string) Protection {
	p := Protection{Name: "nodejs, typescript, jest: Node.js runtime"}
	if dir == "" {
		p.Detail = "not installed: run sandbox/noderuntime/install.sh (jest cannot run; lodash and the like cannot be " +
			"required)"
		return p
	}
	p.Available, p.Detail = true, "in "+dir
	return p
}

// Prepare builds the caches of a fresh embedded sandbox and reports them
// (`verl-score doctor --prepare`).
func Prepare(ctx context.Context) []Protection {
	l, err := New(Options{Warn: io.Discard, Concurrency: 1})
	if err != nil {
		return []Protection{{Name: "prepare", Detail: "no sandbox: " + err.Error()}}
	}
	defer l.Close()
	return l.Prepare(ctx)
}
