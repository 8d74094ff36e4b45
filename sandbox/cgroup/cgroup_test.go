//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manager makes a real group, or skips (loudly; under CI=true it fails
// where CI's machines have cgroups and root).
func manager(t *testing.T) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: cgroups need root here")
	}
	m, err := New(2)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cgroup on a CI machine: %v", err)
		}
		t.Skipf("SKIPPED: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m
}

// start runs a shell that joins the group through its join files (as a
// run's first process does) and then runs script.
func start(t *testing.T, r *Run, script string) *exec.Cmd {
	t.Helper()
	var join strings.Builder
	for i := range r.JoinFiles() {
		join.WriteString("echo 0 >&" + strconv.Itoa(3+i) + " && ")
	}
	c := exec.Command("/bin/sh", "-c", join.String()+"{ "+script+"\n}")
	c.ExtraFiles = r.JoinFiles()
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunGroupCountsCPUAndKillsEverything(t *testing.T) {
	m := manager(t)
	lim := Limits{Pids: 64}
	t.Log(m.Describe())
	r, err := m.Get(lim)
	if err != nil {
		t.Fatal(err)
	}
	// A child that leaves its process group and a busy loop: both in the
	// group, both ended by Kill.
	c := start(t, r, "setsid sh -c 'sleep 1000' & while :; do :; done")
	time.Sleep(700 * time.Millisecond)
	if n := len(r.Pids()); n < 2 {
		t.Fatalf("%d processes in the run's group, want the shell and sleep", n)
	}
	if m.Has("cpuacct") || m.v2 {
		if cpu := r.CPU(); cpu < 100*time.Millisecond {
			t.Errorf("CPU %v after 0.7 s of a busy loop", cpu)
		}
	}
	if !r.Kill() {
		t.Fatal("the group did not empty")
	}
	c.Wait()
	if n := len(r.Pids()); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	m.Put(r)
	// The same group comes back, its CPU counted from zero again.
	r2, err := m.Get(lim)
	if err != nil {
		t.Fatal(err)
	}
	if r2 != r {
		t.Error("a freed group was not reused")
	}
	if cpu := r2.CPU(); cpu > 50*time.Millisecond {
		t.Errorf("a reused group starts at %v of CPU", cpu)
	}
	m.Put(r2)
}

func TestRunGroupBoundsProcesses(t *testing.T) {
	m := manager(t)
	lim := Limits{Pids: 8}
	if !m.Has("pids") {
		t.Skip("SKIPPED: no pids controller here")
	}
	r, err := m.Get(lim)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Put(r)
	out, _ := os.CreateTemp(t.TempDir(), "out")
	c := start(t, r, `n=0; for i in $(seq 30); do sleep 5 & n=$((n+1)); done 2>/dev/null; echo started; wait`)
	c.Stdout = out
	time.Sleep(time.Second)
	if n := len(r.Pids()); n > 8 {
		t.Errorf("%d processes in a group bounded at 8", n)
	}
	r.Kill()
	c.Wait()
}

func TestRunGroupBoundsMemory(t *testing.T) {
	m := manager(t)
	lim := Limits{MemoryBytes: 64 << 20}
	if !m.Has("memory") {
		t.Skip("SKIPPED: no memory controller here")
	}
	r, err := m.Get(lim)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Put(r)
	// Two processes of 48 MiB each: each under the bound alone, not both.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("SKIPPED: no " + py)
	}
	prog := `import time; b = bytearray(48 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(3)`
	c := start(t, r, py+" -c '"+prog+"' & "+py+" -c '"+prog+"' & wait")
	_ = c.Wait()
	if fails := memoryFailures(r); fails == 0 {
		t.Errorf("two 48 MiB processes in a 64 MiB group: the bound never hit")
	}
}

// memoryFailures is how often the group's memory bound was hit.
func memoryFailures(r *Run) int {
	for _, d := range r.dirs {
		if r.m.v2 {
			for _, line := range strings.Split(readString(filepath.Join(d, "memory.events")), "\n") {
				if v, ok := strings.CutPrefix(line, "max "); ok {
					n, _ := strconv.Atoi(v)
					return n
				}
			}
			continue
		}
		if s := readString(filepath.Join(d, "memory.failcnt")); s != "" {
			n, _ := strconv.Atoi(strings.TrimSpace(s))
			return n
		}
	}
	return 0
}

