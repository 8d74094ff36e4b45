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
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
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

// Calc is the fixture: its repository's base commit, and its image (the
// Debian base, the repository at /testbed).
type Calc struct {
	BaseCommit string
	rootfs     string
}

// Image is the fixture's image. Its layers' digests take seconds to
// compute (the base is hundreds of MB): tests read CalcImages instead.
func (c *Calc) Image(t testing.TB) v1.Image {
	return Image(t, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}, "/testbed",
		DirLayer(t, c.rootfs), DirLayerAt(t, calcRepo, "testbed"))
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
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
			{"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"}, {"gc", "-q"}} {
			cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
			// the same commit every time: its image is built once per machine
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
				"GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
			if out, err := cmd.CombinedOutput(); err != nil {
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
	return &Calc{BaseCommit: calcBase, rootfs: rootfs}
}

// CalcImages is an --images directory holding the fixture's image as an
// OCI layout named CalcRef, and as a docker save archive beside it, written
// once per machine into the cache (an image of the base takes seconds to
// compress): tests read it, never write it.
func CalcImages(t testing.TB) string {
	t.Helper()
	c := CalcFixture(t)
	// the commit is the same every time (fixed dates), so it names the
	// repository's contents
	dir := filepath.Join(CacheDir(), "images-"+recipe+"-"+c.BaseCommit[:12])
	if _, err := os.Stat(filepath.Join(dir, "calc.tar")); err == nil {
		return dir
	}
	unlock := lockCache(t, "images")
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "calc.tar")); err == nil {
		return dir // another test process wrote it meanwhile
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	p, err := layout.Write(filepath.Join(tmp, "calc"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img := c.Image(t)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": CalcRef})); err != nil {
		t.Fatal(err)
	}
	// the archive from the layout's image: its layers compressed already
	h, _ := img.Digest()
	li, err := p.Image(h)
	if err != nil {
		t.Fatal(err)
	}
	WriteArchive(t, filepath.Join(tmp, "calc.tar"), "fixture/calc-archive:1", li)
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
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

// CalcRootfs is the fixture as a plain root filesystem directory (the base
// with the repository at /testbed), made once per machine in the cache.
func CalcRootfs(t testing.TB) string {
	t.Helper()
	c := CalcFixture(t)
	dir := filepath.Join(CacheDir(), "rootfs-"+recipe+"-"+c.BaseCommit[:12])
	if _, err := os.Stat(filepath.Join(dir, "testbed", "calc")); err == nil {
		return dir
	}
	unlock := lockCache(t, "rootfs")
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "testbed", "calc")); err == nil {
		return dir
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	for _, args := range [][]string{{"-a", c.rootfs, tmp}, {"-a", calcRepo, filepath.Join(tmp, "testbed")}} {
		if out, err := exec.Command("cp", args...).CombinedOutput(); err != nil {
			t.Fatalf("cp %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
