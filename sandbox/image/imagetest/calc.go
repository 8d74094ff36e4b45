//go:build linux

package imagetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The calc fixture: a repository task written for the tests. The package
// has a bug in add; a test of mul passes throughout; the test patch adds
// the test of add, which the gold patch makes pass.
const (
	CalcOps       = "def add(a, b):\n    # the sum of a and b\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
	CalcTests     = "from calc.ops import add, mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"
	CalcTestPatch = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n" +
		"+++ b/tests/test_ops.py\n@@ -3,3 +3,7 @@ from calc.ops import add, mul\n \n def test_mul():\n" +
		"     assert mul(3, 4) == 12\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n"
	CalcGoldPatch = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,6 +1,6 @@\n" +
		" def add(a, b):\n     # the sum of a and b\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n"
	// CalcRef is the fixture image's name, SWE-bench's for the instance
	// fixture__calc-1.
	CalcRef = "swebench/sweb.eval.x86_64.fixture_1776_calc-1:latest"
)

// Calc is the fixture: its image (the Debian base, the repository at
// /testbed) and the repository's base commit.
type Calc struct {
	Image      v1.Image
	BaseCommit string
}

var (
	calcOnce sync.Once
	calcRepo string
	calcBase string
	calcErr  string
)

// CalcFixture builds the fixture's repository with git (once per process)
// and its image.
func CalcFixture(t testing.TB) *Calc {
	t.Helper()
	rootfs := BaseRootfs(t)
	calcOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verl-score-calc-")
		if err != nil {
			calcErr = err.Error()
			return
		}
		files := map[string]string{"calc/__init__.py": "", "calc/ops.py": CalcOps, "tests/test_ops.py": CalcTests,
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
	img := Image(t, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}, "/testbed",
		DirLayer(t, rootfs), DirLayerAt(t, calcRepo, "testbed"))
	return &Calc{Image: img, BaseCommit: calcBase}
}

// Instance is the fixture's SWE instance as a ground truth (SWE-bench's
// field names), evaluated with SWE-rebench's install_config.
func (c *Calc) Instance() map[string]any {
	return map[string]any{
		"instance_id": "fixture__calc-1", "repo": "fixture/calc", "base_commit": c.BaseCommit,
		"test_patch": CalcTestPatch, "version": "1.0",
		"FAIL_TO_PASS": `["tests/test_ops.py::test_add"]`, "PASS_TO_PASS": []string{"tests/test_ops.py::test_mul"},
		"install_config": map[string]any{"test_cmd": "pytest -rA", "log_parser": "parse_log_pytest"},
	}
}
