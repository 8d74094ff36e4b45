package swe

import (
	"reflect"
	"strings"
	"testing"
)

func TestExtractPatch(t *testing.T) {
	const d1 = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
	const d2 = "diff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n"
	for _, tt := range []struct {
		name, in, want string
		ok             bool
	}{
		{"a diff fence", "Here is the fix:\n```diff\n" + d1 + "```\nDone.", d1, true},
		{"a patch fence", "```patch\n" + d1 + "```", d1, true},
		{"the last fence wins", "```diff\n" + d1 + "```\nBetter:\n```diff\n" + d2 + "```\n", d2, true},
		{"an untagged fence holding a diff", "```\n" + d2 + "```", d2, true},
		{"a python fence is not a patch", "```python\nprint(1)\n```", "", false},
		{"prose then a bare diff", "I changed x.\n\n" + d1, d1, true},
		{"a bare --- a/ patch", "fix:\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n", true},
		{"SWE-bench's <patch> form", "<patch>\n" + d1 + "</patch>", d1, true},
		{"a later <patch> beats an earlier fence", "```diff\n" + d1 + "```\n<patch>\n" + d2 + "</patch>", d2, true},
		{"a longer fence holding backticks", "````diff\n" + d1 + "```not a close\n````\n", d1 + "```not a close\n", true},
		{"an unclosed fence runs to the end", "```diff\n" + d1, d1, true},
		{"no patch", "I could not find the bug.", "", false},
		{"an empty fence", "```diff\n```", "", false},
		{"a diff inside a line is not a start", "see diff --git a/x b/x above", "", false},
	} {
		got, ok := ExtractPatch(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: got %q %v, want %q %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseInstance(t *testing.T) {
	gt := map[string]any{
		"instance_id": "astropy__astropy-12907", "repo": "astropy/astropy", "base_commit": "abc",
		"test_patch": "diff", "version": 4.3, "FAIL_TO_PASS": `["a", "b"]`, "PASS_TO_PASS": []any{"c"},
	}
	if !IsInstance(gt) {
		t.Fatal("not recognised")
	}
	inst, err := ParseInstance(gt)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Version != "4.3" || !reflect.DeepEqual(inst.FailToPass, []string{"a", "b"}) ||
		!reflect.DeepEqual(inst.PassToPass, []string{"c"}) || inst.WorkDir != "/testbed" {
		t.Errorf("%+v", inst)
	}
	if got := inst.ImageRef(); got != "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest" {
		t.Errorf("image %s", got)
	}
	gt["version"], gt["docker_image"] = 3.0, "reg.example/x:1"
	if inst, _ = ParseInstance(gt); inst.Version != "3.0" || inst.ImageRef() != "reg.example/x:1" {
		t.Errorf("version %q image %q", inst.Version, inst.ImageRef())
	}
	gt["install_config"] = `{"test_cmd": "pytest -rA", "log_parser": "parse_log_pytest_v2", "eval_commands": ["export X=1"]}`
	if inst, err = ParseInstance(gt); err != nil || inst.Install == nil || inst.Install.LogParser != "parse_log_pytest_v2" ||
		!reflect.DeepEqual(inst.Install.TestCmd, []string{"pytest -rA"}) {
		t.Errorf("install_config: %+v %v", inst.Install, err)
	}
	if IsInstance(map[string]any{"inputs": []any{}, "outputs": []any{}}) {
		t.Error("test cases taken for an instance")
	}
	for _, tt := range []struct {
		key  string
		val  any
		want string
	}{
		{"FAIL_TO_PASS", "[not json", `"FAIL_TO_PASS" is a string but not a JSON list`},
		{"PASS_TO_PASS", 3.0, `"PASS_TO_PASS" is a number, want a list`},
		{"FAIL_TO_PASS", []any{"a", 1.0}, `"FAIL_TO_PASS"[1] is a number`},
		{"base_commit", nil, `no "base_commit"`},
		{"instance_id", true, `"instance_id" is a boolean, want a string`},
		{"install_config", []any{}, "install_config is a list, want an object"},
	} {
		bad := map[string]any{}
		for k, v := range gt {
			bad[k] = v
		}
		bad[tt.key] = tt.val
		if _, err := ParseInstance(bad); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v: error %v, want %q", tt.key, tt.val, err, tt.want)
		}
	}
}

func TestPlanFor(t *testing.T) {
	base := Instance{InstanceID: "i", Repo: "pytest-dev/pytest", Version: "5.4", BaseCommit: "c", WorkDir: "/testbed",
		TestPatch: "diff --git a/testing/test_x.py b/testing/test_x.py\n--- a/testing/test_x.py\n+++ b/testing/test_x.py\n"}
	p, err := PlanFor(&base, "")
	if err != nil || p.Source != "SWE-bench 4.1.0 specs" || p.ParserName != "parse_log_pytest" ||
		!strings.Contains(p.Script, "pytest -rA testing/test_x.py\n") {
		t.Fatalf("table: %+v %v", p, err)
	}
	own := base
	own.EvalScript = "#!/bin/bash\n: '" + markStart + "'\npytest\n: '" + markEnd + "'\n"
	if p, err = PlanFor(&own, ""); err != nil || p.Source != "eval_script" ||
		!strings.Contains(p.Script, "pytest\n"+exitCodeVar+"=$?\n: '"+markEnd+"'\necho \""+markExitCode) {
		t.Errorf("eval_script: %+v %v", p, err)
	}
	rebench := base
	rebench.Repo, rebench.Install = "someone/pkg", &InstallConfig{TestCmd: []string{"pytest -rA -x"}, LogParser: "parse_log_pytest_v2"}
	if p, err = PlanFor(&rebench, ""); err != nil || p.Source != "install_config" || p.ParserName != "parse_log_pytest_v2" ||
		!strings.Contains(p.Script, "pytest -rA -x testing/test_x.py") {
		t.Errorf("install_config: %+v %v", p, err)
	}
	unknown := base
	unknown.Version = "0.1"
	if _, err = PlanFor(&unknown, ""); err == nil || !strings.Contains(err.Error(), `no spec for pytest-dev/pytest version "0.1"`) {
		t.Errorf("unknown version: %v", err)
	}
	unknown.Repo = "someone/pkg"
	if _, err = PlanFor(&unknown, ""); err == nil || !strings.Contains(err.Error(), "no way to evaluate it") {
		t.Errorf("unknown repo: %v", err)
	}
	if _, err = PlanFor(&rebench, "parse_log_nope"); err == nil || !strings.Contains(err.Error(), `unknown log parser "parse_log_nope"`) {
		t.Errorf("unknown parser: %v", err)
	}
}

func TestPatchFiles(t *testing.T) {
	patch := "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\t2024-01-01\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+x\n"
	if got := ModifiedFiles(patch); !reflect.DeepEqual(got, []string{"src/a.py"}) {
		t.Errorf("modified %q", got)
	}
	if got := CreatedFiles(patch); !reflect.DeepEqual(got, []string{"conftest.py"}) {
		t.Errorf("created %q", got)
	}
	if got := TouchedFiles(patch); !reflect.DeepEqual(got, []string{"src/a.py", "conftest.py"}) {
		t.Errorf("touched %q", got)
	}
}

// Under v5 a skipped FAIL_TO_PASS test fails, a skipped PASS_TO_PASS test is
// maintained, and a cut parametrized name finds its test; under v4.1.0 a
// skipped test counts for nothing and a patch that skips every F2P test is
// resolved.
func TestRulesDiffer(t *testing.T) {
	inst := &Instance{Repo: "pytest-dev/pytest", FailToPass: []string{"t.py::f", "t.py::g[log(ph"},
		PassToPass: []string{"t.py::p"}}
	log := "+ : '" + markStart + "'\nSKIPPED t.py::f\nPASSED t.py::g[log(photon)]\nSKIPPED t.py::p\n+ : '" + markEnd + "'\n"
	v4 := Grade(inst, ReadLog(log, parsePytest, DefaultRules).Statuses, DefaultRules)
	v5 := Grade(inst, ReadLog(log, parsePytest, Rules{Version: V5}).Statuses, Rules{Version: V5})
	// v4.1.0: f skipped (neither), g missing (failed): f2p = 0/1
	if v4.Resolution != ResolvedNo || !v4.FailToPass[1].Failed || v4.FailToPass[0].Passed || v4.FailToPass[0].Failed {
		t.Errorf("v4.1.0: %+v", v4)
	}
	if !v5.FailToPass[0].Failed || !v5.FailToPass[1].Passed || !v5.PassToPass[0].Passed || v5.Resolution != ResolvedPartial {
		t.Errorf("v5: %+v", v5)
	}
	allSkipped := &Instance{Repo: "pytest-dev/pytest", FailToPass: []string{"t.py::f"}, PassToPass: []string{"t.py::p"}}
	log = "+ : '" + markStart + "'\nSKIPPED t.py::f\nPASSED t.py::p\n+ : '" + markEnd + "'\n"
	if g := Grade(allSkipped, ReadLog(log, parsePytest, DefaultRules).Statuses, DefaultRules); !g.Resolved() {
		t.Errorf("v4.1.0 resolves an all-skipped F2P: %+v", g)
	}
	if g := Grade(allSkipped, ReadLog(log, parsePytest, Rules{Version: V5}).Statuses, Rules{Version: V5}); g.Resolved() {
		t.Errorf("v5 does not: %+v", g)
	}
	// v5: a failing test command with no failure in the log is not graded
	log = "+ : '" + markStart + "'\nPASSED t.py::f\n" + exitCodeVar + "=$?\n+ : '" + markEnd + "'\n" + markExitCode + ": 2\n"
	if l := ReadLog(log, parsePytest, Rules{Version: V5}); l.Graded || l.ExitCode != 2 {
		t.Errorf("v5 exit code: %+v", l)
	}
	if l := ReadLog(log, parsePytest, DefaultRules); !l.Graded || l.ExitCode != 2 {
		t.Errorf("v4.1.0 exit code: %+v", l)
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, tt := range []struct {
		statuses []string
		verdicts []int8
		kind     string
		ok       bool
	}{
		{[]string{StatusPassedTest, StatusNotCounted}, []int8{1, 1}, Resolved, true},
		{[]string{StatusPassedTest, StatusFailedTest}, []int8{1, 0}, TestsFailed, true},
		{[]string{CaseStatus(Timeout), CaseStatus(Timeout)}, []int8{0, 0}, Timeout, true},
		{[]string{CaseStatus(EnvironmentError)}, []int8{-1}, EnvironmentError, true},
		{[]string{"success", "timeout"}, []int8{1, -3}, "", false},
		{nil, nil, "", false},
	} {
		kind, ok := OutcomeOf(tt.statuses, tt.verdicts)
		if kind != tt.kind || ok != tt.ok {
			t.Errorf("%v: %q %v, want %q %v", tt.statuses, kind, ok, tt.kind, tt.ok)
		}
	}
}
