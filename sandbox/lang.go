package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// langSpec says how one language is compiled and run.
type langSpec struct {
	programs   []string // tools it needs; the first is the compiler or interpreter
	runProgram string   // tool the run step starts ("" for a built binary)
	source     string   // file name of the code
	// compile returns the compile command, run in the build directory; nil
	// for interpreted languages.
	compile func(l *Local, a stepArgs) []string
	// compileAsRoot: the compiler writes a cache shared by all builds and
	// runs no user code (go with cgo off), so it runs as root.
	compileAsRoot bool
	// hiddenCompile: upstream builds and runs in one step (go test,
	// dotnet run); failedBuild turns a failed build into that step's
	// result, and runOutput, if set, a run's result into it.
	hiddenCompile bool
	failedBuild   func(*sandboxclient.StepResult) *sandboxclient.StepResult
	runOutput     func(*sandboxclient.StepResult) *sandboxclient.StepResult
	// mergeStderr: the run's stderr goes to its stdout (a go test binary,
	// whose output go test passes on as its own stdout).
	mergeStderr bool
	run         func(l *Local, a stepArgs) []string
	env         func(l *Local) []string
	// heapLimited languages (JVM, Node.js) cannot start under an
	// address-space limit; they get heap flags and a data limit instead.
	heapLimited bool
	// prepare, if set, turns the request's code into the source file.
	prepare func(code string) string
	// sourceName, if set, names the source file after the code (junit's
	// public class); else it is source.
	sourceName func(code string) string
	// links, if set, are symbolic links put in the run directory (name ->
	// target), as SandboxFusion links its Node.js runtime's files.
	links func(l *Local) map[string]string
	// refuse, if set, says why the code cannot be built at all; the
	// server then answers SandboxError with a compile step in Error.
	refuse func(code string) string
}

// stepArgs is what a language's command lines are built from.
type stepArgs struct {
	dir    string // the step's working directory
	binDir string // a run's build directory ("" when nothing was built)
	memMB  int    // the request's memory_limit_MB
	code   string // the request's code
	files  []string
}

