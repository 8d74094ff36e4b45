//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clientsPython is a Python with the clients users read and write outputs
// with (pyarrow, pandas, polars; DuckDB too): .ci/run makes one in
// .ci/clients; VERL_SCORE_CLIENTS_PYTHON names another. Without one the
// test skips loudly, and fails under CI=true.
func clientsPython(t *testing.T) string {
	t.Helper()
	if raceDetector {
		// no concurrency of their own to check; test.sh runs them without
		t.Skip("the real clients' tests: run without -race (test.sh does)")
	}
	py := os.Getenv("VERL_SCORE_CLIENTS_PYTHON")
	if py == "" {
		py, _ = filepath.Abs("../.ci/clients/bin/python")
	}
	out, err := exec.Command(py, "-c", "import pyarrow, pandas, polars").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("SKIPPED LOUDLY: no Python with pyarrow, pandas and polars at %s (%v: %s); make one with "+
			".ci/run or name it in VERL_SCORE_CLIENTS_PYTHON", py, err, bytes.TrimSpace(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// needInPython skips loudly unless py runs code (an import), and fails
// under CI=true.
func needInPython(t *testing.T, py, code, what string) {
	t.Helper()
	if out, err := exec.Command(py, "-c", code).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("SKIPPED LOUDLY: no %s at %s: %s", what, py, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

func python(t *testing.T, py string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestOutputsReadByClients: the bundled example, written as parquet by
// pyarrow, pandas and polars as users make them, is scored by run to the
// same rewards and verdicts as its JSON lines; and run's outputs (parquet
// and JSON lines, with their cases files) are read by pyarrow, pandas with
// the pyarrow engine, polars and DuckDB with every input column unchanged,
// the added columns typed as documented and the provenance in the parquet
// metadata (testdata/clients/read_outputs.py checks each).
func TestOutputsReadByClients(t *testing.T) {
	py := clientsPython(t)
	t.Run("example", func(t *testing.T) { readByClients(t, py, "../testdata/example.jsonl") })
	t.Run("real-sample", func(t *testing.T) {
		// the first rows of three of the real corpus's files
		var b strings.Builder
		for _, f := range []string{"mbpp.jsonl", "codecontests.jsonl", "livecodebench.jsonl"} {
			data, err := os.ReadFile(filepath.Join("../../shared/data/real", f))
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal(err)
				}
				t.Skipf("SKIPPED LOUDLY: the real corpus: %v", err)
			}
			lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
			for _, l := range lines[:min(len(lines), 15)] {
				b.WriteString(strings.TrimSpace(l) + "\n")
			}
		}
		readByClients(t, py, writeFile(t, t.TempDir(), "real.jsonl", b.String()))
	})
}

func readByClients(t *testing.T, py, example string) {
	dir := t.TempDir()
	ins := map[string]string{"pyarrow": filepath.Join(dir, "pa.parquet"), "pandas": filepath.Join(dir, "pd.parquet"),
		"polars": filepath.Join(dir, "pl.parquet")}
	norm := filepath.Join(dir, "example.jsonl")
	python(t, py, "../testdata/clients/write_inputs.py", example, ins["pyarrow"], ins["pandas"], ins["polars"], norm)
	example = norm

	score := func(in, out, cases string) {
		t.Helper()
		code, stdout, stderr := run(context.Background(), "run", in, "-o", out, "--cases-out", cases, "-q")
		if code != ExitOK {
			t.Fatalf("run %s: exit %d\n%s\n%s", in, code, stdout, stderr)
		}
	}
	jsonOut, jsonCases := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "cases.jsonl")
	score(example, jsonOut, jsonCases)
	want := readJSONL(t, jsonOut)
	for who, in := range ins {
		out, cases := filepath.Join(dir, who+".out.parquet"), filepath.Join(dir, who+".cases.parquet")
		score(in, out, cases)
		if who != "pyarrow" {
			continue
		}
		// the outputs of the pyarrow-written input, read by every client
		figures := python(t, py, "../testdata/clients/read_outputs.py", in, out, cases, jsonOut, jsonCases)
		t.Logf("read by the clients: %s", strings.TrimSpace(figures))
		var f struct{ Rows, Responses, Cases int }
		if err := json.Unmarshal([]byte(figures), &f); err != nil || f.Rows != len(want) || f.Cases == 0 {
			t.Errorf("the clients' figures %q (%v); want %d rows", figures, err, len(want))
		}
	}
	// each parquet input scores as the JSON lines do
	for who := range ins {
		out := filepath.Join(dir, who+".out.parquet")
		rows := python(t, py, "-c", "import sys, json, pyarrow.parquet as pq\n"+
			"t = pq.read_table(sys.argv[1]).select(['reward', 'case_results', 'case_status'])\n"+
			"for r in t.to_pylist(): print(json.dumps(r))", out)
		lines := strings.Split(strings.TrimSpace(rows), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%s: %d output rows, want %d", who, len(lines), len(want))
		}
		for i, line := range lines {
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"reward", "case_status"} {
				a, _ := json.Marshal(got[k])
				b, _ := json.Marshal(want[i][k])
				if string(a) != string(b) {
					t.Errorf("%s-written parquet, row %d: %s %s; JSON lines %s", who, i, k, a, b)
				}
			}
			// JSON lines writes 1 and 0 as true and false
			a, _ := json.Marshal(got["case_results"])
			b, _ := json.Marshal(want[i]["case_results"])
			if strings.NewReplacer("true", "1", "false", "0").Replace(string(b)) != string(a) {
				t.Errorf("%s-written parquet, row %d: case_results %s; JSON lines %s", who, i, a, b)
			}
		}
	}
}

// TestSandboxFusionClient: SandboxFusion's own client (the sandbox-fusion
// package, pinned in .ci/clients) against serve: run_code (stdin, a
// failure, a compile error, a timeout, files) and run_jupyter through its
// functions and types, its async client, and its error paths, a 503 from
// a full server and its own timeout (testdata/clients/sandbox_fusion_client.py).
func TestSandboxFusionClient(t *testing.T) {
	py := clientsPython(t)
	needInPython(t, py, "import sandbox_fusion", "sandbox-fusion")
	bin := buildBinary(t)
	u := strings.TrimSuffix(startNode(t, bin, "--slots", "4"), "/run_code")
	full := strings.TrimSuffix(startNode(t, bin, "--slots", "1", "--max-queue", "0"), "/run_code")
	out := python(t, py, "../testdata/clients/sandbox_fusion_client.py", u, full)
	t.Logf("SandboxFusion's client: %s", strings.TrimSpace(out))
}

// TestVerlScorerAgainstServe: verl's own scorer (the verl package, pinned
// in .ci/clients; its torch-importing __init__ files skipped, nothing of
// its code replaced: testdata/clients/verl_scorer.py) pointed at serve,
// over the real corpus (every fourth row of each file in the README's
// command, every row in .ci/run's step of its own): every
// reward equals run's, verl's default_compute_score for the sources it
// routes to the sandbox (continuous) and its sandbox scorer over all
// cases for the others (verl has no code scorer for them; run's --mode
// auto scores them so, docs/semantics.md §7), and every case's metadata
// equals run's --cases-out field by field. Differences on purpose, named
// and counted: a case run skips after a compile error is
// compile_error_skipped where verl ran it to compile_error (§6, §9);
// stdout and stderr past --cases-out-max-text are cut; an assert_case
// row's missing expected output is null in verl's metadata and the text
// None in run's cases; a call-based case's traceback is in the words of
// verl-score's own driver (§3), so only whether there is one is compared.
func TestVerlScorerAgainstServe(t *testing.T) {
	py := clientsPython(t)
	needInPython(t, py, "import importlib.metadata as m; m.distribution('verl')", "verl")
	files, err := filepath.Glob("../../shared/data/real/*.jsonl")
	if err != nil || len(files) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real corpus: %v", err)
		}
		t.Skip("SKIPPED LOUDLY: the real corpus (../shared/data/real) is not here")
	}
	// every fourth row in the README's command; every row with
	// VERL_SCORE_VERL_ALL_ROWS=1 (a step of .ci/run of its own, for time)
	every := 4
	if os.Getenv("VERL_SCORE_VERL_ALL_ROWS") == "1" {
		every = 1
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if i%every == 0 {
				b.WriteString(l + "\n")
			}
		}
	}
	dir := t.TempDir()
	rows := writeFile(t, dir, "sample.jsonl", b.String())
	out, cases := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "cases.jsonl")
	if code, stdout, stderr := run(context.Background(), "run", rows, "-o", out, "--cases-out", cases, "-q"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	scored := readJSONL(t, out)
	runCases := map[[3]int]map[string]any{}
	for _, c := range readJSONL(t, cases) {
		if _, ok := c["case_index"]; !ok {
			continue // the provenance line
		}
		runCases[[3]int{int(c["row"].(float64)), int(c["response_index"].(float64)), int(c["case_index"].(float64))}] = c
	}

	url := startNode(t, buildBinary(t), "--slots", "2")
	verl := python(t, py, "../testdata/clients/verl_scorer.py", rows, url)
	var responses, compared, skipped, routed int
	named := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(verl), "\n") {
		var v struct {
			Row, Response int
			DataSource    string           `json:"data_source"`
			Score         float64          `json:"score"`
			Default       *float64         `json:"default_compute_score"`
			Meta          []map[string]any `json:"meta"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		responses++
		want := v.Score
		if v.Default != nil {
			want = *v.Default
			routed++
		}
		got := scored[v.Row]["reward"].([]any)[v.Response].(float64)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("row %d response %d (%s): run %v, verl %v", v.Row, v.Response, v.DataSource, got, want)
		}
		for _, m := range v.Meta {
			ci, ok := m["case_index"].(float64)
			if !ok {
				continue // verl's {"error": ...} for a response it could not run
			}
			rc := runCases[[3]int{v.Row, v.Response, int(ci)}]
			if rc == nil {
				t.Errorf("row %d response %d case %d: not in run's cases", v.Row, v.Response, int(ci))
				continue
			}
			if rc["status"] == "compile_error_skipped" && m["status"] == "compile_error" {
				skipped++
				continue
			}
			compared++
			gt, _ := scored[v.Row]["reward_model"].(map[string]any)["ground_truth"].(string)
			callBased := strings.Contains(gt, `"fn_name"`)
			for _, k := range []string{"input", "expected_output", "status", "exit_code", "api_status", "compile_status",
				"run_status", "stdout", "stderr"} {
				a, b := m[k], rc[k]
				if s, ok := a.(string); ok && (k == "stdout" || k == "stderr") && (len(s) >= 4096 || m["status"] == "timeout") {
					continue // cut by --cases-out-max-text; a timeout's output is its moment's
				}
				if k == "expected_output" && a == nil && b == "None" {
					named["assert_case's missing output: verl null, run's cases the text None"]++
					continue
				}
				if k == "stderr" && callBased && (a == "") == (b == "") {
					if a != b {
						// the driver is verl-score's own (docs/semantics.md §3): a
						// traceback in other words than verl's driver's
						named["a call-based case's stderr in the driver's own words"]++
					}
					continue
				}
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("row %d response %d case %d: %s verl %.200q, run %.200q", v.Row, v.Response, int(ci), k,
						fmt.Sprint(a), fmt.Sprint(b))
				}
			}
		}
	}
	t.Logf("verl's scorer against serve: %d responses (%d through default_compute_score), %d cases compared field by "+
		"field, %d skipped after a compile error; differences on purpose: %v", responses, routed, compared, skipped, named)
	if responses == 0 || compared == 0 {
		t.Fatal("nothing compared")
	}
}
