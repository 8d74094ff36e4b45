package swe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// swebenchPython is a Python with the given swebench release installed:
// .ci/run makes one in .ci/venv (4.1.0) and one in .ci/swebench5 (5.0.2);
// VERL_SCORE_SWEBENCH_PYTHON and VERL_SCORE_SWEBENCH5_PYTHON name others.
// Without one the test skips, and fails under CI=true.
func swebenchPython(t *testing.T, rules Rules) string {
	t.Helper()
	env, dflt, want := "VERL_SCORE_SWEBENCH_PYTHON", "../.ci/venv/bin/python", "4.1.0"
	if rules.Version == V5 {
		env, dflt, want = "VERL_SCORE_SWEBENCH5_PYTHON", "../.ci/swebench5/bin/python", "5."
	}
	py := os.Getenv(env)
	if py == "" {
		abs, _ := filepath.Abs(dflt)
		py = abs
	}
	out, err := exec.Command(py, "-c", "import swebench; print(swebench.__version__)").CombinedOutput()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), want) {
		msg := fmt.Sprintf("SKIPPED LOUDLY: no Python with swebench %s at %s (%v: %s); "+
			"make one with .ci/run or name it in %s", want, py, err, bytes.TrimSpace(out), env)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// bothRules runs a comparison under SWE-bench 4.1.0's rules and v5's.
func bothRules(t *testing.T, f func(t *testing.T, py string, r Rules)) {
	for _, r := range []Rules{DefaultRules, {Version: V5}} {
		t.Run("swebench-"+string(r.Version), func(t *testing.T) { f(t, swebenchPython(t, r), r) })
	}
}

// runPython runs a script with the swebench Python, JSON in and out.
func runPython(t *testing.T, py, script string, in, out any) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("swebench's side: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("swebench's side: %v\n%s", err, res)
	}
}

// logLines are the pieces random logs are made of: what the parsers look
// for, near misses and awkward whitespace.
var logLines = []string{
	"PASSED tests/test_a.py::test_one", "FAILED tests/test_a.py::test_two - AssertionError: x - y",
	"ERROR tests/test_b.py::test_three", "SKIPPED [1] tests/test_b.py:10: no", "XFAIL tests/test_c.py::test_x - reason",
	"PASSED", "FAILED", "PASSEDx tests/t.py::a", "PASSED tests/t.py::p[/tmp/a/b/c.txt]", "PASSED tests/t.py::p[//srv/x]",
	"FAILED tests/t.py::p[/a/*/b] - boom", "PASSED tests/t.py::q[a-b]", "tests/test_a.py::test_one PASSED",
	"tests/test_a.py::test_old FAILED", "tests/t.py::x PASSED [ 50%]", "\x1b[32mPASSED\x1b[0m tests/t.py::colour",
	"[1mFAILED[0m tests/t.py::bold - x", "PASSED\x1ctests/t.py::sep", "PASSED\ttests/t.py::tab", "  PASSED tests/t.py::indented",
	"test_foo (module.Class) ... ok", "test_bar (module.Class) ... FAIL", "test_baz (module.Class) ... ERROR",
	"test_skip (module.Class) ... skipped 'no db'", "test_multi (module.Class) ... ", "ok", "  ok  ",
	"FAIL: test_bar (module.Class)", "ERROR: test_baz (module.Class)", "FAIL:", "test_q (m.C) ... OK", "test_r (m.C) ...  OK",
	"--version is equivalent to version", "test_late (m.C) ... System check identified no issues (0 silenced)",
	"test_ise (m.C) ... Internal Server Error: /admin/x/", "test_tad (m.C) ... Testing against Django installed in '/x' (0 silenced).",
	"Applying sites.0002_alter_domain_unique...test_no_migrations (m.C) ... ok",
	"________________ sympy/core/tests/test_basic.py:test_equality ________________", "test_equality ok",
	"test_subs F", "test_args E", "   test_indent ok", "test_ E", "tests/test_s.py::test_sea PASSED [ 10%]",
	"x PASSED y", "PASSED tests/t.py::mouse[MouseButton.LEFT]", "FAILED tests/t.py::mouse[MouseButton.RIGHT] - e",
	"", " ", "random prose", "collected 3 items", "=== 1 failed, 2 passed in 0.1s ===", "PASSED  tests/t.py::two  spaces",
	"FAILED tests/t.py::a - b - c", "3 passing", "Executed 0 of 0", "PASSED tests/t.py::with space in it",
	"tests/t.py::spaced name PASSED", "SKIPPED [2] tests/t.py:3: why", "SKIPPED [x] t", "SKIPPED", "XFAIL", "ERROR", "PASSED tests/ü.py::ünïcode", "PASSED\u00a0tests/t.py::nbsp",
}

