package testcases

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wantCase is a Case with plain fields for comparison; "<nil>" stands for
// a nil pointer.
type wantCase struct {
	stdin, input, expected, expectedText, assert string
}

const null = "<nil>"

func deref(p *string) string {
	if p == nil {
		return null
	}
	return *p
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		wantErr  error
		fnName   string
		mismatch bool
		cases    []wantCase
	}{
		{
			name: "string-wrapped stdin cases",
			raw:  quoteJSON(`{"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}`),
			cases: []wantCase{
				{"1 2\n", "1 2\n", "3\n", "3\n", ""},
				{"3 4\n", "3 4\n", "7\n", "7\n", ""},
			},
		},
		{
			name:  "object ground truth",
			raw:   `{"inputs": ["x"], "outputs": ["y"]}`,
			cases: []wantCase{{"x", "x", "y", "y", ""}},
		},
		{
			name: "non-string values rendered as Python str",
			raw:  `{"inputs": [[1, "a"], 5, 2.0, true, {"k": null}], "outputs": [1e16, [], "s", false, 0.1]}`,
			cases: []wantCase{
				{"[1, 'a']", "[1, 'a']", "1e+16", "1e+16", ""},
				{"5", "5", "[]", "[]", ""},
				{"2.0", "2.0", "s", "s", ""},
				{"True", "True", "False", "False", ""},
				{"{'k': None}", "{'k': None}", "0.1", "0.1", ""},
			},
		},
		{
			name:  "null input and output",
			raw:   `{"inputs": [null], "outputs": [null]}`,
			cases: []wantCase{{null, "None", null, "None", ""}},
		},
		{
			name:   "fn_name",
			raw:    quoteJSON(`{"inputs": ["[1, 2]\n3"], "outputs": ["[1]"], "fn_name": "twoSum"}`),
			fnName: "twoSum",
			cases:  []wantCase{{"[1, 2]\n3", "[1, 2]\n3", "[1]", "[1]", ""}},
		},
		{
			name:  "empty and null fn_name mean not call-based",
			raw:   `{"inputs": ["a"], "outputs": ["b"], "fn_name": ""}`,
			cases: []wantCase{{"a", "a", "b", "b", ""}},
		},
		{
			name:  "null fn_name",
			raw:   `{"inputs": ["a"], "outputs": ["b"], "fn_name": null}`,
			cases: []wantCase{{"a", "a", "b", "b", ""}},
		},
		{
			name:  "assert_case defaults inputs and outputs",
			raw:   quoteJSON(`{"assert_case": ["assert f(1) == 2", "assert f(2) == 3"]}`),
			cases: []wantCase{{"", "", null, "None", "assert f(1) == 2"}, {"", "", null, "None", "assert f(2) == 3"}},
		},
		{
			name:  "assert_case keeps given inputs",
			raw:   `{"assert_case": ["assert g()"], "inputs": ["in"]}`,
			cases: []wantCase{{"in", "in", null, "None", "assert g()"}},
		},
		{
			name:  "assert_case keeps given outputs",
			raw:   `{"assert_case": ["assert g()"], "outputs": ["out"]}`,
			cases: []wantCase{{"", "", "out", "out", "assert g()"}},
		},
		{
			name:     "assert cases of another length",
			raw:      `{"assert_case": ["a", "b"], "inputs": ["1"], "outputs": ["2"]}`,
			mismatch: true,
			cases:    []wantCase{{"1", "1", "2", "2", "a"}},
		},
		{
			name:     "inputs and outputs of different lengths",
			raw:      `{"inputs": ["1", "2", null], "outputs": ["x"]}`,
			mismatch: true,
			cases:    []wantCase{{"1", "1", "x", "x", ""}, {"2", "2", null, "None", ""}, {null, "None", null, "None", ""}},
		},
		{
			name:     "mismatch is decided before a bad assert_case is looked at",
			raw:      `{"inputs": ["1", "2"], "outputs": ["x"], "assert_case": null}`,
			mismatch: true,
			cases:    []wantCase{{"1", "1", "x", "x", ""}, {"2", "2", null, "None", ""}},
		},
		{name: "zero cases", raw: `{"inputs": [], "outputs": []}`},
		{name: "zero cases with a bad outputs", raw: `{"inputs": [], "outputs": 3}`},
		{name: "zero assert cases", raw: `{"assert_case": []}`},
		{
			name:  "string inputs count as characters",
			raw:   `{"inputs": "ab", "outputs": "cd"}`,
			cases: []wantCase{{"a", "a", "c", "c", ""}, {"b", "b", "d", "d", ""}},
		},
		{
			name:  "object inputs iterate their keys",
			raw:   `{"inputs": {"k1": 1, "k2": 2}, "outputs": ["x", "y"]}`,
			cases: []wantCase{{"k1", "k1", "x", "x", ""}, {"k2", "k2", "y", "y", ""}},
		},
		{name: "missing outputs", raw: `{"inputs": ["1"]}`, wantErr: ErrInvalidStructure},
		{name: "missing inputs", raw: quoteJSON(`{"outputs": ["1"]}`), wantErr: ErrInvalidStructure},
		{name: "empty object", raw: `{}`, wantErr: ErrInvalidStructure},
		{name: "assert_case not a list", raw: `{"assert_case": "assert x"}`, wantErr: ErrInvalidStructure},
		{name: "string holding a list", raw: quoteJSON(`[1, 2]`), wantErr: ErrInvalidStructure},
		{name: "string holding null", raw: quoteJSON(`null`), wantErr: ErrInvalidStructure},
		{
			name:    "string holding a string",
			raw:     quoteJSON(quoteJSON(`{"inputs": [], "outputs": []}`)),
			wantErr: ErrInvalidStructure,
		},
		{name: "invalid JSON", raw: `{"inputs": [`, wantErr: ErrInvalidJSON},
		{
			name:    "invalid JSON inside the string",
			raw:     quoteJSON(`{"inputs": ["1"], "outputs": ["2"],}`),
			wantErr: ErrInvalidJSON,
		},
		{name: "empty input", raw: ``, wantErr: ErrInvalidJSON},
		{name: "empty string", raw: `""`, wantErr: ErrInvalidJSON},
		{name: "null ground truth", raw: `null`, wantErr: ErrUnusable},
		{name: "list ground truth", raw: `[{"inputs": [], "outputs": []}]`, wantErr: ErrUnusable},
		{name: "number ground truth", raw: `3`, wantErr: ErrUnusable},
		{name: "inputs without a length", raw: `{"inputs": 3, "outputs": [1]}`, wantErr: ErrUnusable},
		{name: "null inputs", raw: `{"inputs": null, "outputs": null}`, wantErr: ErrUnusable},
		{name: "outputs without a length", raw: `{"inputs": ["1"], "outputs": null}`, wantErr: ErrUnusable},
		{name: "outputs an object", raw: `{"inputs": ["1"], "outputs": {"0": "x"}}`, wantErr: ErrUnusable},
		{name: "assert case not a string", raw: `{"assert_case": ["ok", 3]}`, wantErr: ErrUnusable},
		{
			name:    "assert_case with outputs present but null",
			raw:     `{"assert_case": ["a"], "outputs": null}`,
			wantErr: ErrUnusable,
		},
		{
			name:    "null assert_case with inputs",
			raw:     `{"assert_case": null, "inputs": ["1"], "outputs": ["2"]}`,
			wantErr: ErrUnusable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse([]byte(tt.raw))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Parse(%s) error = %v, want %v", tt.raw, err, tt.wantErr)
				}
				if set != nil {
					t.Errorf("Parse(%s) returned a set with its error", tt.raw)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.raw, err)
			}
			if set.FnName != tt.fnName {
				t.Errorf("FnName = %q, want %q", set.FnName, tt.fnName)
			}
			if set.Mismatch != tt.mismatch {
				t.Errorf("Mismatch = %v, want %v", set.Mismatch, tt.mismatch)
			}
			if len(set.Cases) != len(tt.cases) {
				t.Fatalf("got %d cases, want %d", len(set.Cases), len(tt.cases))
			}
			for i, c := range set.Cases {
				got := wantCase{deref(c.Stdin), c.Input, deref(c.Expected), c.ExpectedText, c.Assert}
				if got != tt.cases[i] {
					t.Errorf("case %d = %q, want %q", i, got, tt.cases[i])
				}
			}
		})
	}
}

