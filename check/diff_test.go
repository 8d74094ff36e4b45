package check

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/rollout"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/check")

const fixtures = "../testdata/check"

func diffOpts() DiffOptions {
	return DiffOptions{Reader: rollout.DefaultOptions(), Tolerance: DefaultTolerance, KeepItems: true}
}

// wantMatrix is the transition matrix of a.scored.jsonl → b.scored.jsonl
// (see testdata/check/README.md), counted by hand.
var wantMatrix = map[[2]string]int{
	{"True", "True"}: 10, {"True", "-3"}: 1, {"True", "-1"}: 1,
	{"False", "False"}: 2, {"False", "True"}: 1,
	{"-3", "True"}: 1, {"-2", "-4"}: 1,
}

func matrixOf(r *Report) map[[2]string]int {
	m := map[[2]string]int{}
	labels, counts := r.Matrix()
	for i := range labels {
		for j := range labels {
			if counts[i][j] != 0 {
				m[[2]string{labels[i], labels[j]}] = counts[i][j]
			}
		}
	}
	return m
}

func TestDiffGolden(t *testing.T) {
	a, b := filepath.Join(fixtures, "a.scored.jsonl"), filepath.Join(fixtures, "b.scored.jsonl")
	rep, err := Diff(a, b, diffOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := matrixOf(rep); fmt.Sprint(got) != fmt.Sprint(wantMatrix) {
		t.Errorf("matrix: got %v, want %v", got, wantMatrix)
	}
	wantCounts := Counts{Responses: 7, Compared: 7, Equal: 3, Regressed: 2, Improved: 2, Mismatches: 4}
	if rep.Counts != wantCounts {
		t.Errorf("counts: got %+v, want %+v", rep.Counts, wantCounts)
	}
	if !rep.Regression {
		t.Error("got no regression, want one")
	}
	var worst []string
	for _, it := range rep.Mismatches {
		worst = append(worst, fmt.Sprintf("%s %s %+.2f", it.Name(), it.Outcome, it.Delta))
	}
	wantWorst := []string{"4:0 regressed -1.00", "2:0 improved +0.50",
		"2:1 improved +0.50", "0:0 regressed -0.25"}
	if strings.Join(worst, "; ") != strings.Join(wantWorst, "; ") {
		t.Errorf("worst: got %q, want %q", worst, wantWorst)
	}
	bySource := map[string]string{}
	for _, s := range rep.BySource {
		bySource[s.DataSource] = fmt.Sprintf(
			"%d/%d/%d %.4f→%.4f",
			s.Equal,
			s.Regressed,
			s.Improved,
			s.MeanReference,
			s.MeanNew,
		)
	}
	wantSource := map[string]string{
		"codecontests": "2/1/0 0.9167→0.8333",
		"taco":         "0/0/2 0.2500→0.7500",
		"humaneval":    "1/1/0 0.5000→0.0000",
	}
	if fmt.Sprint(bySource) != fmt.Sprint(wantSource) {
		t.Errorf("by source: got %v, want %v", bySource, wantSource)
	}

	for _, g := range []struct {
		file  string
		write func(w io.Writer) error
	}{
		{"diff.txt", func(w io.Writer) error { return rep.WriteText(w, 20) }},
		{"diff.md", func(w io.Writer) error { return rep.WriteMarkdown(w, 20) }},
		{"diff.junit.xml", rep.WriteJUnit},
	} {
		var buf bytes.Buffer
		if err := g.write(&buf); err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		golden(t, g.file, buf.Bytes())
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(fixtures, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

// toParquet writes the results of the scored JSONL file scored over the
// rows of rows.jsonl as a parquet output, as `run` would have.
func toParquet(t *testing.T, scored string) string {
	t.Helper()
	rd, err := rollout.Open(filepath.Join(fixtures, "rows.jsonl"), rollout.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	sr, err := rollout.OpenScored(scored, rollout.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	out := filepath.Join(t.TempDir(), "b.scored.parquet")
	w, err := rollout.Create(out, rd)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for {
		b, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		res := make([]rollout.RowResult, len(b.Rows))
		for i := range res {
			s, err := sr.Next()
			if err != nil {
				t.Fatal(err)
			}
			res[i] = rollout.RowResult{
				Rewards:     s.Rewards,
				CaseResults: s.CaseResults,
				CaseStatus:  s.CaseStatus,
				Errors:      s.Errors,
			}
		}
		if err := w.Write(b, res); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDiffParquetAndJSONL(t *testing.T) {
	pb := toParquet(t, filepath.Join(fixtures, "b.scored.jsonl"))
	pa := toParquet(t, filepath.Join(fixtures, "a.scored.jsonl"))
	for _, tc := range []struct{ name, a, b string }{
		{"jsonl to parquet", filepath.Join(fixtures, "a.scored.jsonl"), pb},
		{"parquet to parquet", pa, pb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Diff(tc.a, tc.b, diffOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := matrixOf(rep); fmt.Sprint(got) != fmt.Sprint(wantMatrix) {
				t.Errorf("matrix: got %v, want %v", got, wantMatrix)
			}
			if rep.Counts.Regressed != 2 || rep.Counts.Improved != 2 || rep.Counts.Equal != 3 {
				t.Errorf("counts: got %+v, want 3 equal, 2 regressed, 2 improved", rep.Counts)
			}
		})
	}
}

func TestDiffSameFileIsConsistent(t *testing.T) {
	a := filepath.Join(fixtures, "a.scored.jsonl")
	rep, err := Diff(a, toParquet(t, a), diffOpts())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Regression || rep.Counts.Equal != 7 || len(rep.Changed()) != 0 {
		t.Errorf("got %+v, changes %v; want 7 equal and no change", rep.Counts, rep.Changed())
	}
}

func TestDiffShapeMismatch(t *testing.T) {
	lines := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	a := lines(filepath.Join(fixtures, "a.scored.jsonl"))
	// B: rows 0..3 of A, and row 2 with one response fewer.
	b := append([]string{}, a[:4]...)
	b[2] = `{"data_source": "taco", "reward": [0.0], "case_results": [[false, false]], "case_status": [["wrong_answer", "wrong_answer"]], "reward_error": [null]}`
	rep, err := Diff(writeFile(t, "a.jsonl", a...), writeFile(t, "b.jsonl", b...), diffOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Responses: 7, Compared: 5, Equal: 5, Missing: 2, Mismatches: 2}
	if rep.Counts != want {
		t.Errorf("counts: got %+v, want %+v", rep.Counts, want)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, w := range []string{"row 2: A has 2 responses, B has 1", "A has 5 rows, B has 4"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes %q lack %q", notes, w)
		}
	}
	var missing []string
	for _, it := range rep.Mismatches {
		missing = append(missing, it.Name())
	}
	if got, want := strings.Join(missing, ", "), "2:1, 4:0"; got != want {
		t.Errorf("missing: got %s, want %s", got, want)
	}
	if !rep.Regression {
		t.Error("got no regression, want one")
	}
}

func TestDiffErrors(t *testing.T) {
	a := filepath.Join(fixtures, "a.scored.jsonl")
	if _, err := Diff(a, filepath.Join(t.TempDir(), "nope.jsonl"), diffOpts()); err == nil {
		t.Error("missing B: got no error")
	}
	if _, err := Diff(a, filepath.Join(fixtures, "rows.jsonl"), diffOpts()); err == nil ||
		!strings.Contains(err.Error(), "reward") {
		t.Errorf("B not an output of run: got %v, want an error naming the reward field", err)
	}
}

// The JUnit schema as an independent reader sees it.
type xTestsuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitParses(t *testing.T) {
	rep, err := Diff(filepath.Join(fixtures, "a.scored.jsonl"), filepath.Join(fixtures, "b.scored.jsonl"), diffOpts())
	if err != nil {
		t.Fatal(err)
	}
	// An error message with characters XML must escape or cannot hold.
	if it := rep.Items[1]; it.Name() != "0:1" || it.Outcome != Equal {
		t.Fatalf("item 1: got %s %s, want 0:1 equal", it.Name(), it.Outcome)
	}
	rep.Items[1].Err = "bad <tag> & \"quote\" \x01 ]]>"
	rep.Items[1].Outcome = Regressed
	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc xTestsuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, buf.String())
	}
	if doc.Tests != 7 || doc.Failures != 5 {
		t.Errorf("totals: got %d tests %d failures, want 7 and 5", doc.Tests, doc.Failures)
	}
	failed := map[string]string{}
	n := 0
	for _, s := range doc.Suites {
		n += len(s.Cases)
		for _, c := range s.Cases {
			if c.Failure != nil {
				failed[s.Name+"/"+c.Name] = c.Failure.Type
			}
		}
	}
	want := map[string]string{
		"codecontests/0:0": "regressed", "codecontests/0:1": "regressed",
		"taco/2:0": "improved", "taco/2:1": "improved", "humaneval/4:0": "regressed",
	}
	if n != 7 || fmt.Sprint(failed) != fmt.Sprint(want) {
		t.Errorf("got %d cases, failures %v; want 7 cases, failures %v", n, failed, want)
	}

	// A second, independent parser when Python is at hand.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; encoding/xml parse only")
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // the pyenv shim is slow to start
	}
	cmd := exec.Command(py, "-c", `import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.stdin).getroot()
cases = root.findall("./testsuite/testcase")
print(root.tag, len(cases), len([c for c in cases if c.find("failure") is not None]))`)
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("python could not parse the JUnit XML: %s", out)
	}
	if err != nil {
		t.Skipf("python3: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "testsuites 7 5" {
		t.Errorf("python: got %q, want %q", got, "testsuites 7 5")
	}
}

func TestJUnitNeedsItems(t *testing.T) {
	o := diffOpts()
	o.KeepItems = false
	rep, err := Diff(filepath.Join(fixtures, "a.scored.jsonl"), filepath.Join(fixtures, "b.scored.jsonl"), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJUnit(io.Discard); !errors.Is(err, ErrNoItems) {
		t.Errorf("got %v, want ErrNoItems", err)
	}
}

// Rows are matched by identity: the same output rotated by one row is
// equal throughout (with a note that rows moved), and two outputs of
// different inputs are refused.
func TestDiffMatchesRowsByIdentity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures, "a.scored.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := strings.Split(strings.TrimSpace(string(b)), "\n")
	rotated := append(append([]string{}, a[1:]...), a[0])
	pa := writeFile(t, "a.jsonl", a...)
	for _, other := range []string{writeFile(t, "rotated.jsonl", rotated...)} {
		rep, err := Diff(pa, other, diffOpts())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts.Equal != rep.Counts.Responses || rep.Counts.Mismatches != 0 || rep.Regression {
			t.Errorf("%s: counts %+v, want every response equal", other, rep.Counts)
		}
		if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "rows of B are at other positions") {
			t.Errorf("%s: notes %q do not say rows moved", other, notes)
		}
	}
	// By an id column: the prompts could be anything.
	ids := make([]string, len(a))
	for i, line := range a {
		ids[i] = strings.Replace(
			line,
			`"prompt": [{"role": "user", "content": "problem `,
			fmt.Sprintf(`"uid": "task-%d", "prompt": [{"role": "user", "content": "other `, i),
			1,
		)
	}
	idsRotated := append(append([]string{}, ids[2:]...), ids[:2]...)
	opts := diffOpts()
	opts.Reader.IDKey = "uid"
	rep, err := Diff(writeFile(t, "ids.jsonl", ids...), writeFile(t, "ids-rotated.jsonl", idsRotated...), opts)
	if err != nil || rep.Counts.Mismatches != 0 {
		t.Errorf("--id-key: %v, counts %+v", err, rep)
	}
	// Different inputs: refused.
	var others []string
	for i, line := range a {
		others = append(others, strings.Replace(line, "problem ", fmt.Sprintf("unrelated %d ", i), 1))
	}
	if _, err := Diff(pa, writeFile(t, "others.jsonl", others...), diffOpts()); !errors.Is(err, ErrNotSameInput) {
		t.Errorf("outputs of different inputs: %v, want ErrNotSameInput", err)
	}
}
