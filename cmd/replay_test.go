package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// toolCode are the code_interpreter calls of the replay test: prints,
// floats, errors, a timeout, and one that needs 300 MB.
var toolCode = []struct {
	code    string
	timeout float64
}{
	{"print('hello')", 0},
	{"print(0.1 + 0.2)", 0},
	{"print(1 / 3)", 0},
	{"print(2 ** 100)", 0},
	{"import math\nprint(math.sqrt(2))", 0},
	{"print(sum(range(101)))", 0},
	{"for i in range(3):\n    print(i * 1.5)", 0},
	{"print(round(2.675, 2))", 0},
	{"x = [1, 2, 3]\nprint(x[5])", 0},
	{"raise ValueError('bad value')", 0},
	{"print(undefined_name)", 0},
	{"import sys\nprint('to stderr', file=sys.stderr)\nprint('to stdout')", 0},
	{"print(1 / 0)", 0},
	{"print(float('nan'), float('inf'))", 0},
	{"while True:\n    pass", 1},
	{"x = bytearray(300 * 1024 * 1024)\nprint(len(x))", 0},
	{"print('%.10f' % (22 / 7))", 0},
	{"import json\nprint(json.dumps({'a': [1, 2.5]}))", 0},
	{"print(sorted([3, 1, 2]))", 0},
	{"def f(n):\n    return 1 if n < 2 else n * f(n - 1)\nprint(f(20))", 0},
	{"print('no newline at the end', end='')", 0},
	{"exit(3)", 0},
	{"print([i * i for i in range(6)])", 0},
	{"print('{:>8}|{:<4}|'.format('right', 'l'))", 0},
	{"print({'b': 2, 'a': 1})", 0},
	{"print(123456789 ** 3 / 7)", 0},
}

// memoryCall is the index in toolCode of the call that needs 300 MB.
const memoryCall = 15

