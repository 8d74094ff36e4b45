package swe

import (
	"fmt"
	"regexp"
	"strings"
)

// The log's markers, as SWE-bench writes and reads them.
const (
	markApplied      = ">>>>> Applied Patch"
	markApplyFailed  = ">>>>> Patch Apply Failed"
	markResetFailed  = ">>>>> Reset Failed"
	markTestsError   = ">>>>> Tests Errored"
	markTestsTimeout = ">>>>> Tests Timed Out"
	markStart        = ">>>>> Start Test Output"
	markEnd          = ">>>>> End Test Output"
	// markExitCode is v5's record of the test command's own exit status,
	// written after the end marker; verl-score writes it under both rules.
	markExitCode = ">>>>> Test Exit Code"
	exitCodeVar  = "SWEBENCH_TEST_EXIT_CODE"
)

// PatchPath is where the model's patch is written before it is applied.
const PatchPath = "/tmp/patch.diff"

// heredoc ends the test patch inside the script (SWE-bench's delimiter).
const heredoc = "EOF_114329324912"

// condaEnv is the environment SWE-bench's images install the repository in.
const condaEnv = "testbed"

// nonTestExts are the endings SWE-bench drops from the test directives
// (".csv" is written without its dot there, and so here).
var nonTestExts = []string{".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"}

var diffGitRe = regexp.MustCompile(`diff --git a/.* b/(.*)`)

// Directives are the test files (or, for Django, modules) the test command
// is given: the files the test patch touches, less data files.
func Directives(inst *Instance) []string {
	if inst.Repo == "swe-bench/humaneval" {
		return []string{"test.py"}
	}
	var out []string
	for _, m := range diffGitRe.FindAllStringSubmatch(inst.TestPatch, -1) {
		d := m[1]
		skip := false
		for _, ext := range nonTestExts {
			if strings.HasSuffix(d, ext) {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		if inst.Repo == "django/django" {
			d = strings.TrimSuffix(d, ".py")
			d = strings.TrimPrefix(d, "tests/")
			d = strings.ReplaceAll(d, "/", ".")
		}
		out = append(out, d)
	}
	return out
}

// ModifiedFiles are the files a patch changes that exist before it: each
// file's source path ("--- a/…"), less new files (--- /dev/null).
func ModifiedFiles(patch string) []string {
	var out []string
	lines := strings.Split(patch, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "--- ") || !strings.HasPrefix(lines[i+1], "+++ ") {
			continue
		}
		src := diffPath(strings.TrimPrefix(lines[i], "--- "))
		if src != "/dev/null" && strings.HasPrefix(src, "a/") {
			out = append(out, src[2:])
		}
		i++
	}
	return out
}

// diffPath is the path of a ---/+++ line's rest: up to a tab (a timestamp
// follows it), without a carriage return.
func diffPath(s string) string {
	if tab := strings.IndexByte(s, '\t'); tab >= 0 {
		s = s[:tab]
	}
	return strings.TrimRight(s, "\r")
}

// CreatedFiles are the files a patch creates (--- /dev/null).
func CreatedFiles(patch string) []string {
	var out []string
	lines := strings.Split(patch, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.TrimRight(lines[i], "\r\t ") == "--- /dev/null" && strings.HasPrefix(lines[i+1], "+++ b/") {
			out = append(out, diffPath(strings.TrimPrefix(lines[i+1], "+++ b/")))
		}
	}
	return out
}

// TouchedFiles are every path a patch names on either side ("a/…", "b/…").
func TouchedFiles(patch string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "--- a/"), strings.HasPrefix(line, "+++ b/"):
			add(diffPath(line[6:]))
		case strings.HasPrefix(line, "diff --git "):
			if m := diffGitRe.FindStringSubmatch(line); m != nil {
				add(m[1])
			}
		}
	}
	return out
}

