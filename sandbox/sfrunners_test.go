//go:build linux

package sandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
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
	stdin                *string
	outputHas            string // in stdout or stderr
	compileStatus        string // the compile step's, when the case checks it
	needs                string // a tool or file beyond the language's own
}

var sfRunnerCases = []sfRunnerCase{
	{name: "perl print", language: "perl", code: "\nprint \"Hello, World!\\n\";\n",
		runTimeout: 5, status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished,
		stdoutHas: "Hello, World!"},
	{name: "perl timeout", language: "perl", code: "\nsleep(5);\nprint(\"slept\")\n",
		runTimeout: 1, status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	// MultiPL-E's Perl tests use Test::Deep and Data::Compare.
	{name: "perl deep compare passes", language: "perl",
		code:   "\nuse Test::Deep;\nuse Data::Compare;\n\nsub check {\n    if (eq_deeply([1, {a => 2}], [1, {a => 2}])) { print \"same\" } else { exit 1 }\n}\ncheck();\n",
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "same"},
	{name: "perl deep compare fails", language: "perl",
		code:   "\nuse Test::Deep;\n\nsub check {\n    if (eq_deeply(0, 1)) { print \"same\" } else { exit 1 }\n}\ncheck();\n",
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished},

	// SandboxFusion runs `go test file_test.go`; its stdout is go test's.
	{name: "go_test pass", language: "go_test", code: goTestCode("if add(2, 3) != 5 { t.Fatal(\"wrong\") }"),
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished,
		stdoutHas: "ok  \tcommand-line-arguments\t"},
	{name: "go_test fail", language: "go_test", code: goTestCode("if add(2, 3) != 6 { t.Fatal(\"wrong\") }"),
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished, stdoutHas: "--- FAIL: TestAdd"},
	{name: "go_test fail summary", language: "go_test", code: goTestCode("if add(2, 3) != 6 { t.Fatal(\"wrong\") }"),
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished,
		stdoutHas: "\nFAIL\tcommand-line-arguments\t"},
	{
		name:      "go_test exit without output",
		language:  "go_test",
		code:      "package main\nimport (\"os\"; \"testing\")\nfunc TestExit(t *testing.T) { os.Exit(3) }\n",
		status:    sandboxclient.StatusFailed,
		runStatus: sandboxclient.StepFinished,
		stdoutHas: "exit status 3\nFAIL\tcommand-line-arguments\t",
	},

	{name: "go_test testify pass", language: "go_test", code: testifyCode("false", "true"), runTimeout: 20,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "ok"},
	{name: "go_test testify fail", language: "go_test", code: testifyCode("true", "true"), runTimeout: 20,
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished, stdoutHas: "Error Trace"},

	{
		name:       "typescript print",
		language:   "typescript",
		code:       "\n    const x: number = 123;\n    console.log(x);\n",
		runTimeout: 10,
		status:     sandboxclient.StatusSuccess,
		runStatus:  sandboxclient.StepFinished,
		stdoutHas:  "123",
	},
	{name: "typescript timeout", language: "typescript",
		code:       "\n    import util from 'util';\n\n    const sleep = util.promisify(setTimeout);\n\n    async function main() {\n        await sleep(200);\n    }\n\n    main();\n",
		runTimeout: 0.1, status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	{
		name:      "typescript assertion error",
		language:  "typescript",
		code:      "\n    import assert from \"assert\";\n    assert.strictEqual(1, 2, '1 !== 2');\n",
		status:    sandboxclient.StatusFailed,
		runStatus: sandboxclient.StepFinished,
		outputHas: "AssertionError",
	},
	// lodash comes from the sandbox's Node.js runtime (noderuntime/).
	{name: "typescript lodash dep", language: "typescript",
		code:       "\n    import _ from \"lodash\";\n    import assert from \"assert\";\n\n    assert(_.isEqual(1, 1));\n    console.log('done');\n",
		runTimeout: 10, status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "done",
		needs: lang.NodeRuntime},
	{name: "nodejs lodash dep", language: "nodejs",
		code:       "const _ = require('lodash');\nconsole.log(_.chunk([1, 2, 3], 2).length);\n",
		runTimeout: 10, status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "2",
		needs: lang.NodeRuntime},
	{name: "java external jar", language: "java", needs: "/usr/share/java/javatuples.jar",
		code: "\n    import org.javatuples.Pair;\n    import org.javatuples.Triplet;\n\n    public class Main {\n" +
			"        public static void main(String[] args) {\n            Pair<String, Integer> pair = Pair.with(\"apple\", 1);\n" +
			"            System.out.println(\"Fruit: \" + pair.getValue0() + \", Quantity: \" + pair.getValue1());\n" +
			"            Triplet<String, Integer, Double> triplet = Triplet.with(\"banana\", 2, 0.99);\n" +
			"            System.out.println(\"Fruit: \" + triplet.getValue0() + \", Quantity: \" + triplet.getValue1() + \", Price: \" + triplet.getValue2());\n" +
			"        }\n    }\n    ",
		runTimeout: 20, status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished,
		stdoutHas: "Fruit: banana, Quantity: 2, Price: 0.99"},
	// HumanEval-X's console.assert only prints.
	{name: "typescript console.assert", language: "typescript", code: "console.assert(1 === 2);",
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, outputHas: "Assertion failed"},

	// Tests with pytest's fixtures (capfd, tmp_path), passing and failing;
	// the same code as plain python just defines them and succeeds.
	{name: "pytest fixtures pass", language: "pytest", code: wordCountTests(""), runTimeout: 10,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "2 passed"},
	{name: "pytest fixtures fail", language: "pytest", code: wordCountTests("not "), runTimeout: 10,
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished, stdoutHas: "2 failed"},
	{name: "pytest code as python", language: "python", code: wordCountTests("not "), runTimeout: 10,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished},

	{name: "php echo", language: "php", code: "\n    <?php\n    echo \"123\";\n    ?>\n    ", runTimeout: 5,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "123"},
	{name: "php timeout", language: "php", code: "\n    <?php\n    sleep(2);\n    ?>\n    ", runTimeout: 0.1,
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	{
		name:      "php user error",
		language:  "php",
		code:      "\n    <?php\n    trigger_error(\"Custom error\", E_USER_ERROR);\n    ?>\n    ",
		status:    sandboxclient.StatusFailed,
		runStatus: sandboxclient.StepFinished,
		outputHas: "Custom error",
	},
	{
		name:       "php stdin",
		language:   "php",
		code:       "\n    <?php\n        $input = readline();\n        echo intval($input);\n    ?>\n",
		runTimeout: 5,
		stdin:      ptr("65535"),
		status:     sandboxclient.StatusSuccess,
		runStatus:  sandboxclient.StepFinished,
		stdoutHas:  "65535",
	},

	{name: "ruby puts", language: "ruby", code: "\nputs \"Hello, World!\";\n", runTimeout: 5,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "Hello, World!"},
	{name: "ruby timeout", language: "ruby", code: "\nsleep(5)\n", runTimeout: 5,
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	{name: "ruby test/unit passes", language: "ruby",
		code:   "\nrequire 'test/unit'\nclass TestSandbox < Test::Unit::TestCase\n  def test_sandbox\n    assert_equal(0, 0)\n  end\nend\n",
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished},
	{name: "ruby test/unit fails", language: "ruby",
		code:   "\nrequire 'test/unit'\nclass TestSandbox < Test::Unit::TestCase\n  def test_sandbox\n    assert_equal(1, 0)\n  end\nend\n",
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished, stdoutHas: "Failure"},

	{name: "lua print", language: "lua", code: "\nprint(\"Hello, World!\")\n", runTimeout: 5,
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished, stdoutHas: "Hello, World!"},
	{name: "lua timeout", language: "lua", code: "\nos.execute(\"sleep 3\")\n", runTimeout: 1,
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepTimeLimitExceeded},
	{name: "lua luaunit passes", language: "lua", code: "\nlu = require('luaunit')\nlu.assertEquals(0, 0)\n",
		status: sandboxclient.StatusSuccess, runStatus: sandboxclient.StepFinished},
	{name: "lua luaunit fails", language: "lua", code: "\nlu = require('luaunit')\nlu.assertEquals(1, 2)\n",
		status: sandboxclient.StatusFailed, runStatus: sandboxclient.StepFinished, outputHas: "LuaUnit test FAILURE"},
}

// testifyCode is a go_test program asserting with testify that a close
// pair is found (want first for a spread list, second for a close one).
func testifyCode(first, second string) string {
	return `
    package main

    import (
        "math"
        "testing"
        "github.com/stretchr/testify/assert"
    )

    func anyClose(xs []float64, d float64) bool {
        for i := range xs {
            for j := i + 1; j < len(xs); j++ {
                if math.Abs(xs[i]-xs[j]) < d {
                    return true
                }
            }
        }
        return false
    }

    func TestAnyClose(t *testing.T) {
        is := assert.New(t)
        is.Equal(` + first + `, anyClose([]float64{1.0, 2.0, 3.0}, 0.5))
        is.Equal(` + second + `, anyClose([]float64{1.0, 2.8, 3.0, 4.0, 5.0, 2.0}, 0.3))
    }
`
}

// wordCountTests is a word counter with two pytest tests of it; negate
// ("not ") turns both assertions around.
func wordCountTests(negate string) string {
	return `
import string
from collections import Counter

def word_count(path):
    with open(path, encoding="utf-8") as f:
        text = f.read().translate(str.maketrans("", "", string.punctuation)).lower()
    for word, n in sorted(Counter(text.split()).items(), key=lambda kv: kv[1], reverse=True):
        print(f"'{word}': {n}")

class TestWordCount:
    def test_case(self, capfd, tmp_path):
        p = tmp_path / "case.txt"
        p.write_text("Case case CASE", encoding="utf-8")
        word_count(p)
        assert "'case': 3" ` + negate + `in capfd.readouterr().out

    def test_punctuation(self, capfd, tmp_path):
        p = tmp_path / "punct.txt"
        p.write_text("Some words, with commas.", encoding="utf-8")
        word_count(p)
        assert "'some': 1\n'words': 1\n'with': 1\n'commas': 1\n" ` + negate + `in capfd.readouterr().out
`
}

// TestSandboxFusionRunnerCases sends each case through `serve` and
// requires SandboxFusion's answer.
func TestSandboxFusionRunnerCases(t *testing.T) {
	serveSFRunnerCases(t, sfRunnerCases)
}

// serveSFRunnerCases sends each case through `serve`, one at a time.
func serveSFRunnerCases(t *testing.T, cases []sfRunnerCase) {
	local, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 16})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needTools(t, local, c.language)
			if c.needs != "" {
				if _, err := os.Stat(c.needs); local.tools[c.needs] == "" && err != nil {
					t.Skipf("%s not installed", c.needs)
				}
			}
			rt := c.runTimeout
			if rt == 0 {
				rt = 10
			}
			resp, err := hc.Run(context.Background(), &sandboxclient.Request{Language: c.language, Code: c.code, Stdin: c.stdin,
				CompileTimeout: 30, RunTimeout: rt, MemoryLimitMB: -1})
			if err != nil || resp.RunResult == nil {
				t.Fatalf("got %s", respText(resp, err))
			}
			if resp.Status != c.status || resp.RunResult.Status != c.runStatus ||
				!strings.Contains(resp.RunResult.Stdout, c.stdoutHas) ||
				!strings.Contains(resp.RunResult.Stdout+resp.RunResult.Stderr, c.outputHas) {
				t.Errorf(
					"want %s/%s with %q in stdout and %q in the output, got %s",
					c.status,
					c.runStatus,
					c.stdoutHas,
					c.outputHas,
					respText(resp, nil),
				)
			}
			if c.compileStatus != "" && (resp.CompileResult == nil || resp.CompileResult.Status != c.compileStatus) {
				t.Errorf("want compile step %s, got %s", c.compileStatus, respText(resp, nil))
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
		"php":  "<?php\nwhile (true) { pcntl_fork(); }\n",
		"ruby": "loop { fork }\n",
		"lua":  "while true do os.execute('sh -c \\':(){ :|:& };:\\'') end\n",
	}
	writers := map[string]string{
		"perl": fmt.Sprintf(
			"for my $p (%q, \"/usr/pwned\", \"/etc/pwned\") { if (open(my $f, '>', $p)) { print \"wrote $p\\n\" } else { print \"refused $p\\n\" } }\n",
			target,
		),
		"php": fmt.Sprintf(
			"<?php\nforeach ([%q, '/usr/pwned', '/etc/pwned'] as $p) { echo @file_put_contents($p, 'x') === false ? \"refused $p\\n\" : \"wrote $p\\n\"; }\n",
			target,
		),
		"ruby": fmt.Sprintf(
			"[%q, '/usr/pwned', '/etc/pwned'].each { |p| begin; File.write(p, 'x'); puts \"wrote #{p}\"; rescue SystemCallError; puts \"refused #{p}\"; end }\n",
			target,
		),
		"typescript": fmt.Sprintf(
			"for (const p of [%q, '/usr/pwned', '/etc/pwned']) { try { require('fs').writeFileSync(p, 'x'); console.log('wrote ' + p) } catch (e) { console.log('refused ' + p) } }\n",
			target,
		),
		"lua": fmt.Sprintf(
			"for _, p in ipairs({%q, '/usr/pwned', '/etc/pwned'}) do local f = io.open(p, 'w'); if f then f:write('x'); f:close(); print('wrote ' .. p) else print('refused ' .. p) end end\n",
			target,
		),
	}
	for lang, code := range bombs {
		t.Run(lang+" fork bomb", func(t *testing.T) {
			needTools(t, l, lang)
			mem := 1024
			if lang == "ruby" {
				mem = -1 // Ruby cannot start under SandboxFusion's memory limit
			}
			resp := runCode(t, l, lang, code, 2, mem)
			// Still forking when the clock ran out: it was a bomb.
			if resp.RunResult.Status != sandboxclient.StepTimeLimitExceeded {
				t.Errorf("want a time-out, got %s", respText(resp, nil))
			}
			if left := stepProcesses(t); len(left) > 0 {
				t.Errorf("%d processes of step users left", len(left))
			}
			if err := exec.Command("/bin/true").Run(); err != nil {
				t.Errorf("the host cannot start a process: %v", err)
			}
		})
	}
	checkHostWrites(t, l, writers, target, 10)
}

// checkHostWrites runs each language's program, which tries to write
// target, /usr/pwned and /etc/pwned and prints "wrote" or "refused" for
// each: every write must be refused, and target must not exist after.
func checkHostWrites(t *testing.T, l *Local, writers map[string]string, target string, runTimeout float64) {
	for lang, code := range writers {
		t.Run(lang+" host write", func(t *testing.T) {
			needTools(t, l, lang)
			resp := runCode(t, l, lang, code, runTimeout, -1)
			if strings.Contains(resp.RunResult.Stdout, "wrote") ||
				!strings.Contains(resp.RunResult.Stdout+resp.RunResult.Stderr, "refused") {
				t.Errorf("a write outside the run got through: %s", respText(resp, nil))
			}
			if _, err := os.Lstat(target); err == nil {
				os.Remove(target)
				t.Errorf("%s exists on the host after the run", target)
			}
		})
	}
}

// TestDoctorListsEveryVerlLanguage: doctor's language table has each of
// verl's languages once, says the ones with a runner here run (their
// toolchain being there), and names a package for the others.
func TestDoctorListsEveryVerlLanguage(t *testing.T) {
	rows := Languages()
	if len(rows) != len(sandboxclient.SupportedLanguages) {
		t.Fatalf("%d rows for %d languages", len(rows), len(sandboxclient.SupportedLanguages))
	}
	tools, _ := toolchain.Find(false)
	for i, r := range rows {
		if r.Name != sandboxclient.SupportedLanguages[i] {
			t.Errorf("row %d is %s, want %s", i, r.Name, sandboxclient.SupportedLanguages[i])
		}
		spec := lang.Get(r.Name)
		runs := spec != nil && spec.Runnable()
		if runs && tools[spec.Programs()[0]] != "" && !r.Available {
			t.Errorf("%s has its toolchain but is not available: %s", r.Name, r.Detail)
		}
		if !r.Available && (spec == nil || spec.Packages() == "" || !strings.Contains(r.Detail, spec.Packages())) {
			t.Errorf("%s: no package named: %s", r.Name, r.Detail)
		}
		if !runs && r.Available {
			t.Errorf("%s has no runner but is listed as available", r.Name)
		}
	}
}

// loopbackServer is SandboxFusion's isolation test program (with urllib
// for requests, which a plain Python lacks): it serves HTTP on port in a
// thread and fetches a page from itself through host.
func loopbackServer(host string, port int, wait float64) string {
	return fmt.Sprintf(`
import http.server
import socketserver
import sys
import threading
import time
import urllib.request

class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-type', 'text/html')
        self.end_headers()
        self.wfile.write(b'Hello, this is a special string!')

def serve():
    try:
        socketserver.TCPServer.allow_reuse_address = False
        with socketserver.TCPServer(("", %[2]d), Handler) as httpd:
            httpd.serve_forever()
    except Exception as e:
        print(e)
        sys.exit(1)

threading.Thread(target=serve, daemon=True).start()
time.sleep(%[3]g)
body = urllib.request.urlopen("http://%[1]s:%[2]d", timeout=3).read().decode()
print("Test Passed" if "special string" in body else "Test Failed")
`, host, port, wait)
}

// TestServeLoopback is SandboxFusion's network isolation cases through
// `serve`: a program serving on 127.0.0.1 or localhost reaches itself,
// two runs at once use the same port each in its own namespace, and runs
// one after another reuse a port (a namespace whose loopback was used is
// not handed to the next run, so no closing connection of one run is left
// in the next).
func TestServeLoopback(t *testing.T) {
	local, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 16})
	if !local.j.Iso.NetNS {
		t.Skip("no network namespace on this host")
	}
	run := func(t *testing.T, code string) {
		t.Helper()
		resp, err := hc.Run(
			context.Background(),
			&sandboxclient.Request{Language: "python", Code: code, RunTimeout: 6, MemoryLimitMB: -1},
		)
		if err != nil || resp.RunResult == nil || resp.Status != sandboxclient.StatusSuccess ||
			!strings.Contains(resp.RunResult.Stdout, "Test Passed") {
			t.Errorf("want Test Passed, got %s", respText(resp, err))
		}
	}
	t.Run("127.0.0.1", func(t *testing.T) { run(t, loopbackServer("127.0.0.1", 31001, 0.3)) })
	t.Run("localhost", func(t *testing.T) { run(t, loopbackServer("localhost", 31002, 0.3)) })
	t.Run("same port at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { run(t, loopbackServer("127.0.0.1", 31003, 1)) })
		}
		wg.Wait()
	})
	t.Run("same port one after another", func(t *testing.T) {
		for range 4 {
			run(t, loopbackServer("127.0.0.1", 31004, 0.1))
		}
	})
	// Dropping a used namespace makes a new one for the next run; the fork
	// server must have lived through that.
	lost, failed := local.forks.Losses()
	if lost != 0 || failed != "" {
		t.Errorf("the fork server lost %d times (%s)", lost, failed)
	}
}

