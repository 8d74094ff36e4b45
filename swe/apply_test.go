package swe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository with one commit of files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."},
		{"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestApplyScript applies real patches with git and patch, as SWE-bench's
// harness does: a clean patch by git apply, one whose context moved by
// patch --fuzz only, one that applies nowhere, under both rules.
func TestApplyScript(t *testing.T) {
	for _, tool := range []string{"git", "patch", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s missing", tool)
			}
			t.Skipf("SKIPPED LOUDLY: %s missing", tool)
		}
	}
	src := "def add(a, b):\n    # the sum\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
	clean := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n" +
		"     # the sum\n-    return a - b\n+    return a + b\n"
	// the comment line differs: git apply refuses, patch --fuzz applies
	fuzzy := "--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n     # adds them\n-    return a - b\n" +
		"+    return a + b\n"
	wrong := "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-def mul(a, b):\n+def mul(x, y):\n-    return a * b\n" +
		"+    return x * y\n"
	for _, rules := range []Rules{DefaultRules, {Version: V5}} {
		for _, tt := range []struct {
			name, patch, by string
			applied         bool
		}{
			{"clean", clean, "git apply --verbose", true},
			{"fuzzy", fuzzy, "fuzz=5", true},
			{"wrong", wrong, "", false},
		} {
			repo := gitRepo(t, map[string]string{"calc.py": src})
			pf := filepath.Join(t.TempDir(), "patch.diff")
			if err := os.WriteFile(pf, []byte(tt.patch), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "-c", ApplyScript(repo, pf, rules)).CombinedOutput()
			applied := err == nil
			body, _ := os.ReadFile(filepath.Join(repo, "calc.py"))
			if applied != tt.applied || applied != strings.Contains(string(out), markApplied) ||
				applied == strings.Contains(string(out), markApplyFailed) {
				t.Errorf("%s %s: applied %v (%v), want %v\n%s", rules.Version, tt.name, applied, err, tt.applied, out)
			}
			if applied && (!strings.Contains(string(body), "return a + b") || !strings.Contains(string(out), tt.by)) {
				t.Errorf("%s %s: applied by the wrong command or not at all:\n%s\n%s", rules.Version, tt.name, out, body)
			}
		}
	}
	if out, err := exec.Command("bash", "-c", ApplyScript("/nonexistent", "/x", DefaultRules)).CombinedOutput(); err == nil ||
		err.(*exec.ExitError).ExitCode() != 3 {
		t.Errorf("missing work dir: %v %s", err, out)
	}
}
