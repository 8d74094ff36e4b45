package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// langSpec says how one language is compiled and run.
type langSpec struct {
	programs   []string // tools it needs; the first is the compiler or interpreter
	runProgram string   // tool the run step starts ("" for a built binary)
	source     string   // file name of the code
	// compile returns the compile command, run in the build directory; nil
	// for interpreted languages.
	compile func(l *Local, dir string) []string
	// compileAsRoot: the compiler writes a cache shared by all builds and
	// runs no user code (go with cgo off), so it runs as root.
	compileAsRoot bool
	// hiddenCompile: upstream runs compile and tests as one step (go test);
	// a failed build is reported as that one step.
	hiddenCompile bool
	run           func(l *Local, runDir, binDir string, memMB int) []string
	env           func(l *Local) []string
	// heapLimited languages (JVM, Node.js) cannot start under an
	// address-space limit; they get heap flags and a data limit instead.
	heapLimited bool
	// prepare, if set, turns the request's code into the source file.
	prepare func(code string) string
}

// source is what a request's code becomes on disk.
func (spec *langSpec) sourceText(code string) []byte {
	if spec.prepare != nil {
		code = spec.prepare(code)
	}
	return []byte(code)
}

// interpreted is the spec of a language whose program runs a source file:
// `prog [flags] file`.
func interpreted(prog, source string, flags ...string) *langSpec {
	return &langSpec{
		programs:   []string{prog},
		runProgram: prog,
		source:     source,
		run: func(l *Local, runDir, _ string, _ int) []string {
			return append(append([]string{l.tools[prog]}, flags...), filepath.Join(runDir, source))
		},
	}
}

// phpSource is SandboxFusion's rule: the code, left-trimmed, opens with
// <?php, added where it does not.
func phpSource(code string) string {
	code = strings.TrimLeft(code, " \t\n\r\v\f")
	if !strings.HasPrefix(code, "<?php") {
		code = "<?php\n" + code
	}
	return code
}

// unrunnable names, for languages a server accepts but this sandbox cannot
// run, the program a runner would need ("": SandboxFusion has no runner
// for it either, and a runner here would change verl's verdict).
var unrunnable = map[string]string{
	"csharp": "dotnet", "sql": "",
	"cuda": "nvcc", "R": "Rscript", "D_ut": "dmd",
	"scala": "scala", "julia": "julia",
	"junit": "junit-platform-console-standalone", "kotlin_script": "kotlinc",
	"jest": "jest", "verilog": "iverilog", "python_gpu": "a GPU python runtime",
	"lean": "lean", "swift": "swift", "racket": "racket",
}

func goEnv(l *Local) []string {
	e := []string{"GOCACHE=" + l.goCache, "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0", "GOTELEMETRY=off"}
	if mc := l.goModCache(); mc != "" {
		// Beside goruntime's go.mod, from the read-only module cache; go
		// ignores a go.mod at the root of TMPDIR, so that is /tmp.
		return append(e, "GO111MODULE=on", "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOMODCACHE="+mc, "TMPDIR=/tmp")
	}
	return append(e, "GO111MODULE=off", "GOFLAGS=")
}

// heapMB is the heap given to a heap-limited runtime under a memory limit.
func heapMB(memMB int) int {
	h := memMB / 2
	if h < 32 {
		h = 32
	}
	return h
}