func randomLog(r *rand.Rand, withMarkers bool) string {
	var b strings.Builder
	n := 1 + r.Intn(12)
	for i := 0; i < n; i++ {
		if withMarkers && i == n/3 {
			b.WriteString("+ : '" + markStart + "'\n")
		}
		if withMarkers && i == 2*n/3 && r.Intn(4) > 0 {
			b.WriteString("+ : '" + markEnd + "'\n")
		}
		b.WriteString(logLines[r.Intn(len(logLines))])
		if r.Intn(8) == 0 {
			b.WriteString(logLines[r.Intn(len(logLines))])
		}
		b.WriteString("\n")
	}
	if withMarkers && r.Intn(10) == 0 {
		b.WriteString(markApplyFailed + "\n")
	}
	if withMarkers && r.Intn(2) == 0 {
		fmt.Fprintf(&b, "%s: %d\n", markExitCode, r.Intn(3))
	}
	return b.String()
}

const parsersScript = `
import json, sys
from swebench.harness.log_parsers import python as P
logs = json.load(sys.stdin)
out = []
for name, log in logs:
    try:
        m = getattr(P, name)(log, None)
        out.append({"ok": True, "pairs": [[k, v] for k, v in m.items()]})
    except Exception as e:
        out.append({"ok": False, "error": repr(e)})
json.dump(out, sys.stdout)
`

// TestParsersMatchSWEbench runs every parser of ours and SWE-bench 4.1.0's
// own on the same random logs: the same tests with the same statuses in the
// same order, except where SWE-bench's parser raises.
func TestParsersMatchSWEbench(t *testing.T) { bothRules(t, parsersMatch) }

func parsersMatch(t *testing.T, py string, rules Rules) {
	r := rand.New(rand.NewSource(1))
	var names []string
	for n := range Parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	var in [][2]string
	for i := 0; i < 3000; i++ {
		in = append(in, [2]string{names[i%len(names)], randomLog(r, false)})
	}
	var got []struct {
		OK    bool        `json:"ok"`
		Pairs [][2]string `json:"pairs"`
		Error string      `json:"error"`
	}
	runPython(t, py, parsersScript, in, &got)
	raised, nonEmpty := 0, 0
	for i, c := range in {
		if !got[i].OK {
			raised++
			continue
		}
		sm := Parsers[c[0]](c[1], rules)
		var ours [][2]string
		for _, k := range sm.Tests() {
			v, _ := sm.Get(k)
			ours = append(ours, [2]string{k, v})
		}
		if len(ours) > 0 {
			nonEmpty++
		}
		if !reflect.DeepEqual(ours, got[i].Pairs) && (len(ours) > 0 || len(got[i].Pairs) > 0) {
			t.Errorf("%s on %q:\n ours     %q\n swebench %q", c[0], c[1], ours, got[i].Pairs)
		}
	}
	t.Logf("%d logs, %d where SWE-bench's parser raised, %d with tests found", len(in), raised, nonEmpty)
	if nonEmpty < len(in)/2 {
		t.Errorf("only %d of %d logs named a test: the logs test too little", nonEmpty, len(in))
	}
}

const gradingScript = `
import json, sys
from types import SimpleNamespace
import tempfile
from swebench.harness.constants import EvalType
from swebench.harness.grading import get_eval_tests_report, get_resolution_status, get_logs_eval
cases = json.load(sys.stdin)
out = []
for c in cases:
    sm, ok = {}, True
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(c["log"])
    spec = SimpleNamespace(repo=c["repo"], version=c["version"], log_parser=c["parser"])
    try:
        sm, found = get_logs_eval(spec, f.name)
    except Exception as e:
        out.append({"raised": repr(e)})
        continue
    et = EvalType.FAIL_ONLY if c["fail_only"] else EvalType.PASS_AND_FAIL
    rep = get_eval_tests_report(sm, {"FAIL_TO_PASS": c["f2p"], "PASS_TO_PASS": c["p2p"]}, eval_type=et)
    out.append({"found": found, "status": sm, "report": {k: rep[k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")},
                "resolution": get_resolution_status(rep)})
json.dump(out, sys.stdout)
`

