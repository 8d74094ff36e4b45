//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
)

// sweDataset writes a dataset of the calc fixture's rollouts (verl rows,
// the instance as a JSON-string ground truth) and an --images directory
// holding its image as an OCI layout.
func sweDataset(t *testing.T, rows [][]string, truth func(map[string]any)) (in, images string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the SWE tests need root")
		}
		t.Skip("SKIPPED LOUDLY: the SWE tests need root")
	}
	calc := imagetest.CalcFixture(t)
	images = imagetest.CalcImages(t)
	inst := calc.Instance()
	if truth != nil {
		truth(inst)
	}
	gt, _ := json.Marshal(inst)
	var b strings.Builder
	for _, responses := range rows {
		row, _ := json.Marshal(map[string]any{"data_source": "swe-fixture", "responses": responses,
			"reward_model": map[string]any{"ground_truth": string(gt)}})
		b.Write(row)
		b.WriteByte('\n')
	}
	in = writeFile(t, t.TempDir(), "swe.jsonl", b.String())
	return in, images
}

func readJSONL(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRunScoresSWERows: run on SWE rows with the embedded sandbox, end to
// end: the rewards (resolved 1, else 0), the verdict per test, the
// outcomes in the cases, a resume that redoes nothing, and check, show and
// report on the output.
func TestRunScoresSWERows(t *testing.T) {
	wrong := strings.Replace(imagetest.CalcGoldPatch, "+    return a + b", "+    return a * b", 1)
	in, images := sweDataset(t, [][]string{
		{"```diff\n" + imagetest.CalcGoldPatch + "```", "```diff\n" + wrong + "```", "I cannot fix this."},
		{"Here:\n" + imagetest.CalcGoldPatch},
	}, nil)
	dir := t.TempDir()
	out, cases := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "cases.jsonl")
	code, stdout, stderr := run(context.Background(), "run", in, "-o", out, "--cases-out", cases, "--images", images,
		"--image-store", filepath.Join(imagetest.CacheDir(), "store"))
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	// the summary counts the outcomes apart
	if !strings.Contains(stdout+stderr, "repository tasks (SWE-bench 4.1.0 rules): resolved 2, tests failed 1, patch missing 1") {
		t.Errorf("the summary does not count the outcomes:\n%s\n%s", stdout, stderr)
	}
	rows := readJSONL(t, out)
	want := [][]float64{{1, 0, 0}, {1}}
	for i, r := range rows {
		got, _ := json.Marshal(r["reward"])
		w, _ := json.Marshal(want[i])
		if string(got) != string(w) {
			t.Errorf("row %d: rewards %s, want %s (case_results %v, errors %v)", i, got, w, r["case_results"],
				r["reward_error"])
		}
	}
	if got, _ := json.Marshal(rows[0]["case_results"]); string(got) != "[[true,true],[false,true],[false,false]]" {
		t.Errorf("case_results %s", got)
	}
	if got, _ := json.Marshal(rows[0]["case_status"]); !strings.Contains(string(got), "patch_missing") ||
		!strings.Contains(string(got), "swe_passed") {
		t.Errorf("case_status %s", got)
	}
	if errs, _ := json.Marshal(rows[0]["reward_error"]); !strings.Contains(string(errs), "patch_missing") {
		t.Errorf("reward_error %s", errs)
	}
	cs := readJSONL(t, cases)
	if sw, ok := cs[1]["swe"].(map[string]any); !ok || sw["outcome"] != "resolved" || sw["f2p_passed"] != 1.0 ||
		sw["patch_applied"] != true {
		t.Errorf("the first case of the first response lacks its outcome: %v", cs[1])
	}
	var sawTest bool
	for _, c := range cs[1:] {
		if c["input"] == "tests/test_ops.py::test_add" && c["expected_output"] == "FAIL_TO_PASS" {
			sawTest = true
		}
	}
	if !sawTest {
		t.Errorf("the cases do not name the tests: %v", cs[1])
	}
	// show, check and report read it
	code, shown, stderr := run(context.Background(), "show", out, "--cases", cases)
	if code != ExitOK {
		t.Errorf("show: exit %d\n%s\n%s", code, shown, stderr)
	}
	for _, want := range []string{"test_add", "fixture__calc-1: resolved · SWE-bench 4.1.0 rules · applied by git apply",
		"FAIL_TO_PASS 1/1 · PASS_TO_PASS 1/1 · test command exit 0", "fixture__calc-1: tests failed", "patch missing",
		"test log (its end):"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %q:\n%s", want, shown)
		}
	}
	if code, _, stderr := run(context.Background(), "report", out, "--cases", cases, "-o",
		filepath.Join(dir, "r.html")); code != ExitOK {
		t.Errorf("report: exit %d\n%s", code, stderr)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	// the page's details of each response show its outcome and its log's end
	for _, want := range []string{"repository tasks", `swe_outcomes.resolved">2<`, `swe_outcomes.tests_failed">1<`,
		`swe_outcomes.patch_missing">1<`, `"head":"fixture__calc-1: resolved · SWE-bench 4.1.0 rules · applied by git apply`,
		`"head":"fixture__calc-1: tests failed`, `"head":"fixture__calc-1: patch missing`,
		`"log":"`, `FAILED tests/test_ops.py::test_add`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if code, stdout, stderr := run(context.Background(), "check", in, "--baseline", out, "-q", "--images", images, "--image-store",
		filepath.Join(imagetest.CacheDir(), "store")); code != ExitOK {
		t.Errorf("check: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestSWEEnvironmentErrorIsNotTheModels: an image that is not there is an
// infrastructure error (-1, reward_error naming the image), not a 0.
func TestSWEEnvironmentErrorIsNotTheModels(t *testing.T) {
	in, images := sweDataset(t, [][]string{{imagetest.CalcGoldPatch}}, func(m map[string]any) {
		m["image"] = "registry.example/nowhere:1"
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, _, stderr := run(context.Background(), "run", in, "-o", out, "-q", "--images", images, "--image-store",
		filepath.Join(imagetest.CacheDir(), "store"), "--pull", "never")
	if code == ExitOK {
		t.Errorf("every response an infrastructure error, and run exits 0")
	}
	rows := readJSONL(t, out)
	cr, _ := json.Marshal(rows[0]["case_results"])
	if string(cr) != "[[-1,-1]]" || !strings.Contains(stderr, "registry.example/nowhere:1") ||
		!strings.Contains(stderr, "environment_error") || !strings.Contains(stderr, "infrastructure") {
		t.Errorf("case_results %s\n%s", cr, stderr)
	}
}

// TestSWEShardsMergeAndResume: SWE rows sharded and merged give the
// unsharded output byte for byte; a run stopped after its first row
// resumes without running that row again and ends with the same output.
func TestSWEShardsMergeAndResume(t *testing.T) {
	wrong := strings.Replace(imagetest.CalcGoldPatch, "+    return a + b", "+    return a * b", 1)
	in, images := sweDataset(t, [][]string{
		{imagetest.CalcGoldPatch}, {wrong}, {"no patch here"}, {"```diff\n" + imagetest.CalcGoldPatch + "```"},
	}, nil)
	store := filepath.Join(imagetest.CacheDir(), "store")
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.jsonl")
	if code, _, stderr := run(context.Background(), "run", in, "-o", whole, "-q", "--images", images,
		"--image-store", store); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	var outs []string
	for k := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", k))
		if code, _, stderr := run(context.Background(), "run", in, "-o", out, "-q", "--shard", fmt.Sprintf("%d/2", k),
			"--images", images, "--image-store", store); code != ExitOK {
			t.Fatalf("shard %d: exit %d\n%s", k, code, stderr)
		}
		outs = append(outs, out)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	if code, _, stderr := run(context.Background(), "merge", merged, outs[1], outs[0]); code != ExitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(merged)
	if !bytes.Equal(a, b) {
		t.Errorf("merged shards differ from the whole run:\n%s\n%s", a, b)
	}
	// stopped once the first row is in the journal
	out := filepath.Join(dir, "stopped.jsonl")
	interrupt := make(chan struct{})
	go func() {
		for {
			if j, err := os.ReadFile(out + ".journal"); err == nil && bytes.Count(j, []byte("\n")) >= 2 {
				close(interrupt)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var errb bytes.Buffer
	code := Run(context.Background(), []string{"run", in, "-o", out, "-q", "--images", images, "--image-store", store,
		"--local-concurrency", "1", "--max-concurrent", "1"},
		Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errb, Interrupt: interrupt})
	if code != ExitInterrupted {
		t.Fatalf("stopped run: exit %d\n%s", code, errb.String())
	}
	sumPath := filepath.Join(dir, "summary.json")
	code, _, stderr := run(context.Background(), "run", in, "-o", out, "--resume", "-q", "--images", images,
		"--image-store", store, "--summary", sumPath)
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	c, _ := os.ReadFile(out)
	if !bytes.Equal(a, c) {
		t.Errorf("the resumed output differs from the whole run's:\n%s\n%s", a, c)
	}
	var sum struct {
		Resumed int `json:"rows_resumed"`
	}
	sb, _ := os.ReadFile(sumPath)
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	// the rows the stopped run finished are taken from the journal, not run
	if sum.Resumed < 1 || sum.Resumed > 3 {
		t.Errorf("resumed %d rows: %s", sum.Resumed, sb)
	}
}

// TestSWEAuditFail: a conftest.py that passes every test is resolved under
// SWE-bench's rules (reward 1, flagged); --audit --audit-fail scores it 0.
func TestSWEAuditFail(t *testing.T) {
	conftest := "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n" +
		"@@ -0,0 +1,6 @@\n+import pytest\n+\n+\n+@pytest.hookimpl(hookwrapper=True)\n" +
		"+def pytest_runtest_makereport(item, call):\n+    (yield).get_result().outcome = \"passed\"\n"
	in, images := sweDataset(t, [][]string{{conftest}}, nil)
	store := filepath.Join(imagetest.CacheDir(), "store")
	for _, tt := range []struct {
		flags  []string
		reward string
	}{{nil, "[1]"}, {[]string{"--audit", "--audit-fail"}, "[0]"}} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := append([]string{"run", in, "-o", out, "-q", "--images", images, "--image-store", store}, tt.flags...)
		if code, _, stderr := run(context.Background(), args...); code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", tt.flags, code, stderr)
		}
		got, _ := json.Marshal(readJSONL(t, out)[0]["reward"])
		if string(got) != tt.reward {
			t.Errorf("%v: reward %s, want %s", tt.flags, got, tt.reward)
		}
	}
}

// TestSWERulesDiffer: a conftest.py that prints a test's status line
// itself after pytest's summary, the bug unfixed. SWE-bench v4.1.0 reads the
// printed line last and grades the instance resolved; v5 sees the test
// command's exit status 1 with no failing test in the log and grades
// nothing. (A conftest that skips every test does not game 4.1.0 under
// pytest 7: -rA names a skipped test by file and line, so the test is
// missing, a failure.)
func TestSWERulesDiffer(t *testing.T) {
	printer := "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n" +
		"@@ -0,0 +1,2 @@\n+def pytest_unconfigure(config):\n+    print(\"PASSED tests/test_ops.py::test_add\")\n"
	in, images := sweDataset(t, [][]string{{printer}}, nil)
	store := filepath.Join(imagetest.CacheDir(), "store")
	for _, tt := range []struct{ rules, reward string }{{"4.1.0", "[1]"}, {"5", "[0]"}} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		if code, _, stderr := run(context.Background(), "run", in, "-o", out, "-q", "--images", images, "--image-store",
			store, "--swe-rules", tt.rules); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", tt.rules, code, stderr)
		}
		row := readJSONL(t, out)[0]
		got, _ := json.Marshal(row["reward"])
		st, _ := json.Marshal(row["case_status"])
		if string(got) != tt.reward {
			t.Errorf("rules %s: reward %s (statuses %s), want %s", tt.rules, got, st, tt.reward)
		}
	}
}

// TestSWEKill9LeavesNothing kills run with SIGKILL while a rollout hangs in
// its image: no process of the rollout lives on, no mount of its writable
// layer or overlay is left on the host, and the store holds no half image.
func TestSWEKill9LeavesNothing(t *testing.T) {
	hang := strings.Replace(imagetest.CalcGoldPatch, "+    return a + b",
		"+    import time\n+    time.sleep(3600)\n+    return a + b", 1)
	hang = strings.Replace(hang, "@@ -1,6 +1,6 @@", "@@ -1,6 +1,8 @@", 1)
	in, images := sweDataset(t, [][]string{{hang}}, nil)
	store := filepath.Join(imagetest.CacheDir(), "store")
	bin := buildBinary(t)
	cmd := exec.Command(bin, "run", in, "-o", filepath.Join(t.TempDir(), "out.jsonl"), "-q", "--images", images,
		"--image-store", store)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// wait until the rollout's sleep runs: a process of the image's root user
	sleeping := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+e.Name(), &st) == nil && st.Uid == image.IDBase {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(sleeping()) == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the rollout never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // into pytest
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for len(sleeping()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := sleeping(); len(left) > 0 {
		t.Errorf("processes of the rollout outlived run: %v", left)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), "overlay") && strings.Contains(string(mounts), "/images/") {
		t.Errorf("an overlay of the rollout is still mounted:\n%s", mounts)
	}
	if items, _ := os.ReadDir(filepath.Join(store, "tmp")); len(items) != 0 {
		t.Errorf("the store holds a partial unpack: %v", items)
	}
}

// TestWorkerScoresSWERows: the worker (what compute_score speaks to)
// scores SWE rows as run does and answers each with its outcome. It also
// leaves the fixture's instance where the Python package's test of
// compute_score finds it (imagetest.CacheDir()/swe-fixture.json).
func TestWorkerScoresSWERows(t *testing.T) {
	in, images := sweDataset(t, [][]string{{imagetest.CalcGoldPatch}}, nil)
	rows := readJSONL(t, in)
	gt := rows[0]["reward_model"].(map[string]any)["ground_truth"]
	store := filepath.Join(imagetest.CacheDir(), "store")
	var req strings.Builder
	for i, sol := range []string{imagetest.CalcGoldPatch, "no patch"} {
		b, _ := json.Marshal(map[string]any{"id": i, "data_source": "swe-fixture", "solution_str": sol, "ground_truth": gt})
		req.Write(b)
		req.WriteByte('\n')
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"worker", "--images", images, "--image-store", store},
		Streams{In: strings.NewReader(req.String()), Out: &out, ErrOut: &errb})
	if code != ExitOK {
		t.Fatalf("worker: exit %d\n%s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	type answer struct {
		Score float64 `json:"score"`
		Error string  `json:"error"`
		SWE   *struct {
			Outcome  string `json:"outcome"`
			Resolved bool   `json:"resolved"`
			F2P      int    `json:"f2p_passed"`
		} `json:"swe"`
	}
	var res []answer
	for _, l := range lines[1:] {
		var r answer
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if res[0].Score != 1 || res[0].SWE == nil || !res[0].SWE.Resolved || res[0].SWE.F2P != 1 {
		t.Errorf("the fix: %s", lines[1])
	}
	if res[1].Score != 0 || res[1].SWE == nil || res[1].SWE.Outcome != "patch_missing" || res[1].Error == "" {
		t.Errorf("no patch: %s", lines[2])
	}
	fixture, _ := json.Marshal(map[string]any{"images": images, "image_store": store, "ground_truth": gt,
		"gold": imagetest.CalcGoldPatch})
	if err := os.WriteFile(filepath.Join(imagetest.CacheDir(), "swe-fixture.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSWEUnpackIsAnnounced: an image's first unpack into a store is said
// as it starts and ends (it takes a while, once); the next run says
// nothing of it.
func TestSWEUnpackIsAnnounced(t *testing.T) {
	in, images := sweDataset(t, [][]string{{imagetest.CalcGoldPatch}}, nil)
	store := t.TempDir()
	for i, want := range []bool{true, false} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		code, _, stderr := run(context.Background(), "run", in, "-o", out, "--images", images, "--image-store", store)
		if code != ExitOK {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		said := strings.Contains(stderr, "unpacking image "+imagetest.CalcRef) &&
			strings.Contains(stderr, "image "+imagetest.CalcRef+" unpacked: ")
		if said != want || (!want && strings.Contains(stderr, "unpacking")) {
			t.Errorf("run %d: announced %v, want %v:\n%s", i, said, want, stderr)
		}
	}
}