var languages = map[string]*langSpec{
	"python": interpreted("python3", "solution.py"),
	"bash":   interpreted("bash", "solution.sh"),
	"nodejs": {
		programs:    []string{"node"},
		runProgram:  "node",
		source:      "solution.js",
		heapLimited: true,
		run: func(l *Local, runDir, _ string, memMB int) []string {
			argv := []string{l.tools["node"]}
			if memMB > 0 {
				argv = append(argv, fmt.Sprintf("--max-old-space-size=%d", heapMB(memMB)))
			}
			return append(argv, filepath.Join(runDir, "solution.js"))
		},
	},
	// tsx runs TypeScript as SandboxFusion runs it. It starts Node.js
	// processes of its own, which get the heap flag through NODE_OPTIONS.
	"typescript": {
		programs:    []string{"tsx", "node"},
		runProgram:  "tsx",
		source:      "solution.ts",
		heapLimited: true,
		run: func(l *Local, runDir, _ string, memMB int) []string {
			argv := []string{l.tools["tsx"], filepath.Join(runDir, "solution.ts")}
			if memMB > 0 {
				argv = append([]string{"/usr/bin/env", fmt.Sprintf("NODE_OPTIONS=--max-old-space-size=%d", heapMB(memMB))}, argv...)
			}
			return argv
		},
	},
	"cpp": {
		programs: []string{"g++"},
		source:   "solution.cpp",
		compile: func(l *Local, dir string) []string {
			return append(append([]string{l.tools["g++"]}, cppFlags...), "solution.cpp", "-o", "test")
		},
		run: func(_ *Local, _, binDir string, _ int) []string {
			return []string{filepath.Join(binDir, "test")}
		},
	},
	"rust": {
		programs: []string{"rustc"},
		source:   "solution.rs",
		compile: func(l *Local, dir string) []string {
			// Optimised, but with the overflow checks and debug assertions
			// of the plain `rustc file.rs` the server runs, so that the
			// same programs panic.
			return []string{l.tools["rustc"], "-C", "opt-level=2", "-C", "overflow-checks=on",
				"-C", "debug-assertions=on", "solution.rs", "-o", "test"}
		},
		run: func(_ *Local, _, binDir string, _ int) []string {
			return []string{filepath.Join(binDir, "test")}
		},
	},
	"go": {
		programs:      []string{"go"},
		source:        "solution.go",
		compileAsRoot: true,
		env:           goEnv,
		compile: func(l *Local, dir string) []string {
			return []string{l.tools["go"], "build", "-o", "out", "solution.go"}
		},
		run: func(_ *Local, _, binDir string, _ int) []string {
			return []string{filepath.Join(binDir, "out")}
		},
	},
	"go_test": {
		programs:      []string{"go"},
		source:        "solution_test.go",
		compileAsRoot: true,
		hiddenCompile: true,
		env:           goEnv,
		compile: func(l *Local, dir string) []string {
			return []string{l.tools["go"], "test", "-c", "-o", "test.bin", "solution_test.go"}
		},
		run: func(_ *Local, _, binDir string, _ int) []string {
			return []string{filepath.Join(binDir, "test.bin")}
		},
	},
	"perl":   interpreted("perl", "solution.pl"),
	"pytest": interpreted("pytest", "test_solution.py"),
	"ruby":   interpreted("ruby", "solution.rb"),
	"lua":    interpreted("lua", "solution.lua"),
	"php": func() *langSpec {
		spec := interpreted("php", "solution.php", "-f")
		spec.prepare = phpSource
		return spec
	}(),
	"java": {
		programs:    []string{"javac", "java"},
		runProgram:  "java",
		source:      "Main.java",
		heapLimited: true,
		compile: func(l *Local, dir string) []string {
			return []string{l.tools["javac"], "-J-Xmx512m", "-J-XX:+UseSerialGC", "-J-XX:-UsePerfData",
				"-encoding", "UTF-8", "-cp", javaClassPath("."), "Main.java"}
		},
		run: func(l *Local, _, binDir string, memMB int) []string {
			argv := []string{l.tools["java"]}
			if memMB > 0 {
				argv = append(argv, fmt.Sprintf("-Xmx%dm", heapMB(memMB)))
			}
			return append(argv, "-XX:+UseSerialGC", "-XX:-UsePerfData", "-cp", javaClassPath(binDir), "-ea", "Main")
		},
	},
}

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
func runLimits(spec *langSpec, memMB int, timeout time.Duration) limits {
	lim := limits{cpuSec: cpuSeconds(timeout), nproc: runNproc, fsizeMB: fileMB, nofile: runNofile}
	if memMB > 0 {
		if spec.heapLimited {
			lim.dataMB = memMB + 256
		} else {
			lim.addressMB = memMB
			lim.stackMB = memMB
		}
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

// javaLibraries are jars a SandboxFusion image puts on the Java class path
// (MultiPL-E's Java programs import org.javatuples); each is used when
// installed (Debian: libjavatuples-java).
var javaLibraries = []string{"/usr/share/java/javatuples.jar"}

// javaClassPath is dir followed by the javaLibraries that exist.
func javaClassPath(dir string) string {
	cp := dir
	for _, jar := range javaLibraries {
		if _, err := os.Stat(jar); err == nil {
			cp += ":" + jar
		}
	}
	return cp
}