// ApplyScript is the shell script that applies the model's patch (at
// patchPath, in the sandbox PatchPath) in the work directory: the rules' commands in turn until one
// succeeds, each attempt's output in the log, and a marker line saying which
// applied or that none did.
func ApplyScript(workDir, patchPath string, r Rules) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "cd %s || { echo 'verl-score: no work directory %s'; exit 3; }\n", shq(workDir), workDir)
	for i, cmd := range r.applyCommands() {
		if i > 0 && r.Version == V5 {
			// v5 starts each attempt from a pristine tree
			b.WriteString("git checkout -- . ; git clean -fd\n")
		}
		fmt.Fprintf(&b, "echo '+ %s %s'\n", cmd, patchPath)
		fmt.Fprintf(&b, "if %s %s 2>&1; then echo '%s (%s)'; exit 0; fi\n", cmd, shq(patchPath), markApplied, cmd)
	}
	if r.Version == V5 {
		// v5: a patch already applied by a failed chain counts as applied
		fmt.Fprintf(&b, "if git apply --check --reverse %s 2>&1; then echo '%s (verified already applied)'; exit 0; fi\n",
			shq(patchPath), markApplied)
	}
	fmt.Fprintf(&b, "echo '%s'\nexit 1\n", markApplyFailed)
	return b.String()
}

// A Spec says how an instance's tests run: SWE-bench's specs for a (repo,
// version), or SWE-rebench's install_config.
type Spec struct {
	TestCmd      []string `json:"test_cmd"`
	EvalCommands []string `json:"eval_commands,omitempty"`
	Install      string   `json:"install,omitempty"`
	Parser       string   `json:"log_parser"`
}

// EvalScript is SWE-bench's evaluation script for an instance under spec:
// activate the environment, reset the files the test patch touches to the
// base commit, apply the test patch, run the test command with its
// directives between the start and end markers, record the command's exit
// status, and reset again.
func EvalScript(inst *Instance, spec *Spec) string {
	wd := inst.WorkDir
	testFiles := ModifiedFiles(inst.TestPatch)
	reset := "git checkout " + inst.BaseCommit + " " + strings.Join(testFiles, " ")
	lines := []string{
		"#!/bin/bash",
		"set -uxo pipefail",
		"source /opt/miniconda3/bin/activate",
		"conda activate " + condaEnv,
		"cd " + wd,
	}
	lines = append(lines, spec.EvalCommands...)
	lines = append(lines,
		"git config --global --add safe.directory "+wd,
		"cd "+wd,
		"git status",
		"git show",
		"git -c core.fileMode=false diff "+inst.BaseCommit,
		"source /opt/miniconda3/bin/activate",
		"conda activate "+condaEnv,
	)
	if spec.Install != "" {
		lines = append(lines, spec.Install)
	}
	test := spec.TestCmd
	last := ""
	if len(test) > 0 {
		last = test[len(test)-1]
		test = test[:len(test)-1]
	}
	lines = append(lines,
		reset,
		"git apply -v - <<'"+heredoc+"'\n"+inst.TestPatch+"\n"+heredoc,
		": '"+markStart+"'",
	)
	lines = append(lines, test...)
	lines = append(lines,
		strings.Join(append([]string{last}, Directives(inst)...), " "),
		exitCodeVar+"=$?",
		": '"+markEnd+"'",
		`echo "`+markExitCode+`: $`+exitCodeVar+`"`,
		reset,
	)
	return strings.Join(lines, "\n") + "\n"
}

// RecordExitCode makes a row's own evaluation script record its test
// command's exit status, as v5 does to every script: after the line that
// holds the end marker's command, before it. A script with no end marker is
// returned unchanged.
func RecordExitCode(script string) string {
	lines := strings.Split(script, "\n")
	for i, line := range lines {
		if strings.Contains(line, markEnd) {
			out := append([]string{}, lines[:i]...)
			out = append(out, exitCodeVar+"=$?", line, `echo "`+markExitCode+`: $`+exitCodeVar+`"`)
			return strings.Join(append(out, lines[i+1:]...), "\n")
		}
	}
	return script
}

// shq quotes s for the shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