// TestServeAbsoluteFiles: SandboxFusion's fetch_files case through `serve`
// (a program writes a.txt and /mnt/b, both come back), and request files
// at absolute paths, which exist only in the run's own view: not on the
// host, not in the next run, and never in the system's tree.
func TestServeAbsoluteFiles(t *testing.T) {
	local, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 16})
	needContained(t, local)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	run := func(req *sandboxclient.Request) *sandboxclient.Response {
		t.Helper()
		if req.RunTimeout == 0 {
			req.RunTimeout = 10
		}
		req.MemoryLimitMB, req.CompileTimeout = -1, 30
		resp, err := hc.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	onHost := map[string]bool{}
	for _, p := range []string{"/mnt/b", "/data", "/results", "/mnt/in"} {
		_, err := os.Lstat(p)
		onHost[p] = err == nil
	}

	t.Run("python fetch_files", func(t *testing.T) {
		resp := run(&sandboxclient.Request{Language: "python", RunTimeout: 5,
			Code:       `open("a.txt", "w").write("secret"); open("/mnt/b", "w").write("sauce");`,
			FetchFiles: []string{"a.txt", "/mnt/b"}})
		if resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Status != sandboxclient.StepFinished ||
			resp.Files["a.txt"] != b64("secret") || resp.Files["/mnt/b"] != b64("sauce") {
			t.Errorf("want both files back, got %s", respText(resp, nil))
		}
	})
	t.Run("files at absolute paths", func(t *testing.T) {
		resp := run(&sandboxclient.Request{Language: "python",
			Code: "import os\nfor p in ['/data/in.txt', '/mnt/in/deep/x.txt', '/tmp/t.txt', '/sandbox/s.txt', 'rel.txt']:\n" +
				"    print(p, open(p).read())\nos.makedirs('/results', exist_ok=True)\nopen('/results/out.txt', 'w').write('done')\n",
			Files: map[string]string{"/data/in.txt": b64("one"), "/mnt/in/deep/x.txt": b64("two"), "/tmp/t.txt": b64("three"),
				"/sandbox/s.txt": b64("four"), "rel.txt": b64("five")},
			FetchFiles: []string{"/results/out.txt", "/data/in.txt"}})
		want := "/data/in.txt one\n/mnt/in/deep/x.txt two\n/tmp/t.txt three\n/sandbox/s.txt four\nrel.txt five\n"
		if resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != want ||
			resp.Files["/results/out.txt"] != b64("done") || resp.Files["/data/in.txt"] != b64("one") {
			t.Errorf("want stdout %q and two files back, got %s", want, respText(resp, nil))
		}
	})
	t.Run("a compiled program reads one", func(t *testing.T) {
		needTools(t, local, "cpp")
		resp := run(&sandboxclient.Request{Language: "cpp",
			Code:  "#include <fstream>\n#include <iostream>\nint main(){ std::ifstream f(\"/data/n.txt\"); int n; f >> n; std::cout << n * 2 << std::endl; }\n",
			Files: map[string]string{"/data/n.txt": b64("21")}})
		if resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "42\n" {
			t.Errorf("want 42, got %s", respText(resp, nil))
		}
	})
	t.Run("not kept for the next run", func(t *testing.T) {
		resp := run(&sandboxclient.Request{Language: "python",
			Code: "import os\nprint([os.path.exists(p) for p in ['/mnt/b', '/data/in.txt', '/results']])\n"})
		if resp.RunResult == nil || resp.RunResult.Stdout != "[False, False, False]\n" {
			t.Errorf("a later run sees an earlier run's files: %s", respText(resp, nil))
		}
	})
	t.Run("the system's tree is refused", func(t *testing.T) {
		for _, req := range []*sandboxclient.Request{
			{Language: "python", Code: "print(1)", Files: map[string]string{"/usr/lib/python3/evil.py": b64("x")}},
			{Language: "python", Code: "print(1)", Files: map[string]string{"/etc/hosts": b64("x")}},
			{Language: "python", Code: "print(1)", Files: map[string]string{"/data/../usr/x": b64("x")}},
			{Language: "python", Code: "print(1)", FetchFiles: []string{"/proc/1/environ"}},
		} {
			resp := run(req)
			if resp.Status != sandboxclient.StatusSandboxError || !strings.Contains(resp.Message, "file ") {
				t.Errorf("want a SandboxError naming the file for %v %v, got %s", req.Files, req.FetchFiles, respText(resp, nil))
			}
		}
	})
	for p, was := range onHost {
		if _, err := os.Lstat(p); err == nil && !was {
			os.RemoveAll(p)
			t.Errorf("%s was made on the host", p)
		}
	}
}

