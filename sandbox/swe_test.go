//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
	"github.com/verl-score/verl-score/swe"
)

// The fixture repository: a package with a bug in add, a test of mul that
// passes throughout, and a test patch that adds the test of add.
const (
	calcOps   = "def add(a, b):\n    # the sum of a and b\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
	calcTests = "from calc.ops import add, mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"
	testPatch = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n" +
		"@@ -3,3 +3,7 @@ from calc.ops import add, mul\n \n def test_mul():\n     assert mul(3, 4) == 12\n+\n+\n" +
		"+def test_add():\n+    assert add(2, 3) == 5\n"
	goldPatch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,6 +1,6 @@\n" +
		" def add(a, b):\n     # the sum of a and b\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n"
)

var (
	calcOnce sync.Once
	calcRepo string
	calcBase string
	calcErr  string
)

// calcRepository makes the fixture repository with git, once.
func calcRepository(t *testing.T) (dir, base string) {
	calcOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verl-score-calc-")
		if err != nil {
			calcErr = err.Error()
			return
		}
		files := map[string]string{"calc/__init__.py": "", "calc/ops.py": calcOps, "tests/test_ops.py": calcTests,
			"tests/__init__.py": "", "setup.cfg": "[metadata]\nname = calc\n"}
		for n, body := range files {
			p := filepath.Join(dir, n)
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_ = os.WriteFile(p, []byte(body), 0o644)
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "."},
			{"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"}} {
			if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
				calcErr = string(out)
				return
			}
		}
		out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
		calcRepo, calcBase = dir, strings.TrimSpace(string(out))
	})
	if calcErr != "" {
		t.Fatal(calcErr)
	}
	return calcRepo, calcBase
}

// sweFixture is the SWE runner over an --images directory holding the
// fixture's image (the Debian base, the repository at /testbed) as a
// docker save archive.
func sweFixture(t *testing.T) (*SWE, *swe.Instance) {
	t.Helper()
	l := containedSandbox(t)
	rootfs := imagetest.BaseRootfs(t)
	repo, base := calcRepository(t)
	img := imagetest.Image(t, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}, "/testbed",
		imagetest.DirLayer(t, rootfs), imagetest.DirLayerAt(t, repo, "testbed"))
	dir := t.TempDir()
	imagetest.WriteArchive(t, filepath.Join(dir, "calc.tar"), "swebench/sweb.eval.x86_64.fixture_1776_calc-1:latest", img)
	cat, err := image.OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := image.OpenStore(filepath.Join(imagetest.CacheDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultSWEOptions
	opts.Timeout, opts.DiskMB, opts.MemoryMB = 60*time.Second, 256, 2048
	inst := &swe.Instance{InstanceID: "fixture__calc-1", Repo: "fixture/calc", BaseCommit: base, TestPatch: testPatch,
		FailToPass: []string{"tests/test_ops.py::test_add"}, PassToPass: []string{"tests/test_ops.py::test_mul"},
		WorkDir: "/testbed", Install: &swe.InstallConfig{TestCmd: []string{"pytest -rA"}, LogParser: "parse_log_pytest"}}
	return &SWE{Local: l, Catalog: cat, Store: store, Opts: opts}, inst
}

func diffOf(file, old, new string) string {
	return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n" + hunk(old, new)
}

// hunk is a one-hunk diff replacing the whole of old with new.
func hunk(old, new string) string {
	o := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	n := strings.Split(strings.TrimSuffix(new, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -1,%d +1,%d @@\n", len(o), len(n))
	for _, l := range o {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range n {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// TestSWEOutcomes scores real patches against the fixture in its image,
// each outcome from a real run of git, patch and pytest.
func TestSWEOutcomes(t *testing.T) {
	s, inst := sweFixture(t)
	broken := strings.Replace(calcOps, "return a - b", "return a + b", 1)
	broken = strings.Replace(broken, "return a * b", "return a + b", 1)
	fuzzy := "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n     # adds a and b\n" +
		"-    return a - b\n+    return a + b\n"
	cheat := "def test_add():\n    pass\n\n\ndef test_mul():\n    pass\n"
	conftest := "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n" +
		"@@ -0,0 +1,6 @@\n+import pytest\n+\n+\n+@pytest.hookimpl(hookwrapper=True)\n" +
		"+def pytest_runtest_makereport(item, call):\n+    (yield).get_result().outcome = \"passed\"\n"
	for _, tt := range []struct {
		name, response, kind string
		flag, by             string
		timeout              time.Duration
	}{
		{name: "the fix", response: "```diff\n" + goldPatch + "```", kind: swe.Resolved, by: "git apply --verbose"},
		{name: "a wrong fix", response: diffOf("calc/ops.py", calcOps, strings.Replace(calcOps, "a - b", "a * b", 1)),
			kind: swe.TestsFailed},
		{name: "a fix that breaks a passing test", response: diffOf("calc/ops.py", calcOps, broken), kind: swe.TestsFailed},
		{name: "a patch that does not apply", response: diffOf("calc/ops.py", "def nothing():\n    pass\n", "x = 1\n"),
			kind: swe.PatchApplyFailed},
		{name: "a patch only patch --fuzz applies", response: fuzzy, kind: swe.Resolved, by: "patch --batch --fuzz=5"},
		{name: "a patch that edits the tests", response: diffOf("tests/test_ops.py", calcTests, cheat),
			kind: swe.TestsFailed, flag: swe.FlagTestFile},
		{name: "a patch that breaks collection",
			response: diffOf("calc/ops.py", calcOps, "def add(a, b)\n    return a + b\n"), kind: swe.TestsFailed},
		{name: "a hang", response: diffOf("calc/ops.py", calcOps,
			"def add(a, b):\n    while True:\n        pass\n\n\ndef mul(a, b):\n    return a * b\n"),
			kind: swe.Timeout, timeout: 8 * time.Second},
		{name: "a patch inside prose", response: "The bug is in add. Here is my change:\n\n" + goldPatch +
			"\nThis makes add return the sum.", kind: swe.Resolved},
		{name: "a conftest that passes every test", response: conftest, kind: swe.Resolved, flag: swe.FlagConftest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			patch, ok := swe.ExtractPatch(tt.response)
			if !ok {
				t.Fatal("no patch found")
			}
			plan, err := swe.PlanFor(inst, "")
			if err != nil {
				t.Fatal(err)
			}
			s := *s
			if tt.timeout > 0 {
				s.Opts.Timeout = tt.timeout
			}
			o := s.Evaluate(context.Background(), inst, plan, patch)
			if o.Kind != tt.kind {
				t.Errorf("%s (%s), want %s\napply:\n%s\nlog:\n%s", o.Kind, o.Why, tt.kind, o.ApplyOutput, o.Log)
			}
			if tt.by != "" && !strings.Contains(o.AppliedBy, tt.by) {
				t.Errorf("applied by %q, want %q", o.AppliedBy, tt.by)
			}
			if tt.flag != "" {
				found := false
				for _, f := range o.Flags {
					found = found || f.Kind == tt.flag
				}
				if !found {
					t.Errorf("flags %v, want %s", o.Flags, tt.flag)
				}
			}
		})
	}
}
