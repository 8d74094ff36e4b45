package toolchain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// builtOnce is a file a fast path needs, built once per machine in the
// background on first use (the runs meanwhile take the plain way) and
// kept in a cache directory: the precompiled C++ header, javac's
// class-data archive. A file that goes away (a cache cleaned under a
// running process) is built again, and the runs take the plain way
// meanwhile.
type builtOnce struct {
	mu      sync.Mutex
	started bool
	dir     string // where it is, once built
	detail  string // what doctor says of it
	done    chan struct{}
}

// get returns the directory build made, or "" while build runs or where it
// failed. want is the file, in that directory, that must be there; build
// returns the directory and doctor's description of it.
func (b *builtOnce) get(want string, build func() (dir, detail string, err error)) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		if _, err := os.Stat(filepath.Join(b.dir, want)); err == nil {
			return b.dir
		}
		b.dir, b.started = "", false // removed since: build it again
	}
	if !b.started {
		b.started = true
		done := make(chan struct{})
		b.done, b.detail = done, "being built"
		go func() {
			defer close(done)
			dir, detail, err := build()
			b.mu.Lock()
			defer b.mu.Unlock()
			if err != nil {
				b.detail = err.Error()
				return
			}
			b.dir, b.detail = dir, detail
		}()
	}
	return b.dir
}

// wait waits until a build that get started has ended.
func (b *builtOnce) wait(ctx context.Context) {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// state says whether it is in use, and doctor's detail.
func (b *builtOnce) state() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dir != "", b.detail
}

// buildInCache returns cache/name, building it first where want is not in
// it yet: build fills a fresh temporary directory, which is then renamed
// into place, so that no process sees half a build. Several processes may
// build at once; the first rename wins.
func buildInCache(cache, name, want string, build func(tmp string) error) (string, error) {
	dir := filepath.Join(cache, name)
	if _, err := os.Stat(filepath.Join(dir, want)); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := build(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, want)); serr == nil {
			return dir, nil // another process built it first
		}
		return "", err
	}
	return dir, nil
}

// Caches are the files the fast paths need, each built once per machine
// in the background on first use: the precompiled C++ header, javac's
// class-data archive, the Go module cache.
type Caches struct {
	Tools   map[string]string // program -> absolute path ("" if missing)
	GoCache string            // the Go build cache; the others lie beside it
	Off     bool              // fast paths turned off: every state says so
	// Unreachable, if set, says why the runs cannot reach a built file
	// (the per-run users without the filesystem view); "" if they can.
	Unreachable func(path string) string
	Warn        func(key, msg string)

	pch, jsa builtOnce
	goMods   goModules
}

// cachedFile is b's directory for a fast path of tool's: "" where fast
// paths are off, tool is missing, or while it is being built. want is the
// file the steps use, plain how they go without it and what its name,
// both for doctor.
func (c *Caches) cachedFile(b *builtOnce, tool, want, plain, what string, build func() (string, error)) string {
	if c.Off || c.Tools[tool] == "" {
		return ""
	}
	return b.get(want, func() (string, string, error) {
		dir, err := build()
		if err != nil {
			return "", "", fmt.Errorf("%s: %v", plain, err)
		}
		if c.Unreachable != nil {
			if why := c.Unreachable(filepath.Join(dir, want)); why != "" {
				return "", "", fmt.Errorf("%s: %s %s", plain, dir, why)
			}
		}
		return dir, what + " in " + dir, nil
	})
}

// cachedFileState says whether steps use b, or why not.
func (c *Caches) cachedFileState(b *builtOnce, tool string) (using bool, detail string) {
	switch {
	case c.Off:
		return false, "turned off"
	case c.Tools[tool] == "":
		return false, "no " + tool
	}
	return b.state()
}
