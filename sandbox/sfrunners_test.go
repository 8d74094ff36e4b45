package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// sfRunnerCase is one of SandboxFusion's own runner tests
// (sandbox/tests/runners/ there), written again as a request to `serve`
// and the answer SandboxFusion gives it.
type sfRunnerCase struct {
	name, language, code string
	runTimeout           float64
	status               string // the response's
	runStatus            string // the run step's
	stdoutHas            string
}

var sfRunnerCases = []sfRunnerCase{
	{name: "perl print", language: "perl", code: "\nprint \"Hello, World!\\n\";\n",
		runTimeout: 5, status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "Hello, World!"},
	{name: "perl timeout", language: "perl", code: "\nsleep(5);\nprint(\"slept\")\n",
		runTimeout: 1, status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	// MultiPL-E's Perl tests use Test::Deep and Data::Compare.
	{name: "perl deep compare passes", language: "perl",
		code:   "\nuse Test::Deep;\nuse Data::Compare;\n\nsub check {\n    if (eq_deeply([1, {a => 2}], [1, {a => 2}])) { print \"same\" } else { exit 1 }\n}\ncheck();\n",
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "same"},
	{name: "perl deep compare fails", language: "perl",
		code:   "\nuse Test::Deep;\n\nsub check {\n    if (eq_deeply(0, 1)) { print \"same\" } else { exit 1 }\n}\ncheck();\n",
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished},
}

// TestSandboxFusionRunnerCases sends each case through `serve` and
// requires SandboxFusion's answer.
func TestSandboxFusionRunnerCases(t *testing.T) {
	_, hc := newLocalServer(t, ServerOptions{MaxInFlight: 2, MaxQueue: 16})
	for _, c := range sfRunnerCases {
		t.Run(c.name, func(t *testing.T) {
			if p := toolFor[c.language]; p != "" && resolveTool(p) == "" {
				t.Skipf("%s not installed", p)
			}
			rt := c.runTimeout
			if rt == 0 {
				rt = 10
			}
			resp, err := hc.Run(context.Background(), &sandboxclient.Request{Language: c.language, Code: c.code,
				CompileTimeout: 30, RunTimeout: rt, MemoryLimitMB: -1})
			if err != nil || resp.RunResult == nil {
				t.Fatalf("got %s", respText(resp, err))
			}
			if resp.Status != c.status || resp.RunResult.Status != c.runStatus || !strings.Contains(resp.RunResult.Stdout, c.stdoutHas) {
				t.Errorf("want %s/%s with %q in stdout, got %s", c.status, c.runStatus, c.stdoutHas, respText(resp, nil))
			}
		})
	}
}

// TestNewRunnersAreContained: a fork bomb and writes to host paths, in
// each interpreted language added for SandboxFusion's list, are contained
// like Python's and bash's.
func TestNewRunnersAreContained(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needPerRunUser(t, l)
	owned := t.TempDir()
	target := filepath.Join(owned, "pwned")
	bombs := map[string]string{
		"perl": "fork while 1;\n",
	}
	writers := map[string]string{
		"perl": fmt.Sprintf("for my $p (%q, \"/usr/pwned\", \"/etc/pwned\") { if (open(my $f, '>', $p)) { print \"wrote $p\\n\" } else { print \"refused $p\\n\" } }\n", target),
		"sql":  fmt.Sprintf("ATTACH DATABASE %s AS x;\nCREATE TABLE x.t(a);\nSELECT 'wrote';\n", sqlQuote(target)),
	}
	for lang, code := range bombs {
		t.Run(lang+" fork bomb", func(t *testing.T) {
			needTools(t, l, lang)
			resp := runCode(t, l, lang, code, 2, 1024)
			if resp.RunResult.Status != sandboxclient.StepTimeLimitExceeded && resp.Status != sandboxclient.StatusFailed {
				t.Errorf("got %s", respText(resp, nil))
			}
			if left := stepProcesses(t); len(left) > 0 {
				t.Errorf("%d processes of step users left", len(left))
			}
			if err := exec.Command("/bin/true").Run(); err != nil {
				t.Errorf("the host cannot start a process: %v", err)
			}
		})
	}
	for lang, code := range writers {
		t.Run(lang+" host write", func(t *testing.T) {
			needTools(t, l, lang)
			resp := runCode(t, l, lang, code, 10, 1024)
			if strings.Contains(resp.RunResult.Stdout, "wrote") {
				t.Errorf("a write outside the run got through: %s", respText(resp, nil))
			}
			if _, err := os.Lstat(target); err == nil {
				os.Remove(target)
				t.Errorf("%s exists on the host after the run", target)
			}
		})
	}
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