func TestParseErrorText(t *testing.T) {
	_, err := Parse([]byte(`{"inputs": ["1"]}`))
	if err == nil || !strings.HasPrefix(err.Error(), "invalid test_cases structure") {
		t.Errorf("error = %v, want it to start with %q", err, "invalid test_cases structure")
	}
}

func TestParseFnNameNonString(t *testing.T) {
	tests := []struct {
		fn   string
		want string
	}{
		{`"f"`, "f"},
		{`5`, "5"},
		{`0`, ""},
		{`true`, "True"},
		{`false`, ""},
		{`[]`, ""},
		{`["a"]`, "['a']"},
	}
	for _, tt := range tests {
		set, err := Parse([]byte(`{"inputs": ["1"], "outputs": ["2"], "fn_name": ` + tt.fn + `}`))
		if err != nil {
			t.Fatalf("fn_name %s: %v", tt.fn, err)
		}
		if set.FnName != tt.want {
			t.Errorf("fn_name %s: FnName = %q, want %q", tt.fn, set.FnName, tt.want)
		}
	}
}

func TestProgram(t *testing.T) {
	plain, err := Parse([]byte(`{"inputs": ["1"], "outputs": ["2"]}`))
	if err != nil {
		t.Fatal(err)
	}
	asserts, err := Parse([]byte(`{"assert_case": ["assert f() == 1", "assert f() == 2"]}`))
	if err != nil {
		t.Fatal(err)
	}
	call, err := Parse([]byte(`{"inputs": ["1"], "outputs": ["2"], "fn_name": "f"}`))
	if err != nil {
		t.Fatal(err)
	}
	callAssert, err := Parse([]byte(`{"assert_case": ["assert f(1) == 2"], "fn_name": "f"}`))
	if err != nil {
		t.Fatal(err)
	}
	const sol = "def f(x=1):\n    return x"
	tests := []struct {
		name string
		set  *Set
		i    int
		lang string
		want string
	}{
		{"stdin case", plain, 0, "python", sol + "\n\n"},
		{"assert case 0", asserts, 0, "python", sol + "\n\nassert f() == 1"},
		{"assert case 1", asserts, 1, "cpp", sol + "\n\nassert f() == 2"},
		{"fn_name in python", call, 0, "python", WrapFnName(sol+"\n\n", "f")},
		{"fn_name ignored for cpp", call, 0, "cpp", sol + "\n\n"},
		{"fn_name with assert wraps both", callAssert, 0, "python", WrapFnName(sol+"\n\nassert f(1) == 2", "f")},
		{"index out of range", asserts, 9, "python", sol + "\n\n"},
	}
	for _, tt := range tests {
		if got := tt.set.Program(sol, tt.i, tt.lang); got != tt.want {
			t.Errorf("%s: Program = %q, want %q", tt.name, got, tt.want)
		}
	}
	if plain.HasAsserts() || !asserts.HasAsserts() {
		t.Errorf("HasAsserts = %v, %v, want false, true", plain.HasAsserts(), asserts.HasAsserts())
	}
}

