package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// deadPid returns the id of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if ProcessAlive(pid) {
		t.Skipf("pid %d was reused at once", pid)
	}
	return pid
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestCommitReplacesWholeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.WriteString("new\n")
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatalf("before Commit the path holds %q", b)
	}
	if got := names(t, dir); len(got) != 2 {
		t.Fatalf("directory holds %q, want the path and one temporary file", got)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new\n" || st.Mode().Perm() != 0o644 {
		t.Fatalf("after Commit: %q mode %v", b, st.Mode().Perm())
	}
	if got := names(t, dir); len(got) != 1 {
		t.Fatalf("temporary file left: %q", got)
	}
	if err := a.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
}

// CommitOpen publishes the whole file and leaves it open: what is appended
// afterwards lands in the file at the path.
func TestCommitOpenKeepsAppending(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.journal")
	if err := os.WriteFile(path, []byte("old journal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.WriteString("header\n")
	f, err := a.CommitOpen()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "header\n" {
		t.Fatalf("after CommitOpen the path holds %q", b)
	}
	if _, err := f.WriteString("row 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "header\nrow 1\n" {
		t.Fatalf("appended after CommitOpen: %q", b)
	}
	if got := names(t, dir); len(got) != 1 {
		t.Fatalf("temporary file left: %q", got)
	}
	if err := a.Commit(); err == nil {
		t.Error("Commit after CommitOpen succeeded")
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	a, err := Create(filepath.Join(dir, "out.parquet"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.WriteString("partial")
	if err := a.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("left %q", got)
	}
}

func TestCleanStaleRemovesOnlyDeadWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	dead := strconv.Itoa(deadPid(t))
	live := strconv.Itoa(os.Getpid())
	for _, n := range []string{
		"out.jsonl.tmp-" + dead + "-123", // killed writer: goes
		"out.jsonl.tmp-" + live + "-456", // this process: stays
		"out.jsonl.tmp-abc",              // not ours: stays
		"other.jsonl.tmp-" + dead + "-1", // another output: stays
		"out.jsonl",                      // the output: stays
	} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed := CleanStale(path)
	if len(removed) != 1 || filepath.Base(removed[0]) != "out.jsonl.tmp-"+dead+"-123" {
		t.Fatalf("removed %q", removed)
	}
	want := []string{"other.jsonl.tmp-" + dead + "-1", "out.jsonl", "out.jsonl.tmp-" + live + "-456", "out.jsonl.tmp-abc"}
	sort.Strings(want)
	got := names(t, dir)
	if len(got) != len(want) {
		t.Fatalf("left %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("left %q, want %q", got, want)
		}
	}
}
