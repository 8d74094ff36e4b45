package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/check"
	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/job"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/testcases"
)

// scoredExample is the bundled example scored by a real run (embedded
// sandbox, --compare tokens, --audit, --cases-out), once for the tests.
type scoredExample struct {
	scored, cases, summary string
	err                    error
}

var (
	exampleOnce sync.Once
	example     scoredExample
)

func scored(t *testing.T) scoredExample {
	t.Helper()
	exampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verl-score-report-")
		if err != nil {
			example.err = err
			return
		}
		l, err := sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}})
		if err != nil {
			example.err = err
			return
		}
		defer l.Close()
		eo := score.DefaultOptions()
		eo.MaxConcurrent = 8
		eo.Compare, _ = testcases.ParseComparison("tokens")
		eo.Audit = true
		eng, err := score.New(l, eo)
		if err != nil {
			example.err = err
			return
		}
		example = scoredExample{
			scored:  filepath.Join(dir, "example.scored.jsonl"),
			cases:   filepath.Join(dir, "cases.jsonl"),
			summary: filepath.Join(dir, "summary.json"),
		}
		_, example.err = job.Run(
			context.Background(),
			eng,
			job.Options{Input: "../testdata/example.jsonl", Output: example.scored,
				CasesOut: example.cases, Summary: example.summary, Reader: rollout.DefaultOptions(), MaxText: 400},
		)
	})
	if example.err != nil {
		t.Fatal(example.err)
	}
	return example
}

var figureRE = regexp.MustCompile(`data-figure="([^"]+)"(?: data-value="([^"]*)")?>([^<]*)<`)

// figures reads the page's marked figures: name -> value (data-value
// when there is one, else the text).
func figures(page string) map[string]string {
	out := map[string]string{}
	for _, m := range figureRE.FindAllStringSubmatch(page, -1) {
		v := m[3]
		if m[2] != "" {
			v = m[2]
		}
		out[m[1]] = strings.TrimSpace(v)
	}
	return out
}