// TestGradingMatchesSWEbench reads random logs and grades random test lists
// against them as get_logs_eval, get_eval_tests_report and
// get_resolution_status of SWE-bench 4.1.0 do.
func TestGradingMatchesSWEbench(t *testing.T) { bothRules(t, gradingMatches) }

func gradingMatches(t *testing.T, py string, rules Rules) {
	r := rand.New(rand.NewSource(2))
	repos := [][2]string{{"pytest-dev/pytest", "5.4"}, {"django/django", "3.0"}, {"sympy/sympy", "1.1"},
		{"psf/requests", "2.0"}, {"astropy/astropy", "5.0"}, {"mwaskom/seaborn", "0.12"}, {"matplotlib/matplotlib", "3.5"}}
	testNames := []string{"tests/test_a.py::test_one", "tests/test_a.py::test_two", "tests/test_b.py::test_three",
		"tests/test_c.py::test_x", "tests/t.py::p[/c.txt]", "tests/test_a.py::test_old", "test_foo (module.Class)",
		"test_bar (module.Class)", "test_skip (module.Class)", "test_equality", "test_subs", "tests/t.py::absent",
		"tests/test_s.py::test_sea", "tests/t.py::colour", "[1]", "tests/t.py::p[/c", "tests/t.py::mouse[1"}
	type gcase struct {
		Log      string   `json:"log"`
		Repo     string   `json:"repo"`
		Version  string   `json:"version"`
		FailOnly bool     `json:"fail_only"`
		Parser   string   `json:"parser"`
		F2P      []string `json:"f2p"`
		P2P      []string `json:"p2p"`
	}
	pick := func() []string {
		out := []string{}
		for _, n := range testNames {
			if r.Intn(4) == 0 {
				out = append(out, n)
			}
		}
		return out
	}
	var in []gcase
	for i := 0; i < 1500; i++ {
		rv := repos[r.Intn(len(repos))]
		spec, _ := TableSpec(rv[0], rv[1])
		in = append(in, gcase{Log: randomLog(r, true), Repo: rv[0], Version: rv[1], FailOnly: r.Intn(5) == 0,
			Parser: spec.Parser,
			F2P:    pick(), P2P: pick()})
	}
	var got []struct {
		Found  bool              `json:"found"`
		Status map[string]string `json:"status"`
		Report map[string]struct {
			Success []string `json:"success"`
			Failure []string `json:"failure"`
		} `json:"report"`
		Resolution string `json:"resolution"`
		Raised     string `json:"raised"`
	}
	runPython(t, py, gradingScript, in, &got)
	resolved, graded, raised := 0, 0, 0
	for i, c := range in {
		if got[i].Raised != "" {
			raised++
			continue
		}
		inst := &Instance{Repo: c.Repo, Version: c.Version, FailToPass: c.F2P, PassToPass: c.P2P}
		if c.FailOnly {
			inst.Repo = "markedjs/marked"
		}
		spec, _ := TableSpec(c.Repo, c.Version)
		l := ReadLog(c.Log, Parsers[spec.Parser], rules)
		if l.Graded != got[i].Found {
			t.Errorf("case %d: graded %v, swebench found %v (%s)\n%s", i, l.Graded, got[i].Found, l.Why, c.Log)
			continue
		}
		if !reflect.DeepEqual(l.Statuses.Map(), got[i].Status) && (l.Statuses.Len() > 0 || len(got[i].Status) > 0) {
			t.Errorf("case %d: statuses %v, swebench %v", i, l.Statuses.Map(), got[i].Status)
		}
		rep := Grade(inst, l.Statuses, rules)
		lists := func(ts []TestResult) (ok, bad []string) {
			for _, tr := range ts {
				if tr.Passed {
					ok = append(ok, tr.Name)
				} else if tr.Failed {
					bad = append(bad, tr.Name)
				}
			}
			return
		}
		for key, ts := range map[string][]TestResult{"FAIL_TO_PASS": rep.FailToPass, "PASS_TO_PASS": rep.PassToPass} {
			ok, bad := lists(ts)
			want := got[i].Report[key]
			if strings.Join(ok, "|") != strings.Join(want.Success, "|") || strings.Join(bad, "|") != strings.Join(want.Failure, "|") {
				t.Errorf("case %d %s: success %q failure %q; swebench %q %q", i, key, ok, bad, want.Success, want.Failure)
			}
		}
		if rep.Resolution != got[i].Resolution {
			t.Errorf("case %d: %s, swebench %s", i, rep.Resolution, got[i].Resolution)
		}
		if l.Graded {
			graded++
		}
		if rep.Resolved() {
			resolved++
		}
	}
	t.Logf("%d cases: %d graded, %d resolved, %d where SWE-bench raised", len(in), graded, resolved, raised)
	if graded < len(in)/3 || resolved == 0 || resolved == len(in) {
		t.Errorf("%d graded, %d resolved of %d: the cases test too little", graded, resolved, len(in))
	}
}