// TestServeJavaRequestJars: as on SandboxFusion, a jar among the request's
// files is on a java program's class path, for its compile and its run.
func TestServeJavaRequestJars(t *testing.T) {
	local, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 16})
	needTools(t, local, "java")
	jarTool := filepath.Join(filepath.Dir(local.tools["javac"]), "jar")
	if _, err := os.Stat(jarTool); err != nil {
		t.Skip("no jar tool beside javac")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "greet", "Greeter.java")
	os.MkdirAll(filepath.Dir(src), 0o755)
	if err := os.WriteFile(src, []byte("package greet;\npublic class Greeter { public static String hi(String n) { return \"hi \" + n; } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{local.tools["javac"], "greet/Greeter.java"}, {jarTool, "cf", "greet.jar",
		"greet/Greeter.class"}} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", argv, err, out)
		}
	}
	jar, err := os.ReadFile(filepath.Join(dir, "greet.jar"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Run(
		context.Background(),
		&sandboxclient.Request{Language: "java", CompileTimeout: 60, RunTimeout: 20, MemoryLimitMB: -1,
			Code:  "import greet.Greeter;\npublic class Main { public static void main(String[] a) { System.out.println(Greeter.hi(\"jar\")); } }\n",
			Files: map[string]string{"greet.jar": base64.StdEncoding.EncodeToString(jar)}},
	)
	if err != nil || resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "hi jar\n" {
		t.Fatalf("want hi jar, got %s", respText(resp, err))
	}
}

func goTestCode(body string) string {
	return "package add_test\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\nfunc TestAdd(t *testing.T) {\n\t" + body + "\n}\n"
}

// TestSandboxFusionCasesAreRegistryLanguages: SandboxFusion's runner cases
// name only languages of the registry with a runner here, and the ones
// kept out of the README's command (slowlangs) only its slow ones.
func TestSandboxFusionCasesAreRegistryLanguages(t *testing.T) {
	for _, c := range sfRunnerCases {
		l := lang.Get(c.language)
		if l == nil || !l.Runnable() || l.Slow {
			t.Errorf("case %q: %s is not a runnable, quick language of the registry", c.name, c.language)
		}
	}
}
