package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	if out, err := exec.Command(py, "-c", "import sandbox_fusion").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("SKIPPED LOUDLY: no sandbox-fusion at %s: %s", py, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := buildBinary(t)
	u := strings.TrimSuffix(startServe(t, bin, "--slots", "4"), "/run_code")
	full := strings.TrimSuffix(startServe(t, bin, "--slots", "1", "--max-queue", "0"), "/run_code")
	out := python(t, py, "../testdata/clients/sandbox_fusion_client.py", u, full)
	t.Logf("SandboxFusion's client: %s", strings.TrimSpace(out))
}
