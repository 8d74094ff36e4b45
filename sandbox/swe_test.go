//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/swe"
)

// sweFixture is the SWE runner over an --images directory holding the
// fixture's image (the Debian base, the repository at /testbed) as a
// docker save archive.
func sweFixture(t *testing.T) (*swerun.Runner, *swe.Instance) {
	t.Helper()
	l := containedSandbox(t)
	calc := imagetest.CalcFixture(t)
	cat, err := image.OpenCatalog(imagetest.CalcImages(t))
	if err != nil {
		t.Fatal(err)
	}
	store, err := image.OpenStore(filepath.Join(imagetest.CacheDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	opts := swerun.DefaultOptions
	opts.Timeout, opts.DiskMB, opts.MemoryMB = 60*time.Second, 256, 2048
	gt := calc.Instance()
	gt["image"] = "fixture/calc-archive:1" // the docker save archive's name; run's tests read the layout
	inst, err := swe.ParseInstance(jsonRoundTrip(t, gt))
	if err != nil {
		t.Fatal(err)
	}
	return &swerun.Runner{Jail: l.j, Catalog: cat, Store: store, Opts: opts}, inst
}

// jsonRoundTrip is v as a ground truth read from JSON.
func jsonRoundTrip(t *testing.T, v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
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
	broken := strings.Replace(imagetest.CalcOps, "return a - b", "return a + b", 1)
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
		{name: "the fix", response: "```diff\n" + imagetest.CalcGoldPatch + "```", kind: swe.Resolved, by: "git apply --verbose"},
		{name: "a wrong fix", response: diffOf("calc/ops.py", imagetest.CalcOps, strings.Replace(imagetest.CalcOps, "a - b", "a * b", 1)),
			kind: swe.TestsFailed},
		{name: "a fix that breaks a passing test", response: diffOf("calc/ops.py", imagetest.CalcOps, broken), kind: swe.TestsFailed},
		{name: "a patch that does not apply", response: diffOf("calc/ops.py", "def nothing():\n    pass\n", "x = 1\n"),
			kind: swe.PatchApplyFailed},
		{name: "a patch only patch --fuzz applies", response: fuzzy, kind: swe.Resolved, by: "patch --batch --fuzz=5"},
		{name: "a patch that edits the tests", response: diffOf("tests/test_ops.py", imagetest.CalcTests, cheat),
			kind: swe.TestsFailed, flag: swe.FlagTestFile},
		{name: "a patch that breaks collection",
			response: diffOf("calc/ops.py", imagetest.CalcOps, "def add(a, b)\n    return a + b\n"), kind: swe.TestsFailed},
		{name: "a hang", response: diffOf("calc/ops.py", imagetest.CalcOps,
			"def add(a, b):\n    while True:\n        pass\n\n\ndef mul(a, b):\n    return a * b\n"),
			kind: swe.Timeout, timeout: 8 * time.Second},
		{name: "a patch inside prose", response: "The bug is in add. Here is my change:\n\n" + imagetest.CalcGoldPatch +
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
			run := &swerun.Runner{Jail: s.Jail, Catalog: s.Catalog, Store: s.Store, Opts: s.Opts}
			if tt.timeout > 0 {
				run.Opts.Timeout = tt.timeout
			}
			o := run.Evaluate(context.Background(), inst, plan, patch)
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

// TestSWEImageByPath: a row may name its image by path: an OCI layout
// directory, a docker save archive, or a plain root filesystem (imported
// into the store once). Each resolves the fixture with its fix.
func TestSWEImageByPath(t *testing.T) {
	s, inst := sweFixture(t)
	images := imagetest.CalcImages(t)
	for _, path := range []string{filepath.Join(images, "calc"), filepath.Join(images, "calc.tar"),
		imagetest.CalcRootfs(t)} {
		in := *inst
		in.Image = path
		plan, err := swe.PlanFor(&in, "")
		if err != nil {
			t.Fatal(err)
		}
		if o := s.Evaluate(context.Background(), &in, plan, imagetest.CalcGoldPatch); o.Kind != swe.Resolved {
			t.Errorf("%s: %s (%s)\n%s", path, o.Kind, o.Why, o.Log)
		}
	}
	in := *inst
	in.Image = "/nonexistent/image"
	plan, _ := swe.PlanFor(&in, "")
	if o := s.Evaluate(context.Background(), &in, plan, imagetest.CalcGoldPatch); o.Kind != swe.EnvironmentError ||
		!strings.Contains(o.Why, "/nonexistent/image") {
		t.Errorf("a missing path: %s (%s)", o.Kind, o.Why)
	}
}

// TestSWEDiskCap: a patch whose code writes 10 GB, into the repository,
// /tmp and /dev/shm in turn, meets the rollout's cap (--env-disk-mb) on
// each: the writes end in ENOSPC near the cap, the tests still run and the
// rollout gets its outcome, and the host's disks lose nothing (the upper
// is a tmpfs of the rollout's own, gone with it).
func TestSWEDiskCap(t *testing.T) {
	s, inst := sweFixture(t)
	s.Opts.DiskMB = 64
	writer := "import errno, os, sys\n\n\n" +
		"def fill():\n" +
		"    for path in (\"/testbed/big\", \"/tmp/big\", \"/dev/shm/big\"):\n" +
		"        n, err = 0, \"none\"\n" +
		"        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)\n" +
		"        try:\n" +
		"            for _ in range(10 << 10):\n" +
		"                os.write(fd, bytes(1 << 20))\n" +
		"                n += 1\n" +
		"        except OSError as e:\n" +
		"            err = errno.errorcode[e.errno]\n" +
		"        os.close(fd)\n" +
		"        os.remove(path)\n" +
		"        st = os.statvfs(os.path.dirname(path))\n" +
		"        os.write(1, b\"FS %s %d MB\\n\" % (path.encode(), st.f_blocks * st.f_frsize >> 20))\n" +
		"        os.write(1, b\"WROTE %s %d MB %s\\n\" % (path.encode(), n, err.encode()))\n\n\n" +
		"def add(a, b):\n    fill()\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
	patch := diffOf("calc/ops.py", imagetest.CalcOps, writer)
	plan, err := swe.PlanFor(inst, "")
	if err != nil {
		t.Fatal(err)
	}
	free := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, p := range []string{s.Store.Dir(), os.TempDir(), "/"} {
			var st syscall.Statfs_t
			if err := syscall.Statfs(p, &st); err != nil {
				t.Fatal(err)
			}
			m[p] = st.Bavail * uint64(st.Bsize)
		}
		return m
	}
	before := free()
	o := s.Evaluate(context.Background(), inst, plan, patch)
	after := free()
	if o.Kind != swe.Resolved {
		t.Errorf("%s (%s), want resolved: the tests run once the writes fail\n%s", o.Kind, o.Why, o.Log)
	}
	for _, path := range []string{"/testbed/big", "/tmp/big", "/dev/shm/big"} {
		m := regexp.MustCompile(`WROTE ` + regexp.QuoteMeta(path) + ` (\d+) MB (\w+)`).FindStringSubmatch(o.Log)
		if m == nil {
			t.Errorf("%s: no report of the write in the log\n%s", path, o.Log)
			continue
		}
		if mb, _ := strconv.Atoi(m[1]); m[2] != "ENOSPC" || mb > 64 || mb < 16 {
			t.Errorf("%s: wrote %s MB and ended with %s; want ENOSPC within the 64 MB cap", path, m[1], m[2])
		}
	}
	// The writes went to the rollout's own filesystem of the cap's size (a
	// tmpfs under the overlay), not the host's: each path's filesystem
	// holds 64 MB, where the host's disks hold GBs.
	for _, path := range []string{"/testbed/big", "/tmp/big", "/dev/shm/big"} {
		m := regexp.MustCompile(`FS ` + regexp.QuoteMeta(path) + ` (\d+) MB`).FindStringSubmatch(o.Log)
		if m == nil {
			t.Errorf("%s: no report of its filesystem in the log\n%s", path, o.Log)
			continue
		}
		if mb, _ := strconv.Atoi(m[1]); mb > 64 {
			t.Errorf("%s is on a filesystem of %d MB; want the rollout's 64 MB", path, mb)
		}
	}
	for p, b := range before {
		// Other tests (other packages run at once) write meanwhile: only a
		// loss the size of the rollout's writes would be its.
		if a := after[p]; a+150<<20 < b {
			t.Errorf("%s: %d MB free before the rollout, %d MB after", p, b>>20, a>>20)
		}
	}
}
