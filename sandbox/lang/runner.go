package lang

import (
	"fmt"
	"path/filepath"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Runner says how the embedded sandbox compiles and runs a language.
type Runner struct {
	// RunProgram is the tool the run step starts ("" for a built binary).
	RunProgram string
	// Source is the file name of the code.
	Source string
	// Compile returns the compile command, run in the build directory;
	// nil for interpreted languages.
	Compile func(h Host, a Args) []string
	// CompileAsRoot: the compiler writes a cache shared by all builds and
	// runs no user code (go with cgo off), so it runs as root.
	CompileAsRoot bool
	// HiddenCompile: upstream builds and runs in one step (go test);
	// FailedBuild turns a failed build into that step's result, and
	// RunOutput, if set, a run's result into it.
	HiddenCompile bool
	FailedBuild   func(*sandboxclient.StepResult) *sandboxclient.StepResult
	RunOutput     func(*sandboxclient.StepResult) *sandboxclient.StepResult
	// MergeStderr: the run's stderr goes to its stdout (a go test binary,
	// whose output go test passes on as its own stdout).
	MergeStderr bool
	// Run returns the run command.
	Run func(h Host, a Args) []string
	// Env, if set, adds to the steps' environment.
	Env func(h Host) []string
	// HeapLimited languages (JVM, Node.js) cannot start under an
	// address-space limit; they get heap flags and a data limit instead.
	HeapLimited bool
	// Prepare, if set, turns the request's code into the source file.
	Prepare func(code string) string
	// SourceName, if set, names the source file after the code (junit's
	// public class); else it is Source.
	SourceName func(code string) string
	// Links, if set, are symbolic links put in the run directory (name ->
	// target), as SandboxFusion links its Node.js runtime's files.
	Links func(h Host) map[string]string
	// Refuse, if set, says why the code cannot be built at all; the
	// server then answers SandboxError with a compile step in Error.
	Refuse func(code string) string

	// The fast paths and quirks the sandbox gives a language that
	// declares them (the sandbox branches on these, never on a name).

	// CompileCache is the built-once cache its compiles use where it is
	// ready (--fast-paths): same verdicts, a faster compile.
	CompileCache CompileCache
	// Forkable: its runs may start from the Python fork server (a
	// pre-started interpreter) rather than a fresh process.
	Forkable bool
	// StackSetting: its stack limit is the sandbox's RubyStackMB where that
	// is set (0 keeps SandboxFusion's: the stack limit is the memory limit).
	StackSetting bool
}

// CompileCache is a cache built once and shared by a language's compiles.
type CompileCache int

const (
	NoCompileCache CompileCache = iota
	// PrecompiledHeader: g++ compiles against a precompiled bits/stdc++.h.
	PrecompiledHeader
	// ClassDataArchive: javac starts from a class-data archive of itself.
	ClassDataArchive
	// GoBuildCache: go builds with the module cache and a build cache
	// warmed with the standard library.
	GoBuildCache
)

// Host is what a language's commands are built from on this machine.
type Host interface {
	// Tool is the absolute path of a program ("" when it is missing).
	Tool(prog string) string
	// Dir is a directory the sandbox prepared: DirGoCache, DirGoModCache.
	Dir(name string) string
}

// The directories a Host names.
const (
	DirGoCache    = "gocache"
	DirGoModCache = "gomodcache" // "" when Go modules are not available
)

// Args is what a language's command lines are built from.
type Args struct {
	Dir    string   // the step's working directory
	BinDir string   // a run's build directory ("" when nothing was built)
	MemMB  int      // the request's memory_limit_MB
	Code   string   // the request's code
	Files  []string // the names of the request's files, sorted
}

// FileName is the name the code gets on disk.
func (r *Runner) FileName(code string) string {
	if r.SourceName != nil {
		return r.SourceName(code)
	}
	return r.Source
}

// SourceText is what a request's code becomes on disk.
func (r *Runner) SourceText(code string) []byte {
	if r.Prepare != nil {
		code = r.Prepare(code)
	}
	return []byte(code)
}

// interpreted is the runner of a language whose program runs a source
// file: `prog [flags] file`.
// with sets what f sets on r, and returns r.
func (r *Runner) with(f func(*Runner)) *Runner { f(r); return r }

func interpreted(prog, source string, flags ...string) *Runner {
	return &Runner{
		RunProgram: prog,
		Source:     source,
		Run: func(h Host, a Args) []string {
			return append(append([]string{h.Tool(prog)}, flags...), filepath.Join(a.Dir, source))
		},
	}
}

// built runs the binary a compile left in the build directory.
func built(name string) func(Host, Args) []string {
	return func(_ Host, a Args) []string { return []string{filepath.Join(a.BinDir, name)} }
}

// HeapMB is the heap given to a heap-limited runtime under a memory limit.
func HeapMB(memMB int) int {
	h := memMB / 2
	if h < 32 {
		h = 32
	}
	return h
}

// nodeOptions starts argv with the heap flag of a memory limit in
// NODE_OPTIONS, so that every Node.js process it starts gets it.
func nodeOptions(memMB int, argv []string) []string {
	if memMB <= 0 {
		return argv
	}
	return append([]string{"/usr/bin/env", fmt.Sprintf("NODE_OPTIONS=--max-old-space-size=%d", HeapMB(memMB))}, argv...)
}
