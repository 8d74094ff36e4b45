package lang

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"

	"github.com/verl-score/verl-score/sandboxclient"
)

// A Go file in a _test package, or with a test function and no main, is
// a test file (MultiPL-E's Go rows, whose test function comes with the
// ground truth), which upstream runs as go_test.
var (
	goTestPackage = regexp.MustCompile(`(?m)^\s*package\s+\w+_test\b`)
	goTestFunc    = regexp.MustCompile(`func\s+Test\w*\s*\(\s*\w+\s+\*testing\.T\s*\)`)
	goMainFunc    = regexp.MustCompile(`func\s+main\s*\(\s*\)`)
)

func goEnv(h Host) []string {
	e := []string{"GOCACHE=" + h.Dir(DirGoCache), "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0", "GOTELEMETRY=off"}
	if mc := h.Dir(DirGoModCache); mc != "" {
		// Beside goruntime's go.mod, from the read-only module cache; go
		// ignores a go.mod at the root of TMPDIR, so that is /tmp.
		return append(e, "GO111MODULE=on", "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOMODCACHE="+mc, "TMPDIR=/tmp")
	}
	return append(e, "GO111MODULE=off", "GOFLAGS=")
}

// GoEnv is the environment of a go or go test step.
func GoEnv(h Host) []string { return goEnv(h) }

func init() {
	Register(&Language{
		Name: "go", Compiled: true,
		Fences: []string{"go", "golang"},
		Detect: func(code string) string {
			if goTestPackage.MatchString(code) || goTestFunc.MatchString(code) && !goMainFunc.MatchString(code) {
				return "go_test"
			}
			return ""
		},
		Tools: []Tool{{"go", "golang-go"}},
		Runner: &Runner{
			Source:        "solution.go",
			CompileAsRoot: true,
			Env:           goEnv,
			CompileCache:  GoBuildCache,
			Compile: func(h Host, _ Args) []string {
				return []string{h.Tool("go"), "build", "-o", "out", "solution.go"}
			},
			Run: built("out"),
		},
		Cases: func() []Case {
			return []Case{
				sumCase(
					"go",
					"correct",
					"package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a+b)}\n",
					wantT,
				),
				sumCase(
					"go",
					"wrong",
					"package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a*a+b)}\n",
					wantF,
				),
				sumCase("go", "runtime", "package main\nfunc main(){ var m map[string]int; m[\"x\"] = 1 }\n", wantRE),
				timeoutCase("go", "package main\nfunc main(){ x := 0; for { x++ } }\n", 1),
				sumCase("go", "compile", "package main\nfunc main() { x := 1 }\n", wantCE),
			}
		},
	})
	Register(&Language{
		Name: "go_test", Compiled: true,
		Tools: []Tool{{"go", "golang-go"}},
		Runner: &Runner{
			Source:        "solution_test.go",
			CompileAsRoot: true,
			HiddenCompile: true,
			FailedBuild:   goTestBuildFailure,
			RunOutput:     goTestOutput,
			MergeStderr:   true,
			Env:           goEnv,
			CompileCache:  GoBuildCache,
			Compile: func(h Host, _ Args) []string {
				return []string{h.Tool("go"), "test", "-c", "-o", "test.bin", "solution_test.go"}
			},
			Run: built("test.bin"),
		},
		Cases: func() []Case {
			empty := optStr("")
			return []Case{
				{
					Name:     "go_test/pass",
					Language: "go_test",
					Code:     goTestCode("if add(2, 3) != 5 { t.Fatal(\"wrong\") }"),
					Stdin:    empty,
					Want:     wantT,
				},
				{
					Name:     "go_test/fail",
					Language: "go_test",
					Code:     goTestCode("if add(2, 3) != 6 { t.Fatal(\"wrong\") }"),
					Stdin:    empty,
					Want:     wantRE,
				},
				// go test builds and runs in one step upstream: a build
				// failure is a failed run, not a compile error.
				{Name: "go_test/build", Language: "go_test", Code: goTestCode("y := 1"), Stdin: empty, Want: wantRE},
				{
					Name:       "go_test/timeout",
					Language:   "go_test",
					Code:       goTestCode("for add(1, 1) == 2 {}"),
					Stdin:      empty,
					RunTimeout: 1,
					Want:       wantTO,
				},
			}
		},
	})
}

func goTestCode(body string) string {
	return "package add_test\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\n" +
		"func TestAdd(t *testing.T) {\n\t" + body + "\n}\n"
}

// goTestOutput turns the run of a test binary (its stderr merged into its
// stdout, as `go test` merges them) into what `go test file_test.go`
// prints and returns: a passing run's output replaced by its "ok" line; a
// failing one's followed by the exit status where it printed nothing, its
// FAIL line and the final FAIL, with exit code 1.
func goTestOutput(r *sandboxclient.StepResult) *sandboxclient.StepResult {
	if r.Status != sandboxclient.StepFinished || r.ReturnCode == nil {
		return r
	}
	out := *r
	took := fmt.Sprintf("%.3fs", r.ExecutionTime)
	if *r.ReturnCode == 0 {
		out.Stdout = "ok  \tcommand-line-arguments\t" + took + "\n"
		return &out
	}
	if out.Stdout != "" && !strings.HasSuffix(out.Stdout, "\n") {
		out.Stdout += "\n"
	}
	if out.Stdout == "" {
		if rc := *r.ReturnCode; rc < 0 {
			out.Stdout = "signal: " + syscall.Signal(-rc).String() + "\n"
		} else {
			out.Stdout = fmt.Sprintf("exit status %d\n", rc)
		}
	}
	out.Stdout += "FAIL\tcommand-line-arguments\t" + took + "\nFAIL\n"
	one := 1
	out.ReturnCode = &one
	return &out
}

// goTestBuildFailure turns a failed `go test -c` into what `go test`
// itself reports for a package that does not build.
func goTestBuildFailure(c *sandboxclient.StepResult) *sandboxclient.StepResult {
	r := *c
	if r.Status == sandboxclient.StepFinished {
		one := 1
		r.ReturnCode = &one
		r.Stdout = "FAIL\tcommand-line-arguments [build failed]\nFAIL\n"
	}
	return &r
}
