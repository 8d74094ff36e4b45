package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// fixtureLines returns the raw lines of the JSONL fixture.
func fixtureLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(fixtureJSONL)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

func TestJSONLRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fx := fixtureLines(t)
	huge := strings.Repeat("x = 1  # padding\n", 5<<20/17) // a 5 MB response
	hugeLine, _ := json.Marshal(map[string]any{
		"data_source": "codecontests", "responses": []string{huge, "print(1)"},
		"reward_model": map[string]any{"ground_truth": `{"inputs":["1"],"outputs":["1"]}`},
	})
	input := [][]byte{
		fx[0],
		fx[1],
		[]byte(`{"responses": ["print(1)"], "reward_model": {"ground_truth": "{}"}, broken`),
		[]byte{}, // blank lines are not rows
		fx[2],
		hugeLine,
		[]byte(
			`{"data_source":"x","responses":"print(2)","reward_model":{"ground_truth":{"inputs":["1"],"outputs":["2"]}},"score":0.5}` + "\r",
		), // CRLF
		[]byte(`{"data_source":"x","responses":["a"]}   `),
		[]byte(`{}`),
		fx[3],
	}
	inPath := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(inPath, append(bytes.Join(input, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.BatchRows = 3
	src, err := Open(inPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Kind() != JSONL {
		t.Errorf("Kind() = %v, want jsonl", src.Kind())
	}
	outPath := filepath.Join(dir, "out.jsonl")
	w, err := Create(outPath, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := scoreAll(t, src, w)

	wantLines := []int{1, 2, 3, 5, 6, 7, 8, 9, 10}
	if len(rows) != len(wantLines) {
		t.Fatalf("got %d rows, want %d", len(rows), len(wantLines))
	}
	wantErrs := map[int]string{
		3: inPath + `:3: not valid JSON: `,
		8: inPath + `:8: field "reward_model.ground_truth": missing`,
		9: inPath + `:9: field "responses": missing`,
	}
	for i, row := range rows {
		if row.Index != i || row.Line != wantLines[i] {
			t.Errorf("row %d: Index, Line = %d, %d; want %d, %d", i, row.Index, row.Line, i, wantLines[i])
		}
		got := ""
		if row.Err != nil {
			got = row.Err.Error()
		}
		if w := wantErrs[row.Line]; !strings.HasPrefix(got, w) || (w == "") != (got == "") {
			t.Errorf("line %d: error %q, want %q", row.Line, got, w)
		}
	}
	if got := rows[4].Responses; len(got) != 2 || got[0] != huge {
		t.Errorf("5 MB response not read whole (%d responses)", len(got))
	}
	if r := rows[5]; r.ResponseIsList || r.Responses[0] != "print(2)" ||
		string(r.GroundTruth) != `{"inputs":["1"],"outputs":["2"]}` ||
		!reflect.DeepEqual(r.RefScores, []float64{0.5}) {
		t.Errorf(
			"line 7: got responses %q (list %v), ground truth %s, scores %v",
			r.Responses,
			r.ResponseIsList,
			r.GroundTruth,
			r.RefScores,
		)
	}

	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	outLines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(outLines) != len(rows) {
		t.Fatalf("output has %d lines, want %d", len(outLines), len(rows))
	}
	for i, row := range rows {
		in := bytes.TrimRight(input[row.Line-1], " \r")
		out := outLines[i]
		if !json.Valid(out) {
			t.Errorf("output line %d is not valid JSON", i+1)
		}
		if row.Line == 3 {
			var bad struct {
				Raw string `json:"_raw_line"`
				Err string `json:"reward_error"`
				R   float64
			}
			json.Unmarshal(out, &bad)
			if bad.Raw != string(in) || !strings.HasPrefix(bad.Err, wantErrs[3]) {
				t.Errorf("bad line written as %s", out)
			}
			continue
		}
		// The input's bytes are kept, the four keys appended.
		prefix := in[:len(in)-1]
		if !bytes.HasPrefix(out, prefix) {
			t.Errorf("output line %d does not start with the input line's bytes", i+1)
		}
		rest := string(out[len(prefix):])
		wantStart := `,"reward":`
		if row.Line == 9 {
			wantStart = `"reward":` // {} has no members to follow
		}
		if !strings.HasPrefix(rest, wantStart) {
			t.Errorf("line %d: appended %.80q, want it to start with %q", row.Line, rest, wantStart)
		}
	}
	// Verdicts 1/0 as JSON booleans, the others as integers (row 1 has
	// Index 0: cases 1, 0 ... see fakeResults).
	if !bytes.Contains(outLines[0], []byte(`"case_results":[[true],[false,-1]]`)) {
		t.Errorf("line 1 case_results not as expected: %s", after(outLines[0], `"reward":`))
	}
	if !bytes.Contains(outLines[1], []byte(`"case_results":[[false,-1]]`)) {
		t.Errorf("line 2 case_results not as expected: %s", after(outLines[1], `"reward":`))
	}
	if !bytes.Contains(outLines[0], []byte(`"reward":[0.0,0.1]`)) {
		t.Errorf("line 1 rewards not written as floats: %s", after(outLines[0], `"reward":`))
	}

	// Read back.
	sr, err := OpenScored(outPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	results := fakeResults(rows)
	for i, row := range rows {
		got, err := sr.Next()
		if err != nil {
			t.Fatal(err)
		}
		want := results[i]
		if row.Err != nil {
			msg := row.Err.Error()
			want = RowResult{
				Rewards:     []float64{0},
				CaseResults: [][]int8{{}},
				CaseStatus:  [][]string{{}},
				Errors:      []*string{&msg},
			}
		}
		if len(want.CaseResults) > 0 && want.CaseResults[0] == nil {
			want.CaseResults[0] = []int8{}
		}
		checkScored(t, got, row, want)
	}
}

func after(b []byte, marker string) string {
	i := bytes.Index(b, []byte(marker))
	if i < 0 {
		return "(no " + marker + ")"
	}
	return string(b[i:])
}

func TestJSONLRowErrors(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{`{"responses":["a"],"reward_model":{"ground_truth":null}}`, `in.jsonl:1: field "reward_model.ground_truth": null`},
		{
			`{"responses":["a"],"reward_model":{"ground_truth":3}}`,
			`in.jsonl:1: field "reward_model.ground_truth": is a number, want a JSON string or object`,
		},
		{
			`{"responses":7,"reward_model":{"ground_truth":"{}"}}`,
			`in.jsonl:1: field "responses": is a number, want a string or a list of strings`,
		},
		{
			`{"responses":["a",1],"reward_model":{"ground_truth":"{}"}}`,
			`in.jsonl:1: field "responses": element 1 is a number, want a string`,
		},
		{
			`{"responses":["a"],"data_source":5,"reward_model":{"ground_truth":"{}"}}`,
			`in.jsonl:1: field "data_source": is a number, want a string`,
		},
		{`[1,2]`, `in.jsonl:1: not a JSON object (it is a list)`},
		{`{"responses":["a"]} {}`, `in.jsonl:1: not valid JSON: invalid character '{' after top-level value`},
		{`{"responses":["a"],"reward_model.ground_truth":"{}"}`, ``}, // a flat dotted key is found too
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r, err := OpenReader(strings.NewReader(tt.line+"\n"), "in.jsonl", DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			rows := rowsOf(readAll(t, r))
			if len(rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(rows))
			}
			got := ""
			if rows[0].Err != nil {
				got = rows[0].Err.Error()
				var re *RowError
				if !errors.As(rows[0].Err, &re) {
					t.Errorf("error is %T, want *RowError", rows[0].Err)
				}
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJSONLToParquet(t *testing.T) {
	dir := t.TempDir()
	fx := fixtureLines(t)
	inPath := filepath.Join(dir, "in.jsonl")
	lines := append([][]byte{}, fx[:4]...)
	lines = append(lines, []byte(`not json`))
	os.WriteFile(inPath, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644)
	src, err := Open(inPath, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	outPath := filepath.Join(dir, "out.parquet")
	w, err := Create(outPath, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := scoreAll(t, src, w)
	tbl := readTable(t, outPath)
	defer tbl.Release()
	want := map[string]arrow.DataType{
		"data_source":  arrow.BinaryTypes.String,
		"prompt":       arrow.BinaryTypes.String, // JSON text
		"reward_model": arrow.BinaryTypes.String, // JSON text
		"responses":    arrow.ListOf(arrow.BinaryTypes.String),
		"reward":       arrow.ListOf(arrow.PrimitiveTypes.Float64),
		"reward_error": arrow.ListOf(arrow.BinaryTypes.String),
	}
	for name, typ := range want {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 || !arrow.TypeEqual(tbl.Schema().Field(idx[0]).Type, typ) {
			t.Errorf("column %s: got %v, want one of type %s", name, idx, typ)
		}
	}
	if tbl.NumRows() != 5 {
		t.Fatalf("got %d rows, want 5", tbl.NumRows())
	}
	sr, err := OpenScored(outPath, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	results := fakeResults(rows)
	for i := range rows {
		got, err := sr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			if len(got.Errors) != 1 || got.Errors[0] == nil || !strings.HasPrefix(*got.Errors[0], inPath+":5: not valid JSON") {
				t.Errorf("bad line read back as %+v", got)
			}
			continue
		}
		checkScored(t, got, rows[i], results[i])
	}

	// A later batch whose value does not fit an inferred int column fails,
	// naming the line and key.
	os.WriteFile(inPath, []byte(`{"responses":["a"],"n":1,"reward_model":{"ground_truth":"{}"}}`+"\n"+
		`{"responses":["a"],"n":"two","reward_model":{"ground_truth":"{}"}}`+"\n"), 0o644)
	opts := DefaultOptions()
	opts.BatchRows = 1
	src2, err := Open(inPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	w2, err := Create(filepath.Join(dir, "out2.parquet"), src2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Abort()
	var werr error
	for _, b := range readAll(t, src2) {
		if werr = w2.Write(b, fakeResults(b.Rows)); werr != nil {
			break
		}
	}
	if werr == nil || !strings.Contains(werr.Error(), `in.jsonl:2: key "n": a string does not fit`) {
		t.Errorf("Write error = %v, want one naming in.jsonl:2 and key \"n\"", werr)
	}
}

func TestScoresWithNull(t *testing.T) {
	r, err := OpenReader(
		strings.NewReader(`{"responses":["a","b"],"reward_model":{"ground_truth":"{}"},"score":[1,null]}`),
		"-",
		DefaultOptions(),
	)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(readAll(t, r))
	if len(rows) != 1 || len(rows[0].RefScores) != 2 || rows[0].RefScores[0] != 1 || !math.IsNaN(rows[0].RefScores[1]) {
		t.Errorf("RefScores = %v, want [1 NaN]", rows[0].RefScores)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end: %v, want io.EOF", err)
	}
}

func TestParseObject(t *testing.T) {
	tests := []struct {
		in   string
		want []member
		err  string
	}{
		{`{}`, nil, ""},
		{` { "a" : 1 , "b":[1,{"c":"}]"}] ,"c\"d":"x\\\"}" , "e":null,"f":-1.5e3,"g":true}  `, []member{
			{"a", json.RawMessage(`1`)},
			{"b", json.RawMessage(`[1,{"c":"}]"}]`)},
			{`c"d`, json.RawMessage(`"x\\\"}"`)},
			{"e", json.RawMessage(`null`)},
			{"f", json.RawMessage(`-1.5e3`)},
			{"g", json.RawMessage(`true`)},
		}, ""},
		{`{"a":{"b":{"c":[]}}}`, []member{{"a", json.RawMessage(`{"b":{"c":[]}}`)}}, ""},
		{`"x"`, nil, "not a JSON object (it is a string)"},
		{`{"a":1`, nil, "not valid JSON: unexpected end of JSON input"},
		{``, nil, "not valid JSON: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		got, err := parseObject([]byte(tt.in))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseObject(%s) = %q, %q; want %q, %q", tt.in, got, gotErr, tt.want, tt.err)
		}
	}
}

func TestJSONArrayRefused(t *testing.T) {
	_, err := OpenReader(strings.NewReader("[\n  {\"responses\": \"a\"}\n]\n"), "data.json", DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "data.json:1: starts a JSON array") {
		t.Errorf("error = %v, want one saying data.json:1 starts a JSON array", err)
	}
}

func TestLanguageKey(t *testing.T) {
	in := strings.Join([]string{
		`{"responses": ["a", "b"], "reward_model": {"ground_truth": "{}"}, "extra_info": {"langs": ["cpp", "go_test"]}}`,
		`{"responses": ["a", "b"], "reward_model": {"ground_truth": "{}"}, "extra_info": {"langs": "java"}}`,
		`{"responses": ["a"], "reward_model": {"ground_truth": "{}"}, "extra_info": {}}`,
		`{"responses": ["a"], "reward_model": {"ground_truth": "{}"}, "extra_info": {"langs": 3}}`,
	}, "\n")
	opts := DefaultOptions()
	opts.LanguageKey = "extra_info.langs"
	r, err := OpenReader(strings.NewReader(in), "l.jsonl", opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{
		{b.Rows[0].Language(0), b.Rows[0].Language(1)},
		{b.Rows[1].Language(0), b.Rows[1].Language(1)},
		{b.Rows[2].Language(0)},
	}
	want := [][]string{{"cpp", "go_test"}, {"java", "java"}, {""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got languages %v, want %v", got, want)
	}
	if err := b.Rows[3].Err; err == nil || !strings.Contains(err.Error(), `l.jsonl:4: field "extra_info.langs"`) {
		t.Errorf("got row error %v, want one naming line 4 and the field", err)
	}
}

// A key none of the first rows has stops the run before it starts; one
// that only some rows lack is an error of those rows.
func TestJSONLMissingKeys(t *testing.T) {
	good := `{"responses":["a"],"data_source":"x","reward_model":{"ground_truth":"{}"}}`
	noGT := `{"responses":["a"],"data_source":"x","reward_model":{"style":"rule"}}`
	for _, tc := range []struct {
		name  string
		lines []string
		opts  Options
		want  string // "" when Open must succeed
	}{
		{"ground truth", []string{noGT, noGT}, DefaultOptions(),
			`in.jsonl (first 2 rows): no ground truth column "reward_model.ground_truth" (columns: responses, data_source, reward_model, reward_model.style)`},
		{"response key", []string{good}, Options{ResponseKey: "response"}, `no response column "response"`},
		{"chosen data source key", []string{good}, Options{DataSourceKey: "source", RequireDataSource: true},
			`no data source column "source"`},
		{"defaulted data source key", []string{`{"responses":["a"],"reward_model":{"ground_truth":"{}"}}`},
			DefaultOptions(), ""},
		{"language key", []string{good}, Options{LanguageKey: "extra_info.lang"}, `no language column "extra_info.lang"`},
		{"some rows lack it", []string{noGT, good}, DefaultOptions(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenReader(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), "in.jsonl", tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				rows := rowsOf(readAll(t, r))
				if len(rows) != len(tc.lines) {
					t.Fatalf("got %d rows, want %d", len(rows), len(tc.lines))
				}
				if tc.name == "some rows lack it" &&
					(rows[0].Err == nil || !strings.Contains(rows[0].Err.Error(),
						`in.jsonl:1: field "reward_model.ground_truth": missing`)) {
					t.Errorf("row 1 error: %v", rows[0].Err)
				}
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrMissingColumn with %q", err, tc.want)
			}
		})
	}
}
