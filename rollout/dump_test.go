package rollout

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// dumpLine is a rollout dump line as verl writes it.
func dumpLine(step, i int, score float64, extra string) string {
	gts := fmt.Sprintf(`"{\"inputs\": [\"%d\\n\"], \"outputs\": [\"%d\\n\"]}"`, i, i)
	if i%5 == 4 {
		gts = "null" // gts may be null
	}
	return fmt.Sprintf(
		`{"input": "user: add %d", "output": "`+"```python\\nprint(%d)\\n```"+`", "gts": %s, "score": %v, "step": %d%s}`,
		i,
		i,
		gts,
		score,
		step,
		extra,
	)
}

func TestDumpDirectory(t *testing.T) {
	dir := t.TempDir()
	var want []string // expected order of the "input" texts
	for _, step := range []int{10, 2, 1} {
		var b strings.Builder
		for i := 0; i < 3; i++ {
			n := step*100 + i
			extra := ""
			if step == 2 {
				extra = `, "data_source": "codecontests", "request_id": "r"`
			}
			b.WriteString(dumpLine(step, n, 0.5, extra) + "\n")
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.jsonl", step)), []byte(b.String()), 0o644)
	}
	for _, step := range []int{1, 2, 10} {
		for i := 0; i < 3; i++ {
			want = append(want, fmt.Sprintf("user: add %d", step*100+i))
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "3.jsonl.bak"), []byte("x"), 0o644)

	var warnings []string
	opts := DefaultOptions()
	opts.BatchRows = 2
	opts.Warn = func(m string) { warnings = append(warnings, m) }
	src, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Kind() != Dump {
		t.Errorf("Kind() = %v, want dump", src.Kind())
	}
	if len(warnings) != 2 || !strings.Contains(strings.Join(warnings, "\n"), "notes.txt") ||
		!strings.Contains(strings.Join(warnings, "\n"), "3.jsonl.bak") {
		t.Errorf("warnings = %q, want the two skipped files named", warnings)
	}
	outPath := filepath.Join(t.TempDir(), "rescored.jsonl")
	w, err := Create(outPath, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := scoreAll(t, src, w)
	if len(rows) != 9 {
		t.Fatalf("got %d rows, want 9", len(rows))
	}
	wantFiles := []string{
		"1.jsonl",
		"1.jsonl",
		"1.jsonl",
		"2.jsonl",
		"2.jsonl",
		"2.jsonl",
		"10.jsonl",
		"10.jsonl",
		"10.jsonl",
	}
	for i, row := range rows {
		if row.Index != i || filepath.Base(row.File) != wantFiles[i] || row.Line != i%3+1 {
			t.Errorf(
				"row %d: Index %d, File %s, Line %d; want %d, %s, %d",
				i,
				row.Index,
				filepath.Base(row.File),
				row.Line,
				i,
				wantFiles[i],
				i%3+1,
			)
		}
		n := []int{1, 2, 10}[i/3]*100 + i%3
		if row.ResponseIsList || len(row.Responses) != 1 || row.Responses[0] != fmt.Sprintf("```python\nprint(%d)\n```", n) {
			t.Errorf("row %d: responses %q (list %v)", i, row.Responses, row.ResponseIsList)
		}
		if !reflect.DeepEqual(row.RefScores, []float64{0.5}) {
			t.Errorf("row %d: RefScores = %v, want [0.5]", i, row.RefScores)
		}
		wantDS := ""
		if i/3 == 1 {
			wantDS = "codecontests"
		}
		if row.DataSource != wantDS {
			t.Errorf("row %d: DataSource = %q, want %q", i, row.DataSource, wantDS)
		}
		if n%5 == 4 {
			if row.Err == nil || !strings.HasSuffix(row.Err.Error(), `field "gts": null`) {
				t.Errorf("row %d: null gts gave error %v", i, row.Err)
			}
		} else if want := fmt.Sprintf(`"{\"inputs\": [\"%d\\n\"], \"outputs\": [\"%d\\n\"]}"`, n,
			n); string(row.GroundTruth) != want {
			t.Errorf("row %d: ground truth %s, want %s", i, row.GroundTruth, want)
		}
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, line := range lines {
		if !strings.Contains(line, fmt.Sprintf(`"input": %q`, want[i])) {
			t.Errorf("output line %d is not %q's", i+1, want[i])
		}
		// score is kept as it was, and the four keys follow it.
		if !strings.Contains(line, `"score": 0.5, "step": `) ||
			!strings.Contains(line, `}, "reward":`) && !strings.Contains(line, `,"reward":`) {
			t.Errorf("output line %d: score not kept or results not appended: %s", i+1, line)
		}
		if strings.Contains(line, `"reward":[`) {
			t.Errorf("output line %d: dump results must be scalars: %s", i+1, line)
		}
	}
	sr, err := OpenScored(outPath, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i := range rows {
		got, err := sr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.RefScores, []float64{0.5}) || got.ResponseIsList {
			t.Errorf("row %d read back with RefScores %v, list %v; want [0.5], false", i, got.RefScores, got.ResponseIsList)
		}
	}
}

func TestDumpDirectoryWithoutStepFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("{}\n"), 0o644)
	if _, err := Open(dir, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "no <step>.jsonl files") {
		t.Errorf("Open error = %v, want one saying there are no <step>.jsonl files", err)
	}
}

func TestDumpFileRecognisedByFields(t *testing.T) {
	tests := []struct {
		name  string
		first string
		want  Kind
	}{
		{"dump", dumpLine(3, 1, 1, ""), Dump},
		{
			"dataset row with output and gts keys",
			`{"output":"x","gts":"{}","responses":["y"],"reward_model":{"ground_truth":"{}"}}`,
			JSONL,
		},
		{"dataset row", `{"responses":["y"],"reward_model":{"ground_truth":"{}"}}`, JSONL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rollouts.jsonl")
			os.WriteFile(path, []byte("\n"+tt.first+"\n"), 0o644)
			r, err := Open(path, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Kind() != tt.want {
				t.Errorf("Kind() = %v, want %v", r.Kind(), tt.want)
			}
			rows := rowsOf(readAll(t, r))
			if len(rows) != 1 || rows[0].Err != nil || rows[0].Line != 2 {
				t.Fatalf("rows = %+v, want one row on line 2 without error", rows)
			}
			if tt.want == Dump && rows[0].Responses[0] != "```python\nprint(1)\n```" {
				t.Errorf("dump response = %q, want the output field", rows[0].Responses[0])
			}
			if tt.want == JSONL && rows[0].Responses[0] != "y" {
				t.Errorf("response = %q, want the responses field", rows[0].Responses[0])
			}
		})
	}
}

func TestStdinReaderToStream(t *testing.T) {
	in := dumpLine(1, 1, 0, "") + "\n" + dumpLine(1, 2, 1, "")
	r, err := OpenReader(strings.NewReader(in), "-", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind() != Dump {
		t.Errorf("Kind() = %v, want dump", r.Kind())
	}
	var out bytes.Buffer
	w := NewJSONLWriter(&out)
	rows := scoreAll(t, r, w)
	if len(rows) != 2 || rows[1].File != "-" || rows[1].Line != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(
			lines[1],
			strings.TrimSuffix(dumpLine(1, 2, 1, ""), "}")+`,"reward":1.0,"case_results":[false,-1],`,
		) {
		t.Errorf("stdout = %s", out.String())
	}
}