// summaryFigures flattens the summary JSON's groups into the page's
// names: "<source>:mean_score", "<source>:verdicts.True", ...
func summaryFigures(t *testing.T, path string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Overall  map[string]any            `json:"overall"`
		BySource map[string]map[string]any `json:"by_data_source"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	add := func(src string, g map[string]any) {
		for k, v := range g {
			switch x := v.(type) {
			case float64:
				out[src+":"+k] = x
			case map[string]any:
				for kk, vv := range x {
					if f, ok := vv.(float64); ok {
						out[src+":"+k+"."+kk] = f
					}
				}
			}
		}
	}
	for src, g := range sum.BySource {
		add(src, g)
	}
	if len(sum.BySource) != 1 {
		add("overall", sum.Overall)
	}
	return out
}

// compareFigures checks that every figure of the page equals the
// summary's, and that the figures every group must show are there.
func compareFigures(t *testing.T, page string, want map[string]float64) {
	t.Helper()
	got := figures(page)
	if len(got) < 50 {
		t.Fatalf("the page marks only %d figures", len(got))
	}
	for name, text := range got {
		w, ok := want[name]
		if !ok && strings.Contains(name, ":verdicts.") {
			w, ok = 0, true // the summary leaves out verdicts no case has
		}
		if !ok {
			t.Errorf("page figure %s = %s is not in the summary", name, text)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(text, "%"), 64)
		if err != nil {
			t.Errorf("page figure %s = %q is not a number", name, text)
			continue
		}
		if math.Abs(v-w) > 5e-5 {
			t.Errorf("page figure %s = %s, summary %g", name, text, w)
		}
	}
	for name := range want {
		src, field, _ := strings.Cut(name, ":")
		for _, must := range []string{"prompts", "responses", "mean_score", "mean_over_responses", "infra_error_rate",
			"responses_with_infra_error",
			"rewards_differ_from_exact", "mean_score_exact", "audit_flagged"} {
			if field == must {
				if _, ok := got[name]; !ok {
					t.Errorf("the page lacks %s of %s", field, src)
				}
			}
		}
		if strings.HasPrefix(field, "pass_at_k") || strings.HasPrefix(field, "verdicts.") {
			if _, ok := got[name]; !ok {
				t.Errorf("the page lacks %s", name)
			}
		}
	}
}

// examplePage is the bundled example's report and its page.
func examplePage(t *testing.T) (scoredExample, *Report, []byte) {
	t.Helper()
	ex := scored(t)
	rep, err := Build(ex.scored, ex.cases, rollout.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	return ex, rep, buf.Bytes()
}

// TestReportFiguresEqualSummary: the page's figures are the run's summary
// JSON's, group by group, and every chart is drawn for every group.
func TestReportFiguresEqualSummary(t *testing.T) {
	ex, rep, html := examplePage(t)
	page := string(html)
	compareFigures(t, page, summaryFigures(t, ex.summary))
	checkCharts(t, page, len(rep.Groups))
	// One file: nothing fetched, the script inline.
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, "<script src") {
		t.Error("the page refers to the network or loads a script")
	}
	for _, must := range []string{"Slowest cases", "Most common failure causes", "Audit", "reward_exact",
		`id="responses-data"`} {
		if !strings.Contains(page, must) {
			t.Errorf("the page has no %q section", must)
		}
	}
}

func checkCharts(t *testing.T, page string, groups int) {
	t.Helper()
	for _, kind := range []string{"histogram", "verdicts", "pass_at_k"} {
		if n := strings.Count(page, `data-chart="`+kind+`"`); n != groups {
			t.Errorf("%d %s charts for %d groups", n, kind, groups)
		}
	}
}

// chromium finds the headless browser; CI (VERL_SCORE_REQUIRE_CHROMIUM=1)
// must have it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VERL_SCORE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium on PATH, and VERL_SCORE_REQUIRE_CHROMIUM is set")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// render loads page in headless Chromium and returns the DOM it built;
// it keeps a screenshot as an artifact ($VERL_SCORE_TEST_ARTIFACTS, else
// the test's temporary directory).
func render(t *testing.T, page []byte, name string) string {
	t.Helper()
	bin := chromium(t)
	dir := os.Getenv("VERL_SCORE_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	htmlPath, _ := filepath.Abs(filepath.Join(dir, name+".html"))
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	dom, err := exec.Command(bin, append(args, "--dump-dom", "file://"+htmlPath)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	shot := filepath.Join(dir, name+".png")
	if out, err := exec.Command(bin, append(args, "--window-size=1300,2400", "--screenshot="+shot,
		"file://"+htmlPath)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1300 || b.Dy() != 2400 {
		t.Errorf("screenshot is %v", b)
	}
	t.Logf("screenshot kept at %s", shot)
	return string(dom)
}

// TestReportInChromium: the page as a browser builds it holds the charts
// and the summary's figures.
func TestReportInChromium(t *testing.T) {
	ex, rep, html := examplePage(t)
	dom := render(t, html, "report")
	compareFigures(t, dom, summaryFigures(t, ex.summary))
	checkCharts(t, dom, len(rep.Groups))
}

// TestCheckHTML: diff's page draws the transition matrix with the
// report's counts and lists the regressed response with its differing
// cases.
func TestCheckHTML(t *testing.T) {
	ex := scored(t)
	data, err := os.ReadFile(ex.scored)
	if err != nil {
		t.Fatal(err)
	}
	// B: the first row's first case turned False, its reward lowered.
	lines := strings.SplitN(string(data), "\n", 2)
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	row["reward"].([]any)[0] = 0.5
	row["case_results"].([]any)[0].([]any)[0] = false
	first, _ := json.Marshal(row)
	b := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(b, []byte(string(first)+"\n"+lines[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := check.Diff(
		ex.scored,
		b,
		check.DiffOptions{Tolerance: check.DefaultTolerance, Reader: rollout.DefaultOptions()},
	)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCheckHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"html": buf.String(), "chromium": render(t, buf.Bytes(), "diff")} {
		if !strings.Contains(page, `data-chart="transitions"`) {
			t.Fatalf("%s: no transition heat map", name)
		}
		labels, counts := rep.Matrix()
		for i, from := range labels {
			for j, to := range labels {
				cell := fmt.Sprintf(`data-from="%s" data-to="%s" data-count="%d"`, from, to, counts[i][j])
				if !strings.Contains(page, cell) {
					t.Errorf("%s: heat map lacks %s", name, cell)
				}
			}
		}
		f := figures(page)
		if f["regressed"] != "1" || f["mismatches"] != strconv.Itoa(rep.Counts.Mismatches) || f["regression"] != "true" {
			t.Errorf("%s: figures %v; report counts %+v", name, f, rep.Counts)
		}
		if !strings.Contains(page, "row 0 response 0") || !strings.Contains(page, "case 0: True→False") {
			t.Errorf("%s: the regressed response and its differing case are not listed", name)
		}
	}
}

// --pass-k: the report's pass@k are the k asked for, each with its prompts.
func TestReportPassK(t *testing.T) {
	ex := scored(t)
	rep, err := Build(ex.scored, ex.cases, rollout.DefaultOptions(), 1, 3, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Groups {
		for _, p := range g.PassAtK {
			if p.K != 1 && p.K != 3 {
				t.Errorf("%s: pass@%d, want only 1 and 3 (no prompt has 100 responses)", g.Name, p.K)
			}
			if p.K == 3 && p.Prompts == 0 {
				t.Errorf("%s: pass@3 over no prompt", g.Name)
			}
		}
	}
}

// The verdict bars tell the verdicts apart, and the transition map is
// wide enough for its title whatever the number of verdicts.
func TestChartsColoursAndWidths(t *testing.T) {
	html := string(bars("verdicts", "cases by verdict", []string{"True", "False", "-3"}, []int{3, 2, 1}, verdictColor))
	fills := map[string]bool{}
	for _, m := range regexp.MustCompile(`fill="(#[0-9a-f]{6})" data-label="([^"]+)"`).FindAllStringSubmatch(html, -1) {
		fills[m[1]] = true
	}
	if len(fills) != 3 {
		t.Errorf("three verdicts drawn in %d colours: %s", len(fills), html)
	}
}

