package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// SandboxFusion builds go and go_test programs beside its own go.mod, so
// that tests may import github.com/stretchr/testify/assert. This sandbox
// does the same with a go.mod of its own (goruntime/, testify and what it
// needs) and a module cache beside the Go build cache, filled once through
// the Go module proxy and read-only to builds from then on. Where it cannot
// be filled, programs build without modules and testify cannot be
// imported.

//go:embed goruntime/go.mod.txt
var goRuntimeMod []byte

//go:embed goruntime/go.sum.txt
var goRuntimeSum []byte

// goRuntimeModules are the module directories the cache must hold.
var goRuntimeModules = []string{
	"github.com/stretchr/testify@v1.9.0", "github.com/davecgh/go-spew@v1.1.1",
	"github.com/pmezard/go-difflib@v1.0.0", "gopkg.in/yaml.v3@v3.0.1",
}

type goModules struct {
	once  sync.Once
	cache string // the module cache, once it holds goRuntimeModules
}

// goModCache returns the module cache go builds use, filling it on first
// use; "" where it cannot be filled (builds then run without modules).
func (l *Local) goModCache() string {
	m := &l.goMods
	m.once.Do(func() {
		dir := filepath.Join(filepath.Dir(l.goCache), "go-mod")
		if err := fillGoModCache(l.tools["go"], dir); err != nil {
			l.warn("go-modules", "go and go_test build without modules (testify cannot be imported): "+err.Error())
			return
		}
		m.cache = dir
	})
	return m.cache
}

// goBuildDir readies dir for a go build: goruntime's go.mod and go.sum
// where modules are used. It returns what a contained build binds: the
// build cache, writable (go runs as root and runs no user code), and the
// module cache, read-only.
func (l *Local) goBuildDir(dir string) ([]viewBind, error) {
	binds := []viewBind{{source: l.goCache, target: l.goCache, flags: nsinit.BindWritable}}
	mc := l.goModCache()
	if mc == "" {
		return binds, nil
	}
	// A request's own go.mod or go.sum wins, as in SandboxFusion.
	for name, data := range map[string][]byte{"go.mod": goRuntimeMod, "go.sum": goRuntimeSum} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return append(binds, viewBind{source: mc, target: mc}), nil
}

func hasGoModules(dir string) bool {
	for _, mod := range goRuntimeModules {
		if fi, err := os.Stat(filepath.Join(dir, mod)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// fillGoModCache downloads goruntime's modules into dir, unless it holds
// them already.
func fillGoModCache(gobin, dir string) error {
	if hasGoModules(dir) {
		return nil
	}
	if gobin == "" {
		return fmt.Errorf("no go")
	}
	tmp, err := os.MkdirTemp("", "verl-score-gomod-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), goRuntimeMod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), goRuntimeSum, 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, gobin, "mod", "download")
	c.Dir = tmp
	c.Env = append(os.Environ(), "GOMODCACHE="+dir, "GOFLAGS=-mod=mod", "GO111MODULE=on", "GOTOOLCHAIN=local")
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download into %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	if !hasGoModules(dir) {
		return fmt.Errorf("go mod download left %s without testify", dir)
	}
	return nil
}
