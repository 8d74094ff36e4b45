package judge

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// exchange is one of testdata/protocol's real SandboxFusion answers.
func exchange(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "protocol", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(data, &f); err != nil || len(f.Response) == 0 {
		t.Fatalf("fixture %s: no response (%v)", name, err)
	}
	return f.Response
}

func decodeResponse(t testing.TB, body []byte) *sandboxclient.Response {
	t.Helper()
	resp := new(sandboxclient.Response)
	if err := json.Unmarshal(body, resp); err != nil {
		t.Fatalf("decode response: %v\n%s", err, body)
	}
	return resp
}

func sp(s string) *string { return &s }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// verdictCase is one docs/semantics.md §5 row: an answer (a fixture's or a synthesized
// body in the server's shape) and the verdict and metadata it must give.
type verdictCase struct {
	name     string
	fixture  string // protocol fixture whose response is judged
	body     string // else this response body
	expected *string

	verdict       verdict.Code
	status        string
	infra         bool
	apiStatus     any
	compileStatus any
	runStatus     any
	exitCode      any
}

func TestJudgeSpecRows(t *testing.T) {
	tests := []verdictCase{
		// Rows backed by real server answers.
		{name: "success", fixture: "python_success", expected: sp("hi"),
			verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", runStatus: "Finished", exitCode: 0},
		{name: "wrong answer", fixture: "python_wrong_answer", expected: sp("hi"),
			verdict: verdict.False, status: verdict.StatusWrongAnswer, apiStatus: "Success", runStatus: "Finished", exitCode: 0},
		{name: "runtime error exception", fixture: "python_runtime_error", expected: sp(""),
			verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Finished",
			exitCode: 1},
		{name: "runtime error exit code", fixture: "python_exit_nonzero", expected: sp(""),
			verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Finished",
			exitCode: 3},
		{name: "python syntax error is a runtime error", fixture: "python_syntax_error", expected: sp(""),
			verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Finished",
			exitCode: 1},
		{name: "run timeout", fixture: "python_timeout", expected: sp("start"),
			verdict: verdict.Timeout, status: verdict.StatusTimeout, apiStatus: "Failed", runStatus: "TimeLimitExceeded"},
		{name: "memory error", fixture: "python_memory_error", expected: sp(""),
			verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Finished",
			exitCode: 1},
		{name: "cpp compile error", fixture: "cpp_compile_error", expected: sp("hi"),
			verdict: verdict.CompileError, status: verdict.StatusCompileError, apiStatus: "Failed", compileStatus: "Finished"},
		{name: "go compile error", fixture: "go_compile_error", expected: sp(""),
			verdict: verdict.CompileError, status: verdict.StatusCompileError, apiStatus: "Failed", compileStatus: "Finished"},
		{name: "cpp segfault", fixture: "cpp_runtime_error", expected: sp(""),
			verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed",
			compileStatus: "Finished", runStatus: "Finished", exitCode: -11},
		{name: "sandbox error", fixture: "sql_no_runner", expected: sp("1"),
			verdict: verdict.APIError, status: verdict.StatusSandboxError, infra: true, apiStatus: "SandboxError"},
		{name: "null stdin", fixture: "python_stdin_null", expected: sp("''"),
			verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", runStatus: "Finished", exitCode: 0},
		{name: "stalled big output", fixture: "python_stdout_10MB", expected: sp("x"),
			verdict: verdict.Timeout, status: verdict.StatusTimeout, apiStatus: "Failed", runStatus: "TimeLimitExceeded"},
		{name: "bash success", fixture: "bash_success", expected: sp("got abc"),
			verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", runStatus: "Finished", exitCode: 0},
		{name: "cpp success", fixture: "cpp_success", expected: sp("5"),
			verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", compileStatus: "Finished",
			runStatus: "Finished", exitCode: 0},

		// Rows no recorded answer covers, in the server's shape.
		{name: "compile timeout",
			body: `{"status":"Failed","message":"","compile_result":{"status":"TimeLimitExceeded","execution_time":10.0,"return_code":null,"stdout":"","stderr":""},"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.CompileError, status: verdict.StatusCompileTimeout, apiStatus: "Failed",
			compileStatus: "TimeLimitExceeded"},
		{name: "compile status error",
			body: `{"status":"Failed","message":"","compile_result":{"status":"Error","execution_time":0.1,"return_code":null,"stdout":"","stderr":"boom"},"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.CompileError, status: verdict.StatusCompileError, apiStatus: "Failed", compileStatus: "Error"},
		{name: "compile finished without return code",
			body: `{"status":"Failed","message":"","compile_result":{"status":"Finished","execution_time":0.1,"return_code":null,"stdout":"","stderr":""},"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.CompileError, status: verdict.StatusCompileError, apiStatus: "Failed",
			compileStatus: "Finished"},
		{name: "compile error wins over run result",
			body: `{"status":"Failed","message":"","compile_result":{"status":"Finished","execution_time":0.1,"return_code":1,"stdout":"","stderr":""},"run_result":{"status":"TimeLimitExceeded","execution_time":1,"return_code":null,"stdout":"","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.CompileError, status: verdict.StatusCompileError, apiStatus: "Failed",
			compileStatus: "Finished", runStatus: "TimeLimitExceeded"},
		{name: "run status error",
			body: `{"status":"Failed","message":"","compile_result":null,"run_result":{"status":"Error","execution_time":0.01,"return_code":null,"stdout":"","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Error"},
		{name: "run finished without return code",
			body: `{"status":"Failed","message":"","compile_result":null,"run_result":{"status":"Finished","execution_time":0.01,"return_code":null,"stdout":"","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.RuntimeError, status: verdict.StatusRuntimeError, apiStatus: "Failed", runStatus: "Finished"},
		{name: "failed with run finished and code 0",
			body: `{"status":"Failed","message":"","compile_result":null,"run_result":{"status":"Finished","execution_time":0.01,"return_code":0,"stdout":"hi\n","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"hi",
			), verdict: verdict.APIError, status: verdict.StatusUnknownFailure, infra: true, apiStatus: "Failed",
			runStatus: "Finished", exitCode: 0},
		{name: "failed with odd run state",
			body: `{"status":"Failed","message":"","compile_result":null,"run_result":{"status":"Running","execution_time":0.01,"return_code":null,"stdout":"","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.APIError, status: verdict.StatusUnknownFailure, infra: true, apiStatus: "Failed",
			runStatus: "Running"},
		{name: "failed with neither result",
			body: `{"status":"Failed","message":"","compile_result":null,"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.APIError, status: verdict.StatusUnknownFailureState, infra: true, apiStatus: "Failed"},
		{name: "failed with clean compile and no run",
			body: `{"status":"Failed","message":"","compile_result":{"status":"Finished","execution_time":0.1,"return_code":0,"stdout":"","stderr":""},"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.APIError, status: verdict.StatusUnknownFailureState, infra: true, apiStatus: "Failed",
			compileStatus: "Finished"},
		{name: "success with run timeout",
			body: `{"status":"Success","message":"","compile_result":null,"run_result":{"status":"TimeLimitExceeded","execution_time":1,"return_code":null,"stdout":"hi\n","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"hi",
			), verdict: verdict.APIError, status: verdict.StatusUnexpectedSuccessState, infra: true, apiStatus: "Success",
			runStatus: "TimeLimitExceeded"},
		{name: "success without run result",
			body: `{"status":"Success","message":"","compile_result":null,"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.APIError, status: verdict.StatusUnexpectedSuccessState, infra: true, apiStatus: "Success"},
		{name: "unknown top-level status",
			body: `{"status":"Pending","message":"","compile_result":null,"run_result":null,"executor_pod_name":null,"files":{}}`,
			expected: sp(
				"",
			), verdict: verdict.APIError, status: "unknown_api_status_Pending", infra: true, apiStatus: "Pending"},
		{name: "missing top-level status",
			body:     `{"message":"no status here"}`,
			expected: sp(""), verdict: verdict.APIError, status: "unknown_api_status_", infra: true, apiStatus: ""},
		{name: "null expected passes any finished run", fixture: "python_wrong_answer", expected: nil,
			verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", runStatus: "Finished", exitCode: 0},
		{name: "null expected passes empty output",
			body:     `{"status":"Success","message":"","compile_result":null,"run_result":{"status":"Finished","execution_time":0.01,"return_code":0,"stdout":"","stderr":""},"executor_pod_name":null,"files":{}}`,
			expected: nil, verdict: verdict.True, status: verdict.StatusSuccess, apiStatus: "Success", runStatus: "Finished",
			exitCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			if tt.fixture != "" {
				body = exchange(t, tt.fixture)
			}
			resp := decodeResponse(t, body)
			resp.Attempts = 1
			got := Case(4, "in", "out", tt.expected, resp, nil)
			if got.Verdict != tt.verdict || got.Status != tt.status {
				t.Errorf("got %v %q, want %v %q", got.Verdict, got.Status, tt.verdict, tt.status)
			}
			if got.Infra != tt.infra {
				t.Errorf("infra: got %v, want %v", got.Infra, tt.infra)
			}
			for _, f := range []struct {
				name      string
				got, want any
			}{
				{"api_status", deref(got.APIStatus), tt.apiStatus},
				{"compile_status", deref(got.CompileStatus), tt.compileStatus},
				{"run_status", deref(got.RunStatus), tt.runStatus},
				{"exit_code", deref(got.ExitCode), tt.exitCode},
			} {
				if f.got != f.want {
					t.Errorf("%s: got %#v, want %#v", f.name, f.got, f.want)
				}
			}
			if got.CaseIndex != 4 || got.Input != "in" || got.ExpectedOutput != "out" || got.Attempts != 1 {
				t.Errorf("got case %d input %q expected %q attempts %d, want 4 \"in\" \"out\" 1",
					got.CaseIndex, got.Input, got.ExpectedOutput, got.Attempts)
			}
			if got.APIRequestError != nil {
				t.Errorf("api_request_error: got %q, want nil", *got.APIRequestError)
			}
			// The step metadata is copied whenever the step is present.
			if rr := resp.RunResult; rr != nil {
				if deref(got.Stdout) != rr.Stdout || deref(got.Stderr) != rr.Stderr || deref(got.Duration) != rr.ExecutionTime {
					t.Errorf("run metadata: got stdout %q stderr %q duration %v, want %q %q %v",
						deref(got.Stdout), deref(got.Stderr), deref(got.Duration), rr.Stdout, rr.Stderr, rr.ExecutionTime)
				}
			} else if got.Stdout != nil || got.Stderr != nil || got.Duration != nil || got.ExitCode != nil {
				t.Errorf("run metadata set without a run result: %+v", got)
			}
			if cr := resp.CompileResult; cr != nil {
				if deref(got.CompileStderr) != cr.Stderr || deref(got.CompileDuration) != cr.ExecutionTime {
					t.Errorf("compile metadata: got stderr %q duration %v, want %q %v",
						deref(got.CompileStderr), deref(got.CompileDuration), cr.Stderr, cr.ExecutionTime)
				}
			} else if got.CompileStderr != nil || got.CompileDuration != nil {
				t.Errorf("compile metadata set without a compile result: %+v", got)
			}
		})
	}
}

// TestJudgeOutputComparison pins docs/semantics.md §5's comparison: only trailing "\n"
// is stripped, on both sides.
func TestJudgeOutputComparison(t *testing.T) {
	tests := []struct {
		stdout, expected string
		want             verdict.Code
	}{
		{"5\n", "5", verdict.True},
		{"5", "5\n", verdict.True},
		{"5\n\n\n", "5\n", verdict.True},
		{"1 2\n3\n", "1 2\n3", verdict.True},
		{"", "", verdict.True},
		{"\n", "", verdict.True},
		{"5 \n", "5", verdict.False},
		{"5", "5 ", verdict.False},
		{"5\r\n", "5", verdict.False},
		{"5\n", "5\r\n", verdict.False},
		{"\n5\n", "5", verdict.False},
		{"1.0\n", "1", verdict.False},
		{"1.50\n", "1.5", verdict.False},
		{"True\n", "true", verdict.False},
		{"5\t\n", "5", verdict.False},
	}
	base := exchange(t, "python_success")
	for _, tt := range tests {
		resp := decodeResponse(t, base)
		resp.RunResult.Stdout = tt.stdout
		got := Case(0, "", tt.expected, sp(tt.expected), resp, nil)
		wantStatus := verdict.StatusSuccess
		if tt.want == verdict.False {
			wantStatus = verdict.StatusWrongAnswer
		}
		if got.Verdict != tt.want || got.Status != wantStatus {
			t.Errorf(
				"stdout %q expected %q: got %v %q, want %v %q",
				tt.stdout,
				tt.expected,
				got.Verdict,
				got.Status,
				tt.want,
				wantStatus,
			)
		}
	}
}

func TestJudgeRequestError(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		wantAttempts int
	}{
		{
			"api error after retries",
			&sandboxclient.APIError{Attempts: 3, StatusCode: 504, Err: errors.New("gateway timeout (504)")},
			3,
		},
		{"unsupported language", &sandboxclient.APIError{Err: errors.New(`unsupported language: "cobol"`)}, 0},
		{"other error", errors.New("boom"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Case(2, "x", "y", sp("y"), nil, tt.err)
			if got.Verdict != verdict.APIError || got.Status != verdict.StatusAPIError || !got.Infra {
				t.Errorf("got %v %q infra %v, want -1 api_error infra", got.Verdict, got.Status, got.Infra)
			}
			if got.Attempts != tt.wantAttempts {
				t.Errorf("attempts: got %d, want %d", got.Attempts, tt.wantAttempts)
			}
			if got.APIRequestError == nil || *got.APIRequestError != tt.err.Error() {
				t.Errorf("api_request_error: got %v, want %q", deref(got.APIRequestError), tt.err.Error())
			}
			if got.APIStatus != nil || got.Stdout != nil || got.RunStatus != nil {
				t.Errorf("response metadata set on a failed request: %+v", got)
			}
		})
	}
}

// TestCaseResultJSONKeys checks verl's metadata names on the wire.
func TestCaseResultJSONKeys(t *testing.T) {
	resp := decodeResponse(t, exchange(t, "cpp_success"))
	resp.Attempts = 2
	r := Case(1, "2 3", "5", sp("5"), resp, nil)
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"case_index":        1.0,
		"input":             "2 3",
		"expected_output":   "5",
		"api_request_error": nil,
		"status":            "success",
		"stdout":            "5\n",
		"stderr":            "",
		"exit_code":         0.0,
		"duration":          0.002654552459716797,
		"compile_duration":  0.4574613571166992,
		"compile_stderr":    "",
		"api_status":        "Success",
		"compile_status":    "Finished",
		"run_status":        "Finished",
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("key %q missing from %s", k, data)
			continue
		}
		if got != v {
			t.Errorf("%s: got %#v, want %#v", k, got, v)
		}
	}
	var extra []string
	for k := range m {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if strings.Join(extra, ",") != "attempts,infra_error,verdict" {
		t.Errorf("extra keys: got %v, want [attempts infra_error verdict]", extra)
	}

	// A failed request keeps every key, with nulls.
	r = Case(0, "", "", sp(""), nil, &sandboxclient.APIError{Attempts: 1, Err: errors.New("refused")})
	data, _ = json.Marshal(r)
	m = nil
	_ = json.Unmarshal(data, &m)
	for k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, data)
		}
	}
	if m["api_request_error"] != "api call failed: refused" || m["stdout"] != nil || m["status"] != "api_error" {
		t.Errorf("got %s, want api_request_error set, stdout null, status api_error", data)
	}
}
