//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/swerun"
)

// baseImage is the test image (the calc fixture's: the Debian base with a
// repository at /testbed) unpacked into the tests' store.
func baseImage(t *testing.T) *image.Unpacked {
	t.Helper()
	cat, err := image.OpenCatalog(imagetest.CalcImages(t))
	if err != nil {
		t.Fatal(err)
	}
	store, err := image.OpenStore(filepath.Join(imagetest.CacheDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := cat.Find(imagetest.CalcRef)
	if err != nil {
		t.Fatal(err)
	}
	img, err := e.Open()
	if err != nil {
		t.Fatal(err)
	}
	u, err := store.Unpack(img, e.Names, e.Where, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func imageStep(u *image.Unpacked, script string) swerun.ImageStep {
	return swerun.ImageStep{
		Root:    jail.ImageRoot{Lower: u.Root, UpperMB: 64, IDBase: image.IDBase, IDRange: image.IDRange},
		Argv:    []string{"/bin/bash", "-c", script},
		Dir:     "/testbed",
		Env:     append([]string{"HOME=/root"}, u.Config.Env...),
		Timeout: 30 * time.Second, MemoryMB: 1024, Pids: 256, MergeStderr: true,
	}
}

// TestImageRoot runs real processes in an image's root: they see the
// image and none of the host, are root over the image's files and nothing
// else, have no network, write into a layer of their own that is capped
// and gone when the step ends, and leave the image as it was.
func TestImageRoot(t *testing.T) {
	l := containedSandbox(t)
	u := baseImage(t)
	marker := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(marker, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := `set -u
echo "uid=$(id -u) gid=$(id -g)"
cat /etc/debian_version >/dev/null && echo debian
python3 -c 'import pytest, sys; print("pytest", pytest.__version__)'
git --version | cut -d' ' -f1-2
cat calc/ops.py | head -1
test -e ` + marker + ` && echo HOST-VISIBLE || echo host-hidden
test -e /work && echo WORK-VISIBLE || echo no-work
ls /proc | grep -E '^[0-9]+$' | wc -l | sed 's/^/procs=/'
python3 -c '
import socket
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("1.1.1.1", 80)); print("NETWORK")
except OSError as e:
    print("no-network", e.errno)
'
echo patched > /testbed/new.txt && cat /testbed/new.txt
echo x > /etc/written && echo etc-writable
touch /proc/sysrq-trigger 2>/dev/null && echo SYSRQ || echo proc-safe
mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED || echo no-mount
dd if=/dev/zero of=/testbed/big bs=1M count=200 2>&1 | grep -o 'No space left on device'
df -m / | tail -1 | awk '{print "root-size", $2}'
`
	res, err := swerun.RunInImage(context.Background(), l.j, imageStep(u, probe))
	if err != nil {
		t.Fatal(err)
	}
	out := res.Stdout
	t.Logf("%s", out)
	for _, want := range []string{"uid=0 gid=0", "debian", "pytest 7.", "git version", "def add(a, b):", "host-hidden",
		"no-work", "no-network", "patched", "etc-writable", "proc-safe", "no-mount", "No space left on device"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the output", want)
		}
	}
	for _, bad := range []string{"HOST-VISIBLE", "WORK-VISIBLE", "NETWORK", "SYSRQ", "MOUNTED"} {
		if strings.Contains(out, bad+"\n") {
			t.Errorf("%s", bad)
		}
	}
	if !strings.Contains(out, "procs=") || strings.Contains(out, "procs=0") {
		t.Errorf("no process count")
	} else if n := strings.SplitN(strings.SplitN(out, "procs=", 2)[1], "\n", 2)[0]; len(n) > 1 {
		t.Errorf("the step sees %s processes: not its own alone", n)
	}
	// the image is as it was, and the next step starts from it
	if _, err := os.Stat(filepath.Join(u.Root, "testbed/new.txt")); !os.IsNotExist(err) {
		t.Errorf("the step wrote into the image: %v", err)
	}
	res, err = swerun.RunInImage(context.Background(), l.j, imageStep(u, "ls /testbed; test -e /etc/written && echo LEFT"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "new.txt") || strings.Contains(res.Stdout, "LEFT") {
		t.Errorf("a step saw the last one's writes: %s", res.Stdout)
	}
	// no mount of the step's is left on the host
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), u.Root) {
		t.Errorf("an overlay over the image is still mounted on the host")
	}
}