// A made-up host: the mount table and group files of a v1 host with cpu
// and cpuacct mounted together, and of a container's v2 mount.
func TestReadMountsAndOwnGroups(t *testing.T) {
	dir := t.TempDir()
	mi := filepath.Join(dir, "mountinfo")
	os.WriteFile(mi, []byte(`30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 /kubepods/pod1 /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:37 / /sys/fs/cgroup/unified\040dir rw,relatime - cgroup2 cgroup2 rw
`), 0o644)
	mounts, err := readMounts(mi)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 || strings.Join(mounts[0].ctrls, ",") != "cpu,cpuacct" || !mounts[2].v2 ||
		mounts[2].point != "/sys/fs/cgroup/unified dir" {
		t.Fatalf("mounts %+v", mounts)
	}
	cg := filepath.Join(dir, "cgroup")
	os.WriteFile(cg, []byte("4:memory:/kubepods/pod1/c1\n2:cpu,cpuacct:/\n0::/user.slice\n"), 0o644)
	own, err := readOwn(cg)
	if err != nil {
		t.Fatal(err)
	}
	if own["memory"] != "/kubepods/pod1/c1" || own["cpuacct"] != "/" || own[""] != "/user.slice" {
		t.Fatalf("own %v", own)
	}
	// A group under a mount of a subtree: the subtree's root is cut off.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "c1"), 0o755)
	if d, ok := within(mount{point: root, root: "/kubepods/pod1"}, "/kubepods/pod1/c1"); !ok ||
		d != filepath.Join(root, "c1") {
		t.Errorf("within: %q %v", d, ok)
	}
	if _, ok := within(mount{point: root, root: "/kubepods/pod1"}, "/other/c1"); ok {
		t.Error("a group outside the mount's subtree was found under it")
	}
}

// TestReusedGroupTakesEachRunsBounds: a group handed out again keeps the
// bounds it had unless the next run's differ, and then has the new ones.
func TestReusedGroupTakesEachRunsBounds(t *testing.T) {
	m := manager(t)
	bounds := func(r *Run) (mem, pids string) {
		if d, ok := r.dir["memory"]; ok {
			name := "memory.max"
			if !m.v2 {
				name = "memory.limit_in_bytes"
			}
			mem = strings.TrimSpace(readString(filepath.Join(d, name)))
		}
		if d, ok := r.dir["pids"]; ok {
			pids = strings.TrimSpace(readString(filepath.Join(d, "pids.max")))
		}
		return mem, pids
	}
	var first *Run
	for i, lim := range []Limits{{MemoryBytes: 64 << 20, Pids: 32}, {MemoryBytes: 64 << 20, Pids: 32},
		{MemoryBytes: 128 << 20, Pids: 48}, {MemoryBytes: 64 << 20, Pids: 32}} {
		r, err := m.Get(lim)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r
		} else if r != first {
			t.Fatalf("run %d got another group", i)
		}
		mem, pids := bounds(r)
		if _, ok := r.dir["memory"]; ok && mem != strconv.FormatInt(lim.MemoryBytes, 10) {
			t.Errorf("run %d: memory bound %s, want %d", i, mem, lim.MemoryBytes)
		}
		if _, ok := r.dir["pids"]; ok && pids != strconv.Itoa(lim.Pids) {
			t.Errorf("run %d: process bound %s, want %d", i, pids, lim.Pids)
		}
		m.Put(r)
	}
}

// TestManagersOfOneProcessKeepTheirGroups: every Manager of a process has
// its group at the same place; one's Close must leave another's pooled
// groups alive, so that a run can still join the one it is handed.
func TestManagersOfOneProcessKeepTheirGroups(t *testing.T) {
	a := manager(t)
	b, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := a.Get(Limits{Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	a.Put(ra)
	rb, err := b.Get(Limits{Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	b.Put(rb)
	b.Close() // its own groups go (the shared place stays: a's are in it)
	again, err := a.Get(Limits{Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	if again != ra {
		t.Fatal("the pooled group was not handed out again")
	}
	if err := start(t, again, "exit 0").Wait(); err != nil {
		t.Fatalf("a run could not join its group after another Manager closed: %v", err)
	}
	a.Put(again)
}