// recordObservation runs code through serve as verl's tool does and
// returns the observation verl's tool would record, read from the raw
// answer: stdout then stderr when the run finished, "no stdout here"
// otherwise.
func recordObservation(t *testing.T, url, code string, timeout float64) string {
	t.Helper()
	if timeout == 0 {
		timeout = 30
	}
	body, _ := json.Marshal(
		map[string]any{
			"code":            code,
			"language":        "python",
			"compile_timeout": timeout,
			"run_timeout":     timeout,
			"memory_limit_mb": 1024,
		},
	)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		RunResult *struct {
			Status, Stdout, Stderr string
		} `json:"run_result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.RunResult == nil || a.RunResult.Status != "Finished" {
		return "no stdout here"
	}
	return a.RunResult.Stdout + a.RunResult.Stderr
}

// writeToolDump writes a rollout dump of multi-turn trajectories in
// verl's format (input, output, score, step) and Qwen's Hermes template:
// think, a tool call, its observation as recorded through serve, an
// answer. Every fifth trajectory makes two calls in one turn.
func writeToolDump(t *testing.T, path, url string) int {
	var b strings.Builder
	n := 0
	for i := 0; i < len(toolCode); i++ {
		idx := []int{i}
		if i%5 == 4 && i+1 < len(toolCode) {
			idx = append(idx, i+1)
			i++
		}
		var out strings.Builder
		out.WriteString("<think>I will run some code.</think>\n")
		for _, k := range idx {
			args := map[string]any{"code": toolCode[k].code}
			if toolCode[k].timeout > 0 {
				args["timeout"] = toolCode[k].timeout
			}
			call, _ := json.Marshal(map[string]any{"name": "code_interpreter", "arguments": args})
			fmt.Fprintf(&out, "<tool_call>\n%s\n</tool_call>", call)
		}
		out.WriteString("<|im_end|>\n<|im_start|>user")
		for _, k := range idx {
			fmt.Fprintf(
				&out,
				"\n<tool_response>\n%s\n</tool_response>",
				recordObservation(t, url, toolCode[k].code, toolCode[k].timeout),
			)
		}
		out.WriteString("<|im_end|>\n<|im_start|>assistant\nThe answer is \\boxed{42}.<|im_end|>")
		line, _ := json.Marshal(map[string]any{
			"input":  "<|im_start|>user\nSolve it with the code_interpreter tool.<|im_end|>\n<|im_start|>assistant\n",
			"output": out.String(), "score": 1.0, "step": 7,
		})
		b.Write(line)
		b.WriteByte('\n')
		n++
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplayToolCalls: a dump of 21 trajectories (26 calls: prints,
// floats, errors, a timeout, a 300 MB allocation) whose observations were
// recorded through serve replays 100% identical; with a memory limit of
// 256 MB, replay names exactly the call that needed more and exits 3.
func TestReplayToolCalls(t *testing.T) {
	srv := sandboxServer(t, 0, nil)
	url := srv.URL + "/run_code"
	dir := t.TempDir()
	dump := filepath.Join(dir, "7.jsonl")
	trajs := writeToolDump(t, dump, url)
	if trajs < 20 {
		t.Fatalf("%d trajectories, want at least 20", trajs)
	}
	raw, _ := os.ReadFile(dump)
	for _, want := range []string{"0.30000000000000004", "ZeroDivisionError", "no stdout here", "314572800"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Fatalf("the recorded dump has no %q: the sandbox did not answer as the test expects", want)
		}
	}

	code, stdout, stderr := run(
		context.Background(),
		"replay",
		dump,
		"--sandbox-url",
		url,
		"--json",
		filepath.Join(dir, "same.jsonl"),
	)
	if code != 0 {
		t.Fatalf("replay of an unchanged sandbox: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(
		stdout,
		fmt.Sprintf("%d calls: %d identical, 0 differ, 0 not replayable", len(toolCode), len(toolCode)),
	) {
		t.Errorf("replay of an unchanged sandbox:\n%s", stdout)
	}

	moves := filepath.Join(dir, "moved.jsonl")
	code, stdout, stderr = run(
		context.Background(),
		"replay",
		dump,
		"--sandbox-url",
		url,
		"--tool-memory-mb",
		"256",
		"--json",
		moves,
	)
	if code != ExitRegression {
		t.Fatalf("replay with 256 MB: exit %d, want %d\n%s%s", code, ExitRegression, stdout, stderr)
	}
	moved := regexp.MustCompile(`(?m)^(\S+):(\d+) step 7 call (\d+): differs`).FindAllStringSubmatch(stdout, -1)
	// The 300 MB call is in trajectory (line) 13, the second of its turn.
	if len(moved) != 1 || moved[0][2] != "13" || moved[0][3] != "1" {
		t.Errorf(
			"with 256 MB the calls that moved are %v, want only line 13 call 1 (toolCode[%d])\n%s",
			moved,
			memoryCall,
			stdout,
		)
	}
	if !strings.Contains(stdout, `recorded: "314572800"`) || !strings.Contains(stdout, `now:      "Traceback`) {
		t.Errorf("the moved call does not show both texts' first differing line:\n%s", stdout)
	}
	// The JSON lines hold every call, the moved one with both texts whole.
	jb, err := os.ReadFile(moves)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(jb)), "\n")
	if len(lines) != len(toolCode) {
		t.Fatalf("--json wrote %d lines, want %d", len(lines), len(toolCode))
	}
	var r struct{ Outcome, Recorded, Now string }
	for _, l := range lines {
		if strings.Contains(l, `"differs"`) {
			json.Unmarshal([]byte(l), &r)
		}
	}
	if r.Recorded != "314572800\n" || !strings.Contains(r.Now, "MemoryError") {
		t.Errorf("the moved call in --json: %+v", r)
	}
	if !strings.Contains(stderr, fmt.Sprintf("1 of %d tool observations moved", len(toolCode))) {
		t.Errorf("stderr: %s", stderr)
	}
}

// TestReplayBadInput: a dump line that is not JSON is named by file and
// line, a dump without calls says what replay reads, and no argument is a
// usage error; none of them runs anything.
func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.jsonl", "{\"input\": \"x\", \"output\": \"y\"}\nnot json\n")
	none := writeFile(t, dir, "none.jsonl", "{\"input\": \"x\", \"output\": \"no calls here\", \"step\": 1}\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", bad}, ExitFailed, "bad.jsonl line 2: not a JSON object"},
		{[]string{"replay", none}, ExitFailed, "1 trajectory in 1 file, and no tool call"},
		{[]string{"replay"}, ExitUsage, "one or more rollout dumps"},
		{[]string{"replay", none, "--tool-timeout", "0"}, ExitUsage, "--tool-timeout"},
	} {
		code, _, stderr := run(context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