// On a rollout dump, whose prompts spread over several lines, the page's
// figures are run's summary's too (prompts, means, pass@k), read from the
// page as Chromium builds it.
func TestReportOnADumpEqualsRun(t *testing.T) {
	dir := t.TempDir()
	l, err := sandbox.New(sandbox.Options{Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	eo := score.DefaultOptions()
	eo.MaxConcurrent = 8
	eng, err := score.New(l, eo)
	if err != nil {
		t.Fatal(err)
	}
	out, summary := filepath.Join(dir, "dump.scored.jsonl"), filepath.Join(dir, "summary.json")
	ro := rollout.DefaultOptions()
	sum, err := job.Run(
		context.Background(),
		eng,
		job.Options{Input: "../testdata/dump", Output: out, Summary: summary, Reader: ro, DataSource: "codecontests"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Overall.Prompts >= sum.Overall.Responses {
		t.Fatalf(
			"the dump has %d prompts for %d responses: no prompt spreads over several lines",
			sum.Overall.Prompts,
			sum.Overall.Responses,
		)
	}
	rep, err := Build(out, "", ro)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	compareFigures(t, page.String(), summaryFigures(t, summary))
	dom := render(t, page.Bytes(), "dump-report")
	compareFigures(t, dom, summaryFigures(t, summary))
}

// dom loads the page at path#hash in headless Chromium and returns the
// DOM its script built.
func dom(t *testing.T, path, hash string) string {
	t.Helper()
	bin := chromium(t)
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(),
		"--dump-dom", "file://"+path+"#"+hash).
		Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s#%s: %v", path, hash, err)
	}
	return string(out)
}

var (
	causeLink    = regexp.MustCompile(`href="#(cause=wrong\+answer[^"]*)"`)
	responseLink = regexp.MustCompile(`<tbody>.*?href="#r-(\d+)-(\d+)"`)
	markedLine   = regexp.MustCompile(`<mark class="first-diff">([^<]*)</mark>`)
	tags         = regexp.MustCompile(`<[^>]+>`)
)

// TestReportFromFailureToCode goes, in a browser, from the summary's table
// of failure causes to the responses behind a wrong answer, then to one
// of them: its detail shows its code and marks the first line where its
// output differs from the expected one.
func TestReportFromFailureToCode(t *testing.T) {
	ex, _, html := examplePage(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, html, 0o644); err != nil {
		t.Fatal(err)
	}
	m := causeLink.FindStringSubmatch(dom(t, path, ""))
	if m == nil {
		t.Fatal("no wrong-answer cause links to its responses in the failure table")
	}
	filter := strings.ReplaceAll(m[1], "&amp;", "&")
	list := dom(t, path, filter)
	r := responseLink.FindStringSubmatch(list)
	if r == nil {
		t.Fatalf("the list filtered by #%s links no response", filter)
	}
	detail := dom(t, path, "r-"+r[1]+"-"+r[2])
	row, _ := strconv.Atoi(r[1])
	resp, _ := strconv.Atoi(r[2])
	rs, err := ReadResponses(
		ex.scored,
		ex.cases,
		rollout.DefaultOptions(),
		func(x *Response) bool { return x.Row == row && x.Index == resp },
	)
	if err != nil || len(rs) != 1 {
		t.Fatalf("response %d:%d: %v", row, resp, err)
	}
	code := html2text(detail)
	for _, line := range strings.Split(strings.TrimSpace(rs[0].Code), "\n") {
		if !strings.Contains(code, strings.TrimSpace(line)) {
			t.Errorf("the detail of %d:%d lacks its code line %q", row, resp, line)
			break
		}
	}
	var want string
	for _, c := range rs[0].Cases {
		if d, ok := explain.FirstDiff(c.ExpectedOutput, *c.Stdout); ok && c.Status == "wrong_answer" {
			want = d.Got
			break
		}
	}
	mk := markedLine.FindStringSubmatch(detail)
	if mk == nil || html2text(mk[1]) != want {
		t.Errorf("the detail of %d:%d marks %v, want the first differing line %q", row, resp, mk, want)
	}
}

func html2text(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").
		Replace(tags.ReplaceAllString(s, ""))
}
