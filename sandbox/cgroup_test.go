//go:build linux

package sandbox

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Every way a step starts (the fork server, the contained init, the plain
// wrapper of isolation basic, a compile) puts its program in a group of
// its own under the sandbox's, and the group's CPU time reaches the result.
func TestStepsRunInACgroupOfTheirOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: cgroups per run need root")
	}
	probe := func(t *testing.T, l *Local) {
		if using, why := l.j.Cgroups != nil, l.cgroupNote; !using {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no cgroup per run on a CI machine: %s", why)
			}
			t.Skipf("SKIPPED: no cgroup per run here: %s", why)
		}
	}
	want := "/verl-score-" + strconv.Itoa(os.Getpid()) + "/run-"
	cases := []struct {
		name, lang, code string
		iso              IsolationMode
		noFast           bool
	}{
		{
			"forked python",
			"python",
			"import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint(open('/proc/self/cgroup').read())",
			IsolationAuto,
			false,
		},
		{
			"contained python",
			"python",
			"import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint(open('/proc/self/cgroup').read())",
			IsolationAuto,
			true,
		},
		{
			"basic bash",
			"bash",
			"i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; cat /proc/self/cgroup",
			IsolationBasic,
			true,
		},
		{
			"compiled cpp",
			"cpp",
			"#include <bits/stdc++.h>\nint main(){ volatile long x=0; for(long i=0;i<1500000000;i++) x+=i; std::ifstream f(\"/proc/self/cgroup\"); std::cout << f.rdbuf(); }",
			IsolationAuto,
			true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLocal(t, Options{Isolation: c.iso, NoFastPaths: c.noFast, Concurrency: 2})
			probe(t, l)
			needTools(t, l, c.lang)
			resp, err := l.Run(
				context.Background(),
				&sandboxclient.Request{Language: c.lang, Code: c.code, RunTimeout: 20, CompileTimeout: 60, MemoryLimitMB: 1024},
			)
			if err != nil || resp.RunResult == nil {
				t.Fatalf("%s", respText(resp, err))
			}
			out := resp.RunResult.Stdout
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				// Every hierarchy the sandbox uses holds the program in a run's group.
				for _, ctrl := range []string{"cpu", "memory", "pids"} {
					parts := strings.SplitN(line, ":", 3)
					if len(parts) == 3 && (parts[1] == ctrl || (parts[1] == "" && parts[2] != "/")) &&
						!strings.Contains(parts[2], want) {
						t.Errorf("%s: the program is in %q, not a run's group (%s…)", ctrl, parts[2], want)
					}
				}
			}
			if !strings.Contains(out, want) {
				t.Fatalf("no run group in the program's /proc/self/cgroup:\n%s", out)
			}
			if resp.RunResult.CPUTime < 0.1 {
				t.Errorf("run CPU time %.3f s for a program that spins 0.3 s or more", resp.RunResult.CPUTime)
			}
			if c.lang == "cpp" && resp.CompileResult != nil && resp.CompileResult.CPUTime <= 0 {
				t.Errorf("no CPU time for the compile")
			}
		})
	}
}
