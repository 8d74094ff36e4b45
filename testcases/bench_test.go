package testcases

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// typicalGroundTruth is a string-wrapped stdin/stdout ground truth with ten
// small cases, the usual codecontests/taco shape.
func typicalGroundTruth() []byte {
	var in, out []string
	for i := range 10 {
		in = append(in, fmt.Sprintf("%d %d\n%s\n", i, i*7, strings.Repeat("1 2 3 ", 10)))
		out = append(out, fmt.Sprintf("%d\n", i*13))
	}
	inner, _ := json.Marshal(map[string][]string{"inputs": in, "outputs": out})
	raw, _ := json.Marshal(string(inner))
	return raw
}

const benchSolution = "import sys\nn, m = map(int, input().split())\nprint(n * 13)\n"

func BenchmarkParseProgram(b *testing.B) {
	raw := typicalGroundTruth()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		set, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		for i := range set.Cases {
			_ = set.Program(benchSolution, i, "python")
		}
	}
}

// BenchmarkBaselineEncodingJSON decodes the same ground truth with
// encoding/json into maps (what a naive port would do), for comparison.
func BenchmarkBaselineEncodingJSON(b *testing.B) {
	raw := typicalGroundTruth()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			b.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			b.Fatal(err)
		}
		for range m["inputs"].([]any) {
			_ = benchSolution + "\n\n"
		}
	}
}

func BenchmarkWrapFnName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = WrapFnName(benchSolution, "solve")
	}
}
