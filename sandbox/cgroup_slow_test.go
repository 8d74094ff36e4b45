//go:build slowlangs && linux

package sandbox

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandboxclient"
)

// A run's processes together are bounded: many processes of 400 MiB each,
// each under the per-process limit, cannot together take more than the
// run's bound; the run ends (killed) rather than the host running short.
func TestSlowRunMemoryBoundedAsAWhole(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: cgroups per run need root")
	}
	l := newLocal(t, Options{Concurrency: 1})
	if using, why := l.j.Cgroups != nil, l.cgroupNote; !using {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cgroup per run on a CI machine: %s", why)
		}
		t.Skipf("SKIPPED: no cgroup per run here: %s", why)
	}
	needTools(t, l, "python")
	// 16 × 400 MiB touched = 6.4 GiB > the 4 GiB bound of a 1 GiB run.
	code := `import os, time
kids = []
for i in range(16):
    pid = os.fork()
    if pid == 0:
        b = b"\x01" * (400 << 20)
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
bad = 0
for k in kids:
    _, st = os.waitpid(k, 0)
    bad += st != 0
print("killed", bad)`
	resp, err := l.Run(
		context.Background(),
		&sandboxclient.Request{Language: "python", Code: code, RunTimeout: 30, MemoryLimitMB: 1024},
	)
	if err != nil || resp.RunResult == nil {
		t.Fatalf("%s", respText(resp, err))
	}
	out := resp.RunResult.Stdout
	if out == "killed 0\n" {
		t.Fatalf(
			"16 processes of 400 MiB all lived in a run bounded at %d MiB",
			jail.RunMemoryBytes(jail.Limits{AddressMB: 1024})>>20,
		)
	}
	t.Logf("%s (rc %v, %s)", strings.TrimSpace(out), fmtRC(resp.RunResult.ReturnCode), resp.RunResult.Status)
}
