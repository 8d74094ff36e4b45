package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/verdict"
)

func ptr[T any](v T) *T { return &v }

// testCases set every field of a case once, leave every pointer nil once,
// and hold the audit's three states (not probed, probed without flags,
// flagged) and text that is not valid UTF-8.
func testCases() []Case {
	exact := verdict.False
	return []Case{
		{
			Row:           0,
			ResponseIndex: 1,
			DataSource:    "taco",
			Case: verdict.Case{Verdict: verdict.True, CaseIndex: 2, Input: "1\n", ExpectedOutput: "1\n",
				Status: "success", Stdout: ptr("1\n"), Stderr: ptr(""), ExitCode: ptr(0), Duration: ptr(0.25),
				CompileDuration: ptr(1.5),
				CompileStderr:   ptr(""), APIStatus: ptr("Success"), CompileStatus: ptr("Finished"), RunStatus: ptr("Finished"),
				Attempts: 1, CPUTime: ptr(0.01), CompileCPUTime: ptr(1.2), Audit: []string{"always_true", "early_exit"}},
		},
		{
			Row:        1,
			DataSource: "",
			Case: verdict.Case{Verdict: verdict.APIError, ExpectedOutput: "x", APIRequestError: ptr("connection refused"),
				Status: "api_error", Attempts: 5, Infra: true, VerdictExact: &exact, Checker: &verdict.Checker{ExitCode: ptr(1),
					Output: "no"},
				Shared: true, Cached: true, StarvedReruns: 1, CPUWait: ptr(2.5), Audit: []string{}},
		},
		{
			Row:           2,
			ResponseIndex: 3,
			DataSource:    "x\xffy",
			Case: verdict.Case{Verdict: verdict.RuntimeError, Status: "runtime_error",
				Stdout: ptr("caf\xc3"), Checker: &verdict.Checker{Error: "checker crashed"}},
		},
		{
			Row:        3,
			DataSource: "swe-gym",
			Case: verdict.Case{Verdict: verdict.True, Input: "tests/t.py::test_a", ExpectedOutput: "FAIL_TO_PASS",
				Status: "swe_passed", Stdout: ptr("PASSED")},
			SWE: &score.SWEResult{InstanceID: "o__r-1", Outcome: "resolved", Rules: "4.1.0", Resolved: true,
				Resolution: "RESOLVED_FULL", PatchApplied: true, AppliedBy: "git apply --verbose", F2PPassed: 1, F2PTotal: 1,
				P2PTotal: 2, P2PPassed: 2, ExitCode: 0, Flags: []swe.Flag{{Kind: "conftest", Path: "conftest.py"},
					{Kind: "edits_tests", Path: "tests/x.py"}}, ApplyOutput: "Applied", Log: "PASSED t", Plan: "install_config"},
		},
		{
			Row:  4,
			Case: verdict.Case{Verdict: verdict.False, Status: "swe_patch_missing"},
			SWE:  &score.SWEResult{InstanceID: "o__r-2", Outcome: "patch_missing", Why: "none", Rules: "5", ExitCode: -1},
		},
	}
}

// Both codecs give back the cases written and the provenance, the same
// from either; text that is not UTF-8 comes back as encoding/json makes
// it (each bad byte U+FFFD) from both.
func TestCasesRoundTrip(t *testing.T) {
	want := testCases()
	want[2].DataSource, want[2].Stdout = "x\uFFFDy", ptr("caf\uFFFD")
	prov := json.RawMessage(`{"tool":"verl-score","started":"2026-12-07T00:00:00Z"}`)
	dir := t.TempDir()
	for _, name := range []string{"cases.jsonl", "cases.parquet", "CASES.PARQUET"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			w, err := CreateCases(path, prov)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range testCases() {
				if err := w.Write(&c); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("the cases file is in place before Commit")
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if isPq := strings.HasPrefix(string(b), "PAR1"); isPq != IsParquet(name) {
				t.Errorf("%s written as parquet: %v", name, isPq)
			}
			var got []Case
			gotProv, err := ReadCases(path, func(c *Case) error { got = append(got, *c); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if string(gotProv) != string(prov) {
				t.Errorf("provenance %s, want %s", gotProv, prov)
			}
			if p, err := CasesProvenance(path); string(p) != string(prov) {
				t.Errorf("CasesProvenance: %s, %v; want %s", p, err, prov)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
						g, _ := json.Marshal(got[min(i, len(got)-1)])
						w, _ := json.Marshal(want[min(i, len(want)-1)])
						t.Errorf("case %d:\n got %s\nwant %s", i, g, w)
					}
				}
			}
		})
	}
}

// A file without provenance reads back with none; an error of the
// callback names the file and the line; Abort leaves nothing.
func TestCasesErrorsAndAbort(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "a.parquet"} {
		path := filepath.Join(dir, name)
		w, err := CreateCases(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range testCases() {
			w.Write(&c)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		n := 0
		prov, err := ReadCases(path, func(c *Case) error {
			if n++; n == 2 {
				return os.ErrInvalid
			}
			return nil
		})
		if p, err := CasesProvenance(path); p != nil || err != nil {
			t.Errorf("%s: CasesProvenance %s, %v; want none", name, p, err)
		}
		if prov != nil || err == nil || !strings.Contains(err.Error(), name+":2: ") {
			t.Errorf("%s: provenance %s, error %v; want none and %s:2: first", name, prov, err, name)
		}
		gone := filepath.Join(dir, "gone-"+name)
		w, _ = CreateCases(gone, nil)
		w.Write(&testCases()[0])
		w.Abort()
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s after Abort: %v", gone, err)
		}
	}
	if _, err := ReadCases(filepath.Join(dir, "missing.parquet"), func(*Case) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "missing.parquet") {
		t.Errorf("a missing file: %v", err)
	}
}