const evalScriptScript = `
import json, sys
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS_PY
from swebench.harness.test_spec.python import make_eval_script_list_py
out = []
for inst in json.load(sys.stdin):
    specs = MAP_REPO_VERSION_TO_SPECS_PY[inst["repo"]][inst["version"]]
    lines = make_eval_script_list_py(inst, specs, "testbed", "/testbed", inst["base_commit"], inst["test_patch"])
    out.append("\n".join(["#!/bin/bash", "set -uxo pipefail"] + lines) + "\n")
json.dump(out, sys.stdout)
`

// TestEvalScriptMatchesSWEbench builds the evaluation script of every
// (repo, version) in the table, for a test patch that modifies, creates and
// deletes files (data files among them), and compares it with SWE-bench
// 4.1.0's make_eval_script_list_py: the same lines but for the two that
// record the test command's exit status.
func TestEvalScriptMatchesSWEbench(t *testing.T) {
	py := swebenchPython(t, DefaultRules)
	testPatch := "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n" +
		"@@ -1 +1,2 @@\n x = 1\n+y = 2\n" +
		"diff --git a/tests/new_test.py b/tests/new_test.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/new_test.py\n" +
		"@@ -0,0 +1 @@\n+def test_new(): pass\n" +
		"diff --git a/tests/data/x.json b/tests/data/x.json\n--- a/tests/data/x.json\n+++ b/tests/data/x.json\n" +
		"@@ -1 +1 @@\n-{}\n+[]\n" +
		"diff --git a/tests/sub/test_gone.py b/tests/sub/test_gone.py\ndeleted file mode 100644\n" +
		"--- a/tests/sub/test_gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-pass\n"
	type inst struct {
		Repo       string `json:"repo"`
		Version    string `json:"version"`
		BaseCommit string `json:"base_commit"`
		TestPatch  string `json:"test_patch"`
	}
	var in []inst
	for repo, versions := range specTable {
		for v := range versions {
			in = append(in, inst{repo, v, "0123abcd", testPatch})
		}
	}
	var want []string
	runPython(t, py, evalScriptScript, in, &want)
	for i, c := range in {
		spec, _ := TableSpec(c.Repo, c.Version)
		got := EvalScript(&Instance{Repo: c.Repo, Version: c.Version, BaseCommit: c.BaseCommit, TestPatch: c.TestPatch,
			WorkDir: DefaultWorkDir}, spec)
		var kept []string
		for _, line := range strings.Split(got, "\n") {
			if line == exitCodeVar+"=$?" || strings.HasPrefix(line, `echo "`+markExitCode) {
				continue
			}
			kept = append(kept, line)
		}
		if strings.Join(kept, "\n") != want[i] {
			t.Errorf("%s %s: ours\n%s\nswebench's\n%s", c.Repo, c.Version, strings.Join(kept, "\n"), want[i])
			return
		}
	}
	t.Logf("%d (repo, version) scripts identical", len(in))
}

// TestSpecsTableIsSWEbenchs: the embedded table is what scripts/swe-specs.py
// writes from SWE-bench 4.1.0 now.
func TestSpecsTableIsSWEbenchs(t *testing.T) {
	py := swebenchPython(t, DefaultRules)
	out, err := exec.Command(py, "../scripts/swe-specs.py").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, specsJSON) {
		t.Error("swe/specs_v4.1.0.json differs from what scripts/swe-specs.py writes: run it again")
	}
	if len(specTable) < 15 {
		t.Errorf("%d repositories in the table", len(specTable))
	}
}
