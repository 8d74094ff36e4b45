//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestImageRootContainment runs the containment tests' probes inside an
// image's root: a world-readable host file and a world-connectable host
// socket are out of reach, a SysV segment is gone with its step, a fork
// bomb meets the step's process bound and takes no host process with it,
// and kill(-1) reaches only the step's own processes.
func TestImageRootContainment(t *testing.T) {
	l := containedSandbox(t)
	u := baseImage(t)
	src, err := filepath.Abs("containment_test.go")
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "verl-score-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	_ = os.Chmod(sockDir, 0o777)
	sock := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_ = os.Chmod(sock, 0o777)
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	// a host process the step must not reach
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer bystander.Process.Kill()
	probe := fmt.Sprintf(`
import ctypes, os, signal, socket, subprocess
try:
    print(open(%q).read()[:10]); print("HOST-FILE")
except OSError:
    print("file-denied")
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%q); print("HOST-SOCKET")
except OSError:
    print("socket-denied")
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
print("segment" if libc.shmget(0x5e5e, 1 << 20, 0o1000 | 0o666) >= 0 else "no-segment")
try:
    os.kill(%d, signal.SIGKILL); print("KILLED-HOST")
except OSError:
    print("host-pid-unreachable")
r = subprocess.run(["bash", "-c", "for i in $(seq 400); do sleep 5 & done 2>&1 | tail -1; wait"],
                   capture_output=True, text=True, timeout=20)
print("bomb-bounded" if "fork" in (r.stdout + r.stderr) or "Resource" in (r.stdout + r.stderr) else "BOMB-UNBOUNDED")
`, src, sock, bystander.Process.Pid)
	st := imageStep(u, "python3 -c '"+strings.ReplaceAll(probe, "'", `'\''`)+"'; kill -9 -1; echo after-kill")
	st.Pids = 64
	res, err := swerun.RunInImage(context.Background(), l.j, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"file-denied", "socket-denied", "segment", "host-pid-unreachable", "bomb-bounded"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q in:\n%s", want, res.Stdout)
		}
	}
	for _, bad := range []string{"HOST-FILE", "HOST-SOCKET", "KILLED-HOST", "BOMB-UNBOUNDED"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("%s:\n%s", bad, res.Stdout)
		}
	}
	select {
	case <-accepted:
		t.Error("the host's socket accepted a connection from the image's root")
	case <-time.After(50 * time.Millisecond):
	}
	if bystander.ProcessState != nil || syscall.Kill(bystander.Process.Pid, 0) != nil {
		t.Error("the host's process is gone")
	}
	// the segment went with the step: the next step finds none
	look := imageStep(u, `python3 -c 'import ctypes; l = ctypes.CDLL(None); print("FOUND" if l.shmget(0x5e5e, 0, 0) >= 0 else "gone")'`)
	res, err = swerun.RunInImage(context.Background(), l.j, look)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "gone") {
		t.Errorf("the next step: %s", res.Stdout)
	}
	if out, _ := exec.Command("ipcs", "-m").Output(); strings.Contains(string(out), "0x00005e5e") {
		t.Errorf("the segment is on the host:\n%s", out)
	}
}
