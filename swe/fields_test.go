package swe

import (
	"encoding/json"
	"reflect"
	"testing"
)

// An instance sent as its fields (serve's /run_swe) is read back whole.
func TestFieldsRoundTrip(t *testing.T) {
	for _, gt := range []map[string]any{
		{"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "test_patch": "diff --git a/t b/t\n",
			"version": "1.0", "FAIL_TO_PASS": `["t::a"]`, "PASS_TO_PASS": []any{"t::b", "t::c"}, "image": "o/r:1",
			"workdir": "/repo", "install_config": map[string]any{"test_cmd": "pytest -rA", "log_parser": "parse_log_pytest"}},
		{"instance_id": "o__r-2", "base_commit": "def", "FAIL_TO_PASS": []any{}, "PASS_TO_PASS": []any{},
			"eval_script": "echo hi"},
	} {
		want, err := ParseInstance(gt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(want.Fields())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got, err := ParseInstance(m)
		if err != nil {
			t.Fatal(err)
		}
		norm := func(i *Instance) {
			if i.Install != nil && len(i.Install.EvalCommands) == 0 {
				i.Install.EvalCommands = nil
			}
		}
		norm(want)
		norm(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
		}
	}
}
