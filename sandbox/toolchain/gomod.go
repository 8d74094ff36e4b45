package toolchain

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

// GoModCache returns the module cache go builds use, filling it on first
// use; "" where it cannot be filled (builds then run without modules).
func (c *Caches) GoModCache() string {
	m := &c.goMods
	m.once.Do(func() {
		dir := filepath.Join(filepath.Dir(c.GoCache), "go-mod")
		if err := fillGoModCache(c.Tools["go"], dir); err != nil {
			c.Warn("go-modules", "go and go_test build without modules (testify cannot be imported): "+err.Error())
			return
		}
		m.cache = dir
	})
	return m.cache
}

// GoRuntimeFiles are goruntime's go.mod and go.sum, which a go build gets
// where modules are used (a request's own win, as in SandboxFusion).
func GoRuntimeFiles() map[string][]byte {
	return map[string][]byte{"go.mod": goRuntimeMod, "go.sum": goRuntimeSum}
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
