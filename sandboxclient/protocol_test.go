package sandboxclient

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The wire carries the protocol's fields alone, in SandboxFusion's names;
// HTML's characters are escaped as the encoder was told, as for a plain
// struct; what is not on the wire reads back zero.
func TestResponseOnTheWire(t *testing.T) {
	rc := 0
	r := Response{Status: StatusSuccess, Message: "a<b&c",
		RunResult: &StepResult{
			Status:        StepFinished,
			ExecutionTime: 0.5,
			ReturnCode:    &rc,
			Stdout:        "<html>\n",
			Stderr:        "",
			Starved:       true,
			CPUTime:       1,
			CPUWait:       2,
		},
		Files: map[string]string{
			"out.txt": "eA==",
		}, Attempts: 3, StarvedReruns: 1, QueueWait: time.Second, QueueWaitKnown: true}
	const want = `{"status":"Success","message":"a<b&c","compile_result":null,"run_result":{"status":"Finished","execution_time":0.5,` +
		`"return_code":0,"stdout":"<html>\n","stderr":""},"executor_pod_name":null,"files":{"out.txt":"eA=="}}`
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil || strings.TrimSpace(buf.String()) != want {
		t.Errorf("encoded without HTML escapes:\n got %s (%v)\nwant %s", buf.String(), err, want)
	}
	b, err := json.Marshal(&r)
	escaped := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`).Replace(want)
	if err != nil || string(b) != escaped {
		t.Errorf("json.Marshal:\n got %s (%v)\nwant %s", b, err, escaped)
	}
	var back Response
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Attempts != 0 || back.QueueWaitKnown || back.RunResult.Starved ||
		back.RunResult.CPUTime != 0 || back.Message != r.Message ||
		back.RunResult.Stdout != r.RunResult.Stdout || *back.RunResult.ReturnCode != 0 || back.CompileResult != nil ||
		back.Files["out.txt"] != "eA==" {
		t.Errorf("read back %+v, run %+v", back, back.RunResult)
	}
}