// fileName is the name the code gets on disk.
func (spec *langSpec) fileName(code string) string {
	if spec.sourceName != nil {
		return spec.sourceName(code)
	}
	return spec.source
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
		run: func(l *Local, a stepArgs) []string {
			return append(append([]string{l.tools[prog]}, flags...), filepath.Join(a.dir, source))
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
	"cuda": "nvcc", "julia": "julia",
	"python_gpu": "a GPU python runtime",
	"lean":       "lean", "swift": "swift",
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
		links:       nodeModules,
		run: func(l *Local, a stepArgs) []string {
			argv := []string{l.tools["node"]}
			if a.memMB > 0 {
				argv = append(argv, fmt.Sprintf("--max-old-space-size=%d", heapMB(a.memMB)))
			}
			return append(argv, filepath.Join(a.dir, "solution.js"))
		},
	},
	// tsx runs TypeScript as SandboxFusion runs it. It starts Node.js
	// processes of its own, which get the heap flag through NODE_OPTIONS.
	"typescript": {
		programs:    []string{"tsx", "node"},
		runProgram:  "tsx",
		source:      "solution.ts",
		heapLimited: true,
		links:       nodeModules,
		run: func(l *Local, a stepArgs) []string {
			argv := []string{l.tools["tsx"], filepath.Join(a.dir, "solution.ts")}
			if a.memMB > 0 {
				argv = append([]string{"/usr/bin/env", fmt.Sprintf("NODE_OPTIONS=--max-old-space-size=%d", heapMB(a.memMB))}, argv...)
			}
			return argv
		},
	},
	"cpp": {
		programs: []string{"g++"},
		source:   "solution.cpp",
		compile: func(l *Local, _ stepArgs) []string {
			return append(append([]string{l.tools["g++"]}, cppFlags...), "solution.cpp", "-o", "test")
		},
		run: func(_ *Local, a stepArgs) []string {
			return []string{filepath.Join(a.binDir, "test")}
		},
	},
	"rust": {
		programs: []string{"rustc"},
		source:   "solution.rs",
		compile: func(l *Local, _ stepArgs) []string {
			// Optimised, but with the overflow checks and debug assertions
			// of the plain `rustc file.rs` the server runs, so that the
			// same programs panic.
			return []string{l.tools["rustc"], "-C", "opt-level=2", "-C", "overflow-checks=on",
				"-C", "debug-assertions=on", "solution.rs", "-o", "test"}
		},
		run: func(_ *Local, a stepArgs) []string {
			return []string{filepath.Join(a.binDir, "test")}
		},
	},
	"go": {
		programs:      []string{"go"},
		source:        "solution.go",
		compileAsRoot: true,
		env:           goEnv,
		compile: func(l *Local, _ stepArgs) []string {
			return []string{l.tools["go"], "build", "-o", "out", "solution.go"}
		},
		run: func(_ *Local, a stepArgs) []string {
			return []string{filepath.Join(a.binDir, "out")}
		},
	},
	"go_test": {
		programs:      []string{"go"},
		source:        "solution_test.go",
		compileAsRoot: true,
		hiddenCompile: true,
		failedBuild:   goTestBuildFailure,
		runOutput:     goTestOutput,
		mergeStderr:   true,
		env:           goEnv,
		compile: func(l *Local, _ stepArgs) []string {
			return []string{l.tools["go"], "test", "-c", "-o", "test.bin", "solution_test.go"}
		},
		run: func(_ *Local, a stepArgs) []string {
			return []string{filepath.Join(a.binDir, "test.bin")}
		},
	},
	"R":      interpreted("Rscript", "solution.R"),
	"racket": interpreted("racket", "solution.rkt"),
	// SandboxFusion builds D_ut with `dmd file.d -unittest -of=test`;
	// ldmd2 is LDC's driver that takes dmd's options (Debian has no dmd).
	"D_ut": {
		programs: []string{"ldmd2"},
		source:   "solution.d",
		compile: func(l *Local, _ stepArgs) []string {
			return []string{l.tools["ldmd2"], "solution.d", "-unittest", "-of=test"}
		},
		run: func(_ *Local, a stepArgs) []string {
			return []string{filepath.Join(a.binDir, "test")}
		},
	},
	// verilog-eval's commands, as SandboxFusion runs them: the testbench
	// module is tb.
	"verilog": {
		programs:   []string{"iverilog", "vvp"},
		runProgram: "vvp",
		source:     "solution.sv",
		compile: func(l *Local, _ stepArgs) []string {
			return []string{l.tools["iverilog"], "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb", "-o", "test.vvp", "solution.sv"}
		},
		run: func(l *Local, a stepArgs) []string {
			return []string{l.tools["vvp"], "-n", filepath.Join(a.binDir, "test.vvp")}
		},
	},
	"scala": {
		programs:    []string{"scalac", "scala", "java"},
		runProgram:  "scala",
		source:      "solution.scala",
		heapLimited: true,
		refuse: func(code string) string {
			if scalaObject(code) == "" {
				return "Object name not found."
			}
			return ""
		},
		compile: func(l *Local, _ stepArgs) []string {
			return []string{"/usr/bin/env", "JAVA_OPTS=-Xmx1g -Xss4m -XX:+UseSerialGC", l.tools["scalac"], "solution.scala"}
		},
		run: func(l *Local, a stepArgs) []string {
			return append(javaOpts(a.memMB, "-Xms32M"), l.tools["scala"], "-cp", a.binDir, scalaObject(a.code))
		},
	},
	// SandboxFusion runs `kotlin file.kts`; Debian's Kotlin (1.3) runs a
	// script only as `kotlinc -script`, which compiles and runs it in one
	// step as well.
	"kotlin_script": {
		programs:    []string{"kotlinc", "java"},
		runProgram:  "kotlinc",
		source:      "solution.kts",
		heapLimited: true,
		run: func(l *Local, a stepArgs) []string {
			return append(javaOpts(a.memMB, "-Xss2m"), l.tools["kotlinc"], "-script", filepath.Join(a.dir, "solution.kts"))
		},
	},
	// JUnit 5's console launcher finds the tests in the classes built from
	// the code (a file named after its public class) and the request's
	// other .java files and jars, as SandboxFusion's runner does.
	"junit": {
		programs:    []string{"javac", "java", junitConsole},
		runProgram:  "java",
		source:      "Main.java",
		heapLimited: true,
		sourceName: func(code string) string {
			if m := javaPublicClassPattern.FindStringSubmatch(code); m != nil {
				return m[2] + ".java"
			}
			return "Main.java"
		},
		compile: func(l *Local, a stepArgs) []string {
			// The shell expands *.java as SandboxFusion's does.
			return []string{"/bin/sh", "-c", `exec "$0" "$@" *.java`, l.tools["javac"], "-J-Xmx512m", "-J-XX:+UseSerialGC",
				"-J-XX:-UsePerfData", "-encoding", "UTF-8", "-cp", junitClassPath(l, ".", a.files)}
		},
		run: func(l *Local, a stepArgs) []string {
			argv := []string{l.tools["java"]}
			if a.memMB > 0 {
				argv = append(argv, fmt.Sprintf("-Xmx%dm", heapMB(a.memMB)))
			}
			return append(argv, "-XX:+UseSerialGC", "-XX:-UsePerfData", "-jar", l.tools[junitConsole],
				"--class-path", junitClassPath(l, a.binDir, a.files), "--scan-class-path")
		},
	},
	// SandboxFusion runs `npm run test` (jest, with Babel for TypeScript)
	// beside its Node.js runtime's package.json, babel.config.js and
	// node_modules.
	"jest": {
		programs:    []string{"npm", "node", nodeRuntime},
		runProgram:  "npm",
		source:      "solution.test.ts",
		heapLimited: true,
		links: func(l *Local) map[string]string {
			rt := l.tools[nodeRuntime]
			return map[string]string{"node_modules": rt + "/node_modules", "package.json": rt + "/package.json",
				"babel.config.js": rt + "/babel.config.js"}
		},
		run: func(l *Local, a stepArgs) []string {
			argv := []string{l.tools["npm"], "run", "test"}
			if a.memMB > 0 {
				argv = append([]string{"/usr/bin/env", fmt.Sprintf("NODE_OPTIONS=--max-old-space-size=%d", heapMB(a.memMB))}, argv...)
			}
			return argv
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
		compile: func(l *Local, a stepArgs) []string {
			return append(append([]string{l.tools["javac"]}, javacJVMFlags...),
				"-encoding", "UTF-8", "-cp", javaClassPath(".", a.files), "Main.java")
		},
		run: func(l *Local, a stepArgs) []string {
			argv := []string{l.tools["java"]}
			if a.memMB > 0 {
				argv = append(argv, fmt.Sprintf("-Xmx%dm", heapMB(a.memMB)))
			}
			return append(argv, "-XX:+UseSerialGC", "-XX:-UsePerfData", "-cp", javaClassPath(a.binDir, a.files), "-ea", "Main")
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

// runLimits are runLimits with the sandbox's own options.
func (l *Local) runLimits(spec *langSpec, memMB int, timeout time.Duration) limits {
	lim := runLimits(spec, memMB, timeout)
	if spec == languages["ruby"] && l.opts.RubyStackMB > 0 && lim.stackMB > 0 {
		lim.stackMB = l.opts.RubyStackMB
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

// nodeRuntime is the tool name of the sandbox's Node.js runtime: a
// directory with package.json, babel.config.js and node_modules (jest,
// Babel, lodash ...), made by sandbox/noderuntime/install.sh.
const nodeRuntime = "node-runtime"

// nodeRuntimeDirs are where the runtime is looked for, after
// $VERL_SCORE_NODE_RUNTIME.
var nodeRuntimeDirs = []string{"/usr/local/lib/verl-score/node"}

func findNodeRuntime() string {
	dirs := nodeRuntimeDirs
	if d := os.Getenv("VERL_SCORE_NODE_RUNTIME"); d != "" {
		dirs = []string{d}
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, "node_modules")); err == nil && fi.IsDir() {
			if abs, err := filepath.Abs(d); err == nil {
				return abs
			}
		}
	}
	return ""
}

// nodeModules links the runtime's node_modules into a nodejs or
// typescript run, where there is one, so that programs can import lodash
// and the like as on SandboxFusion.
func nodeModules(l *Local) map[string]string {
	if rt := l.tools[nodeRuntime]; rt != "" {
		return map[string]string{"node_modules": rt + "/node_modules"}
	}
	return nil
}

// javaOpts starts a JVM launcher script (scala, kotlinc) with the heap
// flag of a memory limit; without one the script's own defaults hold.
func javaOpts(memMB int, more string) []string {
	if memMB <= 0 {
		return nil
	}
	return []string{"/usr/bin/env", fmt.Sprintf("JAVA_OPTS=-Xmx%dm %s -XX:+UseSerialGC", heapMB(memMB), more)}
}

// scalaObjectPattern is SandboxFusion's rule for the object a Scala
// program runs: the first `object Name`, unless an `extends X {` comes
// first, which names none.
var scalaObjectPattern = regexp.MustCompile(`object\s+(\w+)(\s*)|(\s+extends\s+\w+\s*)\{`)

func scalaObject(code string) string {
	m := scalaObjectPattern.FindStringSubmatch(code)
	if m == nil {
		return ""
	}
	return m[1]
}

// junitConsole is the tool name of JUnit 5's console launcher, a jar
// (Debian: junit5) that java runs.
const (
	junitConsole    = "junit-platform-console-standalone"
	junitConsoleJar = "/usr/share/java/junit-platform-console-standalone.jar"
)

// javaPublicClassPattern finds a Java file's public class, as
// SandboxFusion does to name the file of a junit request.
var javaPublicClassPattern = regexp.MustCompile(`\bpublic\s+(abstract\s+|final\s+)?class\s+(\w+)`)

// junitClassPath is dir, the launcher, and the request's jars (which lie
// in the step's working directory).
func junitClassPath(l *Local, dir string, files []string) string {
	cp := []string{dir, l.tools[junitConsole]}
	for _, f := range files {
		if strings.HasSuffix(f, ".jar") {
			cp = append(cp, f)
		}
	}
	return strings.Join(cp, ":")
}

// javaLibraries are jars a SandboxFusion image puts on the Java class path
// (MultiPL-E's Java programs import org.javatuples); each is used when
// installed (Debian: libjavatuples-java).
var javaLibraries = []string{"/usr/share/java/javatuples.jar"}

// javaClassPath is dir, the javaLibraries that exist, and the request's
// jars (in the step's working directory), as SandboxFusion's class path.
func javaClassPath(dir string, files []string) string {
	cp := dir
	for _, jar := range javaLibraries {
		if _, err := os.Stat(jar); err == nil {
			cp += ":" + jar
		}
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".jar") {
			cp += ":" + f
		}
	}
	return cp
}