// TestParseRealData parses the ground truth of every row of the shared
// data sets: none of them is invalid.
func TestParseRealData(t *testing.T) {
	files, _ := filepath.Glob("../../shared/data/real/*.jsonl")
	more, _ := filepath.Glob("../../shared/data/verl_samples/*.jsonl")
	files = append(files, more...)
	if len(files) == 0 {
		skipNoSharedData(t, "no *.jsonl")
	}
	total := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		rows, cases, callBased, assertRows := 0, 0, 0, 0
		for sc.Scan() {
			var row struct {
				RewardModel struct {
					GroundTruth json.RawMessage `json:"ground_truth"`
				} `json:"reward_model"`
			}
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatalf("%s row %d: %v", path, rows, err)
			}
			set, err := Parse(row.RewardModel.GroundTruth)
			if err != nil {
				t.Errorf("%s row %d: %v", path, rows, err)
			} else {
				if set.Mismatch || len(set.Cases) == 0 {
					t.Errorf("%s row %d: mismatch=%v cases=%d", path, rows, set.Mismatch, len(set.Cases))
				}
				cases += len(set.Cases)
				if set.FnName != "" {
					callBased++
				}
				if set.HasAsserts() {
					assertRows++
				}
			}
			rows++
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		total += rows
		t.Logf(
			"%s: %d rows, %d cases, %d fn_name rows, %d assert rows",
			filepath.Base(path),
			rows,
			cases,
			callBased,
			assertRows,
		)
	}
	t.Logf("%d rows in all", total)
}

// TestParseMatchesPythonRendering checks the real data's rendered inputs
// and expected outputs against Python's str() of json.loads.
func TestParseMatchesPythonRendering(t *testing.T) {
	needPython(t)
	path := "../../shared/data/real/livecodebench.jsonl"
	data, err := os.ReadFile(path)
	if err != nil {
		skipNoSharedData(t, err)
	}
	const script = `import sys, json
out = []
for line in sys.stdin:
    gt = json.loads(line)["reward_model"]["ground_truth"]
    tc = json.loads(gt) if isinstance(gt, str) else gt
    out.append([[str(x) for x in tc["inputs"]], [str(x) for x in tc["outputs"]]])
sys.stdout.write(json.dumps(out))
`
	var want [][2][]string
	if err := json.Unmarshal([]byte(runPython(t, script, string(data))), &want); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, line := range lines {
		var row struct {
			RewardModel struct {
				GroundTruth json.RawMessage `json:"ground_truth"`
			} `json:"reward_model"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		set, err := Parse(row.RewardModel.GroundTruth)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		for j, c := range set.Cases {
			if c.Input != want[i][0][j] || c.ExpectedText != want[i][1][j] {
				t.Errorf("row %d case %d: input/expected = %s/%s, want %s/%s", i, j,
					strconv.Quote(c.Input), strconv.Quote(c.ExpectedText),
					strconv.Quote(want[i][0][j]), strconv.Quote(want[i][1][j]))
			}
		}
	}
}

// skipNoSharedData skips a test whose shared data is not here, loudly;
// under CI=true it fails instead.
func skipNoSharedData(t *testing.T, why any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("the shared data (../shared/data) is missing under CI: %v", why)
	}
	t.Skipf("SKIPPED (LOUD): the shared data (../shared/data) is not here: %v", why)
}
