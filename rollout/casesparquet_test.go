package rollout

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// A cases file written as parquet reads back as the JSON lines it was
// written from: every key of CasesSchema, nulls, the checker's object, the
// audit's list; a line without a key reads back without it.
func TestCasesParquetRoundTrip(t *testing.T) {
	lines := []string{
		`{"row":0,"response_index":1,"data_source":"taco","case_index":2,"verdict":1,"input":"1\n","expected_output":"1\n","api_request_error":null,"status":"success","stdout":"1\n","stderr":"","exit_code":0,"duration":0.25,"compile_duration":1.5,"compile_stderr":"","api_status":"Success","compile_status":"Finished","run_status":"Finished","attempts":1,"infra_error":false,"cpu_time":0.01,"compile_cpu_time":1.2,"audit":["always_true"]}`,
		`{"row":1,"response_index":0,"data_source":"","case_index":0,"verdict":-1,"input":"","expected_output":"x","api_request_error":"connection refused","status":"api_error","stdout":null,"stderr":null,"exit_code":null,"duration":null,"attempts":5,"infra_error":true,"verdict_exact":0,"checker":{"exit_code":1,"output":"no","error":""},"shared":true,"cached":true,"starved_reruns":1,"cpu_wait":2.5}`,
	}
	path := filepath.Join(t.TempDir(), "cases.parquet")
	w, err := CreateCasesParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if err := w.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	w.SetKeyValue("verl_score.provenance", `{"tool":"verl-score"}`)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	var got []string
	kv, err := ReadCasesParquet(path, func(b []byte) error { got = append(got, string(b)); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if kv["verl_score.provenance"] != `{"tool":"verl-score"}` {
		t.Errorf("metadata %v", kv)
	}
	if len(got) != len(lines) {
		t.Fatalf("%d cases read back, want %d", len(got), len(lines))
	}
	for i := range lines {
		var want, back map[string]any
		json.Unmarshal([]byte(lines[i]), &want)
		json.Unmarshal([]byte(got[i]), &back)
		for k, v := range want {
			if v == nil {
				delete(want, k) // a null reads back as absent
			}
		}
		if !reflect.DeepEqual(want, back) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got[i], lines[i])
		}
	}
}
