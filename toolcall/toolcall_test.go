package toolcall

import (
	"errors"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// A trajectory in Qwen's Hermes template: two calls in one turn answered
// in order, a call whose arguments are a JSON string, one that is not
// JSON, one of another tool, and a last call the trajectory ends after.
const trajectory = `<think>Let me compute.</think>
<tool_call>
{"name": "code_interpreter", "arguments": {"code": "print(1 + 1)"}}
</tool_call>
<tool_call>
{"name": "code_interpreter", "arguments": {"code": "import sys\nprint('x', file=sys.stderr)", "timeout": 5, "language": "python"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
2
</tool_response>
<tool_response>
x
</tool_response><|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "code_interpreter", "arguments": "{\"code\": \"print(0.1 + 0.2)\"}"}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
0.30000000000000004

</tool_response><|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "code_interpreter", "arguments": {"code": "print(
</tool_call>
<tool_call>
{"name": "search", "arguments": {"query": "verl"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
no stdout here
</tool_response>
<tool_response>
verl is ...
</tool_response><|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "code_interpreter", "arguments": {"code": "print(3)"}}
</tool_call><|im_end|>`

func TestParseHermes(t *testing.T) {
	calls := Parse(trajectory)
	if len(calls) != 6 {
		t.Fatalf("got %d calls, want 6: %+v", len(calls), calls)
	}
	want := []struct {
		code, recorded string
		has            bool
		problem        bool
	}{
		{"print(1 + 1)", "2", true, false},
		{"import sys\nprint('x', file=sys.stderr)", "x", true, false},
		{"print(0.1 + 0.2)", "0.30000000000000004\n", true, false},
		{"", "no stdout here", true, true},
		{"", "verl is ...", true, false},
		{"print(3)", "", false, false},
	}
	for i, w := range want {
		c := calls[i]
		if c.Index != i || c.Code != w.code || c.Recorded != w.recorded || c.HasRecord != w.has ||
			(c.Problem != "") != w.problem {
			t.Errorf("call %d: %+v, want code %q recorded %q (has %v, problem %v)", i, c, w.code, w.recorded, w.has, w.problem)
		}
	}
	if calls[1].Timeout != 5 || calls[1].Language != "python" {
		t.Errorf("call 1's timeout and language: %v %q", calls[1].Timeout, calls[1].Language)
	}
	if calls[4].Name != "search" {
		t.Errorf("call 4's name %q, want search", calls[4].Name)
	}

	// What verl's tool would send, or why not.
	var o Options
	if req, why := o.Request(calls[0]); req == nil ||
		req.RunTimeout != DefaultTimeout || req.CompileTimeout != DefaultTimeout ||
		req.MemoryLimitMB != DefaultMemoryMB || req.Language != "python" ||
		req.Stdin != nil {
		t.Errorf("request of call 0: %+v (%s)", req, why)
	}
	if req, _ := o.Request(calls[1]); req == nil || req.RunTimeout != 5 {
		t.Errorf("call 1 gives its own timeout: %+v", req)
	}
	for _, i := range []int{3, 4, 5} {
		if req, why := o.Request(calls[i]); req != nil || why == "" {
			t.Errorf("call %d should not be replayable: %+v", i, req)
		}
	}
}

func TestObserveIsVerls(t *testing.T) {
	finished := &sandboxclient.Response{Status: sandboxclient.StatusFailed,
		RunResult: &sandboxclient.StepResult{
			Status:     sandboxclient.StepFinished,
			Stdout:     "out\n",
			Stderr:     "Traceback\n",
			ReturnCode: new(int),
		}}
	if got := Observe(finished, nil); got != "out\nTraceback\n" {
		t.Errorf("a finished run that failed: %q, want stdout then stderr", got)
	}
	timedOut := &sandboxclient.Response{
		Status:    sandboxclient.StatusFailed,
		RunResult: &sandboxclient.StepResult{Status: sandboxclient.StepTimeLimitExceeded, Stdout: "partial"},
	}
	for name, tc := range map[string]struct {
		r   *sandboxclient.Response
		err error
	}{"timeout": {timedOut, nil}, "api error": {nil, errors.New("refused")},
		"no run": {&sandboxclient.Response{Status: sandboxclient.StatusSandboxError}, nil}} {
		if got := Observe(tc.r, tc.err); got != NoStdout {
			t.Errorf("%s: %q, want %q", name, got, NoStdout)
		}
	}
}

// A gpt-oss trajectory in the harmony format: a call in the chain of
// thought (not a call), a call to the tool with its answer written as a
// JSON string, and a second call answered as plain text.
const harmony = `<|channel|>analysis<|message|>I could call <|channel|>commentary to=functions.code_interpreter <|constrain|>json<|message|>{"code": "print(0)"}<|call|> but first think.<|end|>` +
	`<|start|>assistant<|channel|>commentary to=functions.code_interpreter <|constrain|>json<|message|>{"code": "print(6 * 7)"}<|call|>` +
	`<|start|>functions.code_interpreter to=assistant<|channel|>commentary<|message|>"42\n"<|end|>` +
	`<|start|>assistant<|channel|>commentary to=functions.code_interpreter <|constrain|>json<|message|>{"code": "print('a')", "timeout": 3}<|call|>` +
	`<|start|>functions.code_interpreter to=assistant<|channel|>commentary<|message|>a
<|end|><|start|>assistant<|channel|>final<|message|>42<|end|>`

func TestParseHarmony(t *testing.T) {
	calls := Parse(harmony)
	if len(calls) != 2 {
		t.Fatalf("got %d calls, want 2 (the one in the analysis channel is not a call): %+v", len(calls), calls)
	}
	if c := calls[0]; c.Name != "code_interpreter" || c.Code != "print(6 * 7)" || c.Recorded != "42\n" || !c.HasRecord ||
		c.Problem != "" {
		t.Errorf("call 0: %+v", c)
	}
	if c := calls[1]; c.Code != "print('a')" || c.Timeout != 3 || c.Recorded != "a\n" {
		t.Errorf("call 1: %+v", c)
	}
}
