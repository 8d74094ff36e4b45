package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCppCompileRunVsServe: the compile time of a bits/stdc++.h
// program as `run` measures it (a fresh embedded sandbox per command, as
// each `verl-score run` process starts one) against a long-lived `serve`,
// interleaved in one run. Each iteration compiles a program not compiled
// before, so no compile is shared. `run` used to compile plainly while its
// new sandbox looked for the precompiled header in the background; now a
// compile waits for it, untimed.
//
//	go test -run x -bench CppCompileRunVsServe -benchtime 5x ./cmd
func BenchmarkCppCompileRunVsServe(b *testing.B) {
	if _, err := os.Stat("/usr/bin/g++"); err != nil {
		b.Skip("no g++")
	}
	dir := b.TempDir()
	srv := sandboxServer(b, 0, nil)
	url := srv.URL + "/run_code"
	n := 0
	compile := func(args ...string) float64 {
		n++
		in := filepath.Join(dir, "in.jsonl")
		prog := fmt.Sprintf(
			"#include <bits/stdc++.h>\nusing namespace std;\nint main() { long long n; cin >> n; vector<long long> v(n); iota(v.begin(), v.end(), %d); cout << accumulate(v.begin(), v.end(), 0LL) << endl; }\n",
			n,
		)
		row, _ := json.Marshal(map[string]any{"data_source": "x", "responses": []string{"```cpp\n" + prog + "```"},
			"reward_model": map[string]any{"ground_truth": `{"inputs": ["3\n"], "outputs": ["x\n"]}`}})
		if err := os.WriteFile(in, append(row, '\n'), 0o644); err != nil {
			b.Fatal(err)
		}
		cases := filepath.Join(dir, "cases.jsonl")
		full := append(
			[]string{"run", in, "-o", filepath.Join(dir, "out.jsonl"), "-q", "--language", "cpp", "--cases-out", cases},
			args...)
		if code, _, stderr := run(context.Background(), full...); code != ExitOK {
			b.Fatalf("exit %d: %s", code, stderr)
		}
		data, err := os.ReadFile(cases)
		if err != nil {
			b.Fatal(err)
		}
		var c struct {
			CompileDuration *float64 `json:"compile_duration"`
			Status          string   `json:"status"`
		}
		if err := json.Unmarshal(data, &c); err != nil || c.CompileDuration == nil {
			b.Fatalf("no compile duration (%v): %s", err, data)
		}
		return *c.CompileDuration
	}
	compile("--sandbox-url", url) // the server's caches, built once
	var embedded, served float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		embedded += compile()
		served += compile("--sandbox-url", url)
	}
	b.ReportMetric(embedded/float64(b.N)*1000, "run-compile-ms")
	b.ReportMetric(served/float64(b.N)*1000, "serve-compile-ms")
	b.ReportMetric(embedded/served, "run/serve")
}
