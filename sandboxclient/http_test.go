package sandboxclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/verl-score/verl-score/judge"
	. "github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// reply is one scripted answer of the fake sandbox.
type reply struct {
	status int
	header map[string]string
	body   []byte
}

func okReply(body []byte) reply { return reply{status: http.StatusOK, body: body} }

// received is what the fake sandbox saw of one request.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// fakeSandbox is an httptest server that answers POST /run_code with a
// script of replies, one per request, and records every request. At the
// end of the test it checks that every reply was asked for.
type fakeSandbox struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	fallback *reply // answers every request once the script is used up
	got      []received
}

func newFakeSandbox(t testing.TB, replies ...reply) *fakeSandbox {
	t.Helper()
	f := &fakeSandbox{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.replies) > 0 {
			t.Errorf("fake sandbox: %d scripted replies never asked for", len(f.replies))
		}
	})
	return f
}

func (f *fakeSandbox) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake sandbox: read body: %v", err)
	}
	f.mu.Lock()
	f.got = append(f.got, received{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
	var rep reply
	switch {
	case len(f.replies) > 0:
		rep = f.replies[0]
		f.replies = f.replies[1:]
	case f.fallback != nil:
		rep = *f.fallback
	default:
		f.mu.Unlock()
		f.t.Errorf("fake sandbox: unexpected request %d", len(f.got))
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/run_code" {
		http.NotFound(w, r)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}

func (f *fakeSandbox) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// fakeClock records the sleeps the client asks for and returns at once.
type fakeClock struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

func newTestClient(t testing.TB, url string, retry RetryPolicy, clock *fakeClock) *HTTPClient {
	t.Helper()
	c, err := NewHTTPClient(HTTPOptions{
		URL:   url,
		Retry: retry,
		Sleep: clock.Sleep,
		Rand:  func() float64 { return 0.5 },
		Now:   func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("NewHTTPClient: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixtureRequest decodes a fixture's recorded request.
func fixtureRequest(t testing.TB, f fixture) *Request {
	t.Helper()
	req := new(Request)
	if err := json.Unmarshal(f.Request, req); err != nil {
		t.Fatalf("decode fixture request: %v", err)
	}
	return req
}

func pythonRequest() *Request {
	return &Request{
		CompileTimeout: 10,
		RunTimeout:     10,
		Code:           "print(input())",
		Stdin:          sp("hi"),
		MemoryLimitMB:  1024,
		Language:       "python",
	}
}

func TestNewHTTPClientURL(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "http://sandbox:8080/run_code", want: "http://sandbox:8080/run_code"},
		{in: "http://sandbox:8080", want: "http://sandbox:8080/run_code"},
		{in: "http://sandbox:8080/", want: "http://sandbox:8080/run_code"},
		{in: "https://example.com/api/v1/run_code", want: "https://example.com/api/v1/run_code"},
		{in: "http://10.0.0.1:8080/custom?x=1", want: "http://10.0.0.1:8080/custom?x=1"},
		{in: "", wantErr: true},
		{in: "sandbox:8080", wantErr: true},
		{in: "ftp://sandbox/run_code", wantErr: true},
		{in: "http:///run_code", wantErr: true},
		{in: "://bad", wantErr: true},
	}
	for _, tt := range tests {
		c, err := NewHTTPClient(HTTPOptions{URL: tt.in})
		if tt.wantErr {
			if err == nil {
				t.Errorf("%q: got url %q, want an error", tt.in, c.URL())
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: got error %v, want %q", tt.in, err, tt.want)
			continue
		}
		if c.URL() != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, c.URL(), tt.want)
		}
	}
	if _, err := NewHTTPClient(HTTPOptions{URL: "http://h", MaxConns: -1}); err == nil {
		t.Errorf("MaxConns -1: got no error, want one")
	}
}

// TestHTTPClientFixtures replays every recorded exchange: the client must
// send the recorded request body and judge the recorded answer as docs/semantics.md §5
// says.
func TestHTTPClientFixtures(t *testing.T) {
	tests := []struct {
		fixture  string
		expected string
		verdict  verdict.Code
		status   string
	}{
		{"python_success", "hi", verdict.True, verdict.StatusSuccess},
		{"python_wrong_answer", "hi", verdict.False, verdict.StatusWrongAnswer},
		{"python_runtime_error", "", verdict.RuntimeError, verdict.StatusRuntimeError},
		{"python_exit_nonzero", "", verdict.RuntimeError, verdict.StatusRuntimeError},
		{"python_syntax_error", "", verdict.RuntimeError, verdict.StatusRuntimeError},
		{"python_timeout", "start", verdict.Timeout, verdict.StatusTimeout},
		{"python_memory_error", "", verdict.RuntimeError, verdict.StatusRuntimeError},
		{"python_stdin_null", "''", verdict.True, verdict.StatusSuccess},
		{"cpp_compile_error", "hi", verdict.CompileError, verdict.StatusCompileError},
		{"go_compile_error", "", verdict.CompileError, verdict.StatusCompileError},
		{"cpp_runtime_error", "", verdict.RuntimeError, verdict.StatusRuntimeError},
		{"cpp_success", "5", verdict.True, verdict.StatusSuccess},
		{"bash_success", "got abc", verdict.True, verdict.StatusSuccess},
		{"sql_no_runner", "1", verdict.APIError, verdict.StatusSandboxError},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			f := loadFixture(t, tt.fixture)
			srv := newFakeSandbox(t, reply{status: f.HTTPStatus, body: f.Response})
			clock := &fakeClock{}
			c := newTestClient(t, srv.srv.URL, DefaultRetryPolicy(), clock)
			resp, err := c.Run(context.Background(), fixtureRequest(t, f))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := judge.Case(0, "", tt.expected, &tt.expected, resp, err)
			if got.Verdict != tt.verdict || got.Status != tt.status || got.Attempts != 1 {
				t.Errorf(
					"got %v %q after %d attempts, want %v %q after 1",
					got.Verdict,
					got.Status,
					got.Attempts,
					tt.verdict,
					tt.status,
				)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("server got %d requests, want 1", len(reqs))
			}
			var gotBody, wantBody map[string]any
			if err := json.Unmarshal(reqs[0].body, &gotBody); err != nil {
				t.Fatalf("request body is not json: %v", err)
			}
			_ = json.Unmarshal(f.Request, &wantBody)
			if !reflect.DeepEqual(gotBody, wantBody) {
				t.Errorf("request body:\ngot  %s\nwant %s", reqs[0].body, f.Request)
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("sleeps: got %v, want none", clock.Sleeps())
			}
		})
	}
}

// TestHTTPClientRequestBody checks the exact wire form of a request: the
// eight keys of docs/semantics.md §4 with their JSON types, stdin null when absent,
// files {} and fetch_files [] when nil, and the headers.
func TestHTTPClientRequestBody(t *testing.T) {
	success := loadFixture(t, "python_success").Response
	srv := newFakeSandbox(t, okReply(success), okReply(success))
	c := newTestClient(t, srv.srv.URL, DefaultRetryPolicy(), &fakeClock{})

	code := "a = \"<&>\"\nprint(a)\t# ünïcode\x00"
	req := &Request{CompileTimeout: 7, RunTimeout: 2.5, Code: code, MemoryLimitMB: 512, Language: "python"}
	if _, err := c.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if req.Files != nil || req.FetchFiles != nil {
		t.Errorf("Run changed the caller's request: %+v", req)
	}
	req2 := &Request{CompileTimeout: 10, RunTimeout: 10, Code: "x", Stdin: sp(""), MemoryLimitMB: 1024, Language: "cpp",
		Files: map[string]string{"a.txt": "aGk="}, FetchFiles: []string{"out.txt"}}
	if _, err := c.Run(context.Background(), req2); err != nil {
		t.Fatalf("Run: %v", err)
	}

	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.method != http.MethodPost || r.path != "/run_code" {
			t.Errorf("got %s %s, want POST /run_code", r.method, r.path)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type: got %q, want application/json", ct)
		}
		if a := r.header.Get("Accept"); a != "application/json" {
			t.Errorf("Accept: got %q, want application/json", a)
		}
	}

	var body map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatalf("request body is not a json object: %v\n%s", err, reqs[0].body)
	}
	want := map[string]string{
		"compile_timeout": "7",
		"run_timeout":     "2.5",
		"code":            mustJSON(t, code),
		"stdin":           "null",
		"memory_limit_MB": "512",
		"language":        `"python"`,
		"files":           "{}",
		"fetch_files":     "[]",
	}
	if len(body) != len(want) {
		t.Errorf("got %d keys, want %d: %s", len(body), len(want), reqs[0].body)
	}
	for k, v := range want {
		got, ok := body[k]
		if !ok {
			t.Errorf("key %q missing: %s", k, reqs[0].body)
			continue
		}
		// Compare decoded values: escaping may differ, meaning may not.
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(v), &w)
		if !reflect.DeepEqual(g, w) || !sameJSONKind(got, []byte(v)) {
			t.Errorf("%s: got %s, want %s", k, got, v)
		}
	}

	var body2 map[string]any
	_ = json.Unmarshal(reqs[1].body, &body2)
	if body2["stdin"] != "" || body2["language"] != "cpp" ||
		!reflect.DeepEqual(body2["files"], map[string]any{"a.txt": "aGk="}) ||
		!reflect.DeepEqual(body2["fetch_files"], []any{"out.txt"}) {
		t.Errorf("second body: got %s", reqs[1].body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSONKind reports whether two JSON values have the same type, so
// that e.g. {} and null or "7" and 7 are told apart.
func sameJSONKind(a, b []byte) bool {
	kind := func(x []byte) byte {
		s := strings.TrimSpace(string(x))
		if s == "" {
			return 0
		}
		switch s[0] {
		case '{', '[', '"', 'n', 't', 'f':
			return s[0]
		}
		return '0' // number
	}
	return kind(a) == kind(b)
}

// TestHTTPClientRetries drives the retry rules against scripted answers
// and the fake clock.
func TestHTTPClientRetries(t *testing.T) {
	success := loadFixture(t, "python_success").Response
	sandboxErr := loadFixture(t, "sql_no_runner").Response
	unsupported := loadFixture(t, "unsupported_lang").Response
	notJSON := loadFixture(t, "not_json").Response
	gw := reply{status: http.StatusGatewayTimeout, body: []byte("<html><body>504 Gateway Time-out</body></html>"),
		header: map[string]string{"Content-Type": "text/html"}}
	optIn := DefaultRetryPolicy()
	optIn.SandboxErrorAttempts = 3

	tests := []struct {
		name    string
		replies []reply
		policy  RetryPolicy

		wantAttempts   int
		wantSleeps     []time.Duration
		wantVerdict    verdict.Code
		wantStatus     string
		wantStatusCode int // of the *APIError; 0 when a response is returned
	}{
		{name: "504 twice then success", replies: []reply{gw, gw, okReply(success)}, policy: DefaultRetryPolicy(),
			wantAttempts: 3, wantSleeps: []time.Duration{time.Second, 2 * time.Second}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "504 twice then success verl policy", replies: []reply{gw, gw, okReply(success)}, policy: VerlRetryPolicy(),
			wantAttempts: 3, wantSleeps: []time.Duration{time.Second, 2 * time.Second}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "504 three times", replies: []reply{gw, gw, gw}, policy: DefaultRetryPolicy(),
			wantAttempts: 3, wantSleeps: []time.Duration{time.Second, 2 * time.Second}, wantVerdict: verdict.APIError,
			wantStatus: verdict.StatusAPIError, wantStatusCode: 504},
		{name: "500", replies: []reply{{status: 500, body: []byte("Internal Server Error")}}, policy: DefaultRetryPolicy(),
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 500},
		{name: "502", replies: []reply{{status: 502, body: []byte("bad gateway")}}, policy: DefaultRetryPolicy(),
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 502},
		{name: "429 honours Retry-After seconds", policy: DefaultRetryPolicy(),
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": "3"}, body: []byte(`{"detail":"slow down"}`)},
				okReply(success),
			},
			wantAttempts: 2, wantSleeps: []time.Duration{3 * time.Second}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "429 honours Retry-After date", policy: DefaultRetryPolicy(),
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": testNow.Add(4 * time.Second).Format(http.TimeFormat)}},
				okReply(success),
			},
			wantAttempts: 2, wantSleeps: []time.Duration{4 * time.Second}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "429 Retry-After bounded by OverloadMax", policy: DefaultRetryPolicy(),
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}}, okReply(success)},
			wantAttempts: 2, wantSleeps: []time.Duration{10 * time.Second}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "429 verl policy gives up", policy: VerlRetryPolicy(),
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "3"}}},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 429},
		{name: "503 then success", policy: DefaultRetryPolicy(),
			replies:      []reply{{status: 503, body: []byte("busy")}, okReply(success)},
			wantAttempts: 2, wantSleeps: []time.Duration{375 * time.Millisecond}, wantVerdict: verdict.True,
			wantStatus: verdict.StatusSuccess},
		{name: "503 until the overload attempts are spent", policy: attemptsPolicy(),
			replies: []reply{{status: 503}, {status: 503}, {status: 503}, {status: 503}, {status: 503}},
			// equal jitter with rand 0.5: 3/4 of 0.5, 1, 2, 4 s
			wantAttempts: 5, wantSleeps: []time.Duration{375 * time.Millisecond, 750 * time.Millisecond,
				1500 * time.Millisecond, 3 * time.Second},
			wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 503},
		{name: "503 until the outage grace is spent", policy: DefaultRetryPolicy(),
			replies: []reply{
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
				{status: 503},
			},
			// 3/4 of 0.5, 1, 2, 4, 8, 10, 10 s (the cap), then what is left
			// of the 30 s: the sleeps add up to the grace exactly.
			wantAttempts: 9, wantSleeps: []time.Duration{375 * time.Millisecond, 750 * time.Millisecond,
				1500 * time.Millisecond, 3 * time.Second,
				6 * time.Second, 7500 * time.Millisecond, 7500 * time.Millisecond, 3375 * time.Millisecond},
			wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 503},
		{name: "504 and 429 have separate budgets", policy: DefaultRetryPolicy(),
			replies:      []reply{gw, {status: 429, header: map[string]string{"Retry-After": "1"}}, gw, okReply(success)},
			wantAttempts: 4, wantSleeps: []time.Duration{time.Second, time.Second, 2 * time.Second},
			wantVerdict: verdict.True, wantStatus: verdict.StatusSuccess},
		{name: "garbage body", policy: DefaultRetryPolicy(),
			replies: []reply{
				{status: 200, body: []byte("<html>it works</html>"), header: map[string]string{"Content-Type": "text/html"}},
			},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 200},
		{name: "truncated json", policy: DefaultRetryPolicy(),
			replies:      []reply{okReply(success[:len(success)/2])},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 200},
		{name: "json null", policy: DefaultRetryPolicy(), replies: []reply{okReply([]byte("null"))},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 200},
		{name: "json array", policy: DefaultRetryPolicy(), replies: []reply{okReply([]byte(`[{"status":"Success"}]`))},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 200},
		{name: "empty 200 body", policy: DefaultRetryPolicy(), replies: []reply{okReply(nil)},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 200},
		{
			name:         "object without status is judged",
			policy:       DefaultRetryPolicy(),
			replies:      []reply{okReply([]byte(`{"message":"?"}`))},
			wantAttempts: 1,
			wantVerdict:  verdict.APIError,
			wantStatus:   "unknown_api_status_",
		},
		{
			name:           "wrong field type",
			policy:         DefaultRetryPolicy(),
			replies:        []reply{okReply([]byte(`{"status":"Success","run_result":"oops"}`))},
			wantAttempts:   1,
			wantVerdict:    verdict.APIError,
			wantStatus:     verdict.StatusAPIError,
			wantStatusCode: 200,
		},
		{
			name:           "422 unsupported language detail",
			policy:         DefaultRetryPolicy(),
			replies:        []reply{{status: 422, body: unsupported}},
			wantAttempts:   1,
			wantVerdict:    verdict.APIError,
			wantStatus:     verdict.StatusAPIError,
			wantStatusCode: 422,
		},
		{name: "422 json decode detail", policy: DefaultRetryPolicy(), replies: []reply{{status: 422, body: notJSON}},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusAPIError, wantStatusCode: 422},
		{name: "SandboxError not retried by default", policy: DefaultRetryPolicy(), replies: []reply{okReply(sandboxErr)},
			wantAttempts: 1, wantVerdict: verdict.APIError, wantStatus: verdict.StatusSandboxError},
		{name: "SandboxError retried when opted in", policy: optIn,
			replies:      []reply{okReply(sandboxErr), okReply(sandboxErr), okReply(success)},
			wantAttempts: 3, wantSleeps: []time.Duration{375 * time.Millisecond, 750 * time.Millisecond},
			wantVerdict: verdict.True, wantStatus: verdict.StatusSuccess},
		{name: "SandboxError opt-in budget spent", policy: optIn,
			replies:      []reply{okReply(sandboxErr), okReply(sandboxErr), okReply(sandboxErr)},
			wantAttempts: 3, wantSleeps: []time.Duration{375 * time.Millisecond, 750 * time.Millisecond},
			wantVerdict: verdict.APIError, wantStatus: verdict.StatusSandboxError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeSandbox(t, tt.replies...)
			clock := &fakeClock{}
			c := newTestClient(t, srv.srv.URL, tt.policy, clock)
			resp, err := c.Run(context.Background(), pythonRequest())

			got := judge.Case(0, "hi", "hi", sp("hi"), resp, err)
			if got.Verdict != tt.wantVerdict || got.Status != tt.wantStatus {
				t.Errorf("got %v %q, want %v %q (err %v)", got.Verdict, got.Status, tt.wantVerdict, tt.wantStatus, err)
			}
			if got.Attempts != tt.wantAttempts {
				t.Errorf("attempts: got %d, want %d", got.Attempts, tt.wantAttempts)
			}
			if n := len(srv.requests()); n != tt.wantAttempts {
				t.Errorf("server got %d requests, want %d", n, tt.wantAttempts)
			}
			if s := clock.Sleeps(); !slices.Equal(s, tt.wantSleeps) {
				t.Errorf("sleeps: got %v, want %v", s, tt.wantSleeps)
			}
			if tt.wantStatus == verdict.StatusAPIError {
				var apiErr *APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("got error %v (%T), want *APIError", err, err)
				}
				if apiErr.StatusCode != tt.wantStatusCode || apiErr.Attempts != tt.wantAttempts {
					t.Errorf(
						"APIError: got status %d attempts %d, want %d %d",
						apiErr.StatusCode,
						apiErr.Attempts,
						tt.wantStatusCode,
						tt.wantAttempts,
					)
				}
				if resp != nil {
					t.Errorf("got a response with an error: %+v", resp)
				}
			} else if err != nil {
				t.Errorf("got error %v, want a response", err)
			}
		})
	}
}

func TestHTTPClientUnsupportedLanguage(t *testing.T) {
	srv := newFakeSandbox(t) // no request may arrive
	c := newTestClient(t, srv.srv.URL, DefaultRetryPolicy(), &fakeClock{})
	for _, lang := range []string{"cobol", "", "Python", "c++"} {
		req := pythonRequest()
		req.Language = lang
		resp, err := c.Run(context.Background(), req)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Attempts != 0 || resp != nil {
			t.Errorf("%q: got %v, %v, want *APIError with 0 attempts", lang, resp, err)
		}
		got := judge.Case(0, "", "", nil, resp, err)
		if got.Verdict != verdict.APIError || got.Status != verdict.StatusAPIError || got.Attempts != 0 {
			t.Errorf("%q: got %v %q attempts %d, want -1 api_error 0", lang, got.Verdict, got.Status, got.Attempts)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// closedAddr returns the address of a listener that is closed again, so
// that connecting to it is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestHTTPClientConnectionRefused(t *testing.T) {
	addr := closedAddr(t)
	tests := []struct {
		name       string
		policy     RetryPolicy
		wantDials  int
		wantSleeps int
	}{
		// Within the outage grace, until the endpoint proves dead: it
		// never answered, neverAnsweredLimit refusals.
		{"default policy retries", DefaultRetryPolicy(), NeverAnsweredLimit, NeverAnsweredLimit - 1},
		{"attempts policy retries", attemptsPolicy(), 5, 4},
		{"verl policy gives up", VerlRetryPolicy(), 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dials atomic.Int32
			d := &net.Dialer{}
			hc := &http.Client{
				Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
					dials.Add(1)
					return d.DialContext(ctx, network, a)
				}},
			}
			clock := &fakeClock{}
			c, err := NewHTTPClient(
				HTTPOptions{URL: "http://" + addr + "/run_code", Retry: tt.policy, Sleep: clock.Sleep, HTTP: hc},
			)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Run(context.Background(), pythonRequest())
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("got %v, %v, want *APIError", resp, err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("got error %v, want one wrapping ECONNREFUSED", err)
			}
			if apiErr.Attempts != tt.wantDials || int(dials.Load()) != tt.wantDials {
				t.Errorf("attempts: got %d (%d dials), want %d", apiErr.Attempts, dials.Load(), tt.wantDials)
			}
			if n := len(clock.Sleeps()); n != tt.wantSleeps {
				t.Errorf("sleeps: got %d, want %d", n, tt.wantSleeps)
			}
			got := judge.Case(0, "", "", nil, resp, err)
			if got.Verdict != verdict.APIError || got.Status != verdict.StatusAPIError || got.Attempts != tt.wantDials {
				t.Errorf("got %v %q attempts %d, want -1 api_error %d", got.Verdict, got.Status, got.Attempts, tt.wantDials)
			}
		})
	}
}

// resetListener resets the first n connections it accepts (RST, not FIN)
// and counts the connections open at once.
type resetListener struct {
	net.Listener
	reset atomic.Int32
}

func (l *resetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.reset.Add(-1) >= 0 {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			// Wait for the request so the reset hits a written request.
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Read(make([]byte, 1))
			c.Close()
			continue
		}
		return c, nil
	}
}

func TestHTTPClientConnectionReset(t *testing.T) {
	success := loadFixture(t, "python_success").Response
	tests := []struct {
		name         string
		policy       RetryPolicy
		wantAttempts int
		wantVerdict  verdict.Code
	}{
		{"default policy retries", DefaultRetryPolicy(), 3, verdict.True},
		{"verl policy gives up", VerlRetryPolicy(), 1, verdict.APIError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSandbox{t: t}
			if tt.wantVerdict == verdict.True {
				f.replies = []reply{okReply(success)}
			}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
			rl := &resetListener{Listener: srv.Listener}
			rl.reset.Store(2)
			srv.Listener = rl
			srv.Start()
			defer srv.Close()
			f.srv = srv

			clock := &fakeClock{}
			c := newTestClient(t, srv.URL, tt.policy, clock)
			resp, err := c.Run(context.Background(), pythonRequest())
			got := judge.Case(0, "hi", "hi", sp("hi"), resp, err)
			if got.Verdict != tt.wantVerdict || got.Attempts != tt.wantAttempts {
				t.Errorf(
					"got %v after %d attempts (err %v), want %v after %d",
					got.Verdict,
					got.Attempts,
					err,
					tt.wantVerdict,
					tt.wantAttempts,
				)
			}
			if n := len(clock.Sleeps()); n != tt.wantAttempts-1 {
				t.Errorf("sleeps: got %d, want %d", n, tt.wantAttempts-1)
			}
		})
	}
}

func TestHTTPClientContextCancel(t *testing.T) {
	gw := reply{status: http.StatusGatewayTimeout}

	t.Run("during backoff", func(t *testing.T) {
		srv := newFakeSandbox(t, gw)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var sleeps int
		c, err := NewHTTPClient(HTTPOptions{URL: srv.srv.URL, Sleep: func(ctx context.Context, d time.Duration) error {
			sleeps++
			cancel()
			return ctx.Err()
		}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Run(ctx, pythonRequest())
		var apiErr *APIError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &apiErr) || resp != nil {
			t.Fatalf("got %v, %v, want *APIError wrapping context.Canceled", resp, err)
		}
		if apiErr.Attempts != 1 || sleeps != 1 || len(srv.requests()) != 1 {
			t.Errorf("got %d attempts, %d sleeps, %d requests, want 1 each", apiErr.Attempts, sleeps, len(srv.requests()))
		}
	})

	t.Run("in flight", func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		clock := &fakeClock{}
		c := newTestClient(t, srv.URL, DefaultRetryPolicy(), clock)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		resp, err := c.Run(ctx, pythonRequest())
		var apiErr *APIError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &apiErr) || resp != nil {
			t.Fatalf("got %v, %v, want *APIError wrapping context.Canceled", resp, err)
		}
		if apiErr.Attempts != 1 || len(clock.Sleeps()) != 0 {
			t.Errorf("got %d attempts and sleeps %v, want 1 attempt, no sleep", apiErr.Attempts, clock.Sleeps())
		}
	})

	t.Run("already cancelled", func(t *testing.T) {
		srv := newFakeSandbox(t)
		c := newTestClient(t, srv.srv.URL, DefaultRetryPolicy(), &fakeClock{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Run(ctx, pythonRequest())
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if n := len(srv.requests()); n != 0 {
			t.Errorf("server got %d requests, want 0", n)
		}
	})
}

// TestHTTPClientBodyCap checks that a server streaming without end is cut
// off at the cap.
func TestHTTPClientBodyCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"Success","message":"`)
		chunk := []byte(strings.Repeat("x", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, DefaultRetryPolicy(), &fakeClock{})
	SetMaxBody(c, 1<<20)
	resp, err := c.Run(context.Background(), pythonRequest())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Attempts != 1 || resp != nil {
		t.Fatalf("got %v, %v, want *APIError after 1 attempt", resp, err)
	}
	if !strings.Contains(err.Error(), "larger than") {
		t.Errorf("got error %q, want one about the size cap", err)
	}
}

func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		compile, run float64
		want         time.Duration
	}{
		{10, 10, 30 * time.Second},
		{10, 1, 21 * time.Second},
		{0, 0, 10 * time.Second},
		{0.5, 0.25, 10750 * time.Millisecond},
	}
	for _, tt := range tests {
		got := AttemptTimeout(&Request{CompileTimeout: tt.compile, RunTimeout: tt.run})
		if got != tt.want {
			t.Errorf("compile %v run %v: got %v, want %v", tt.compile, tt.run, got, tt.want)
		}
	}
}

// connCounter tracks, from the server's side, how many connections are
// open at once and how many were opened in all.
type connCounter struct {
	mu            sync.Mutex
	open, max, nw int
}

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open++
		c.nw++
		c.max = max(c.max, c.open)
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
}

func TestHTTPClientMaxConns(t *testing.T) {
	success := loadFixture(t, "python_success").Response
	const maxConns, workers, perWorker = 3, 12, 10
	var inFlight, peak atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // keep requests overlapping
		inFlight.Add(-1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(success)
	}))
	var cc connCounter
	srv.Config.ConnState = cc.track
	srv.Start()
	defer srv.Close()

	c, err := NewHTTPClient(HTTPOptions{URL: srv.URL, MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				resp, err := c.Run(context.Background(), pythonRequest())
				if err == nil && resp.Status != StatusSuccess {
					err = fmt.Errorf("status %q", resp.Status)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Run: %v", err)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.max > maxConns || cc.nw > maxConns {
		t.Errorf("connections: got %d open at once, %d opened in all, want at most %d", cc.max, cc.nw, maxConns)
	}
	if p := peak.Load(); p > maxConns {
		t.Errorf("requests in flight: got %d, want at most %d", p, maxConns)
	}
}

// BenchmarkHTTPClient measures requests per second through one client
// against a local server answering python_success.
func BenchmarkHTTPClient(b *testing.B) {
	success := loadFixture(b, "python_success").Response
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(success)
	}))
	defer srv.Close()
	// naive is what a straightforward client does (the default transport,
	// json.Marshal, a decoder on the body), for comparison.
	b.Run("naive", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		defer hc.CloseIdleConnections()
		b.ReportAllocs()
		req := pythonRequest()
		req.Files, req.FetchFiles = map[string]string{}, []string{}
		for b.Loop() {
			body, _ := json.Marshal(req)
			hreq, _ := http.NewRequestWithContext(
				context.Background(),
				http.MethodPost,
				srv.URL+"/run_code",
				bytes.NewReader(body),
			)
			hreq.Header.Set("Content-Type", "application/json")
			hreq.Header.Set("Accept", "application/json")
			hresp, err := hc.Do(hreq)
			if err != nil {
				b.Fatal(err)
			}
			var resp Response
			err = json.NewDecoder(hresp.Body).Decode(&resp)
			hresp.Body.Close()
			if err != nil || resp.Status != StatusSuccess {
				b.Fatalf("got %v %v", resp.Status, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	})
	for _, conns := range []int{1, 8} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			c, err := NewHTTPClient(HTTPOptions{URL: srv.URL, MaxConns: conns})
			if err != nil {
				b.Fatal(err)
			}
			defer c.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(conns)
			b.RunParallel(func(pb *testing.PB) {
				req := pythonRequest()
				for pb.Next() {
					resp, err := c.Run(context.Background(), req)
					if err != nil || resp.Status != StatusSuccess {
						b.Errorf("Run: %v %v", resp, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func TestHTTPClientZeroPolicyIsDefault(t *testing.T) {
	srv := newFakeSandbox(
		t,
		reply{status: 429, header: map[string]string{"Retry-After": "2"}},
		okReply(loadFixture(t, "python_success").Response),
	)
	clock := &fakeClock{}
	c := newTestClient(t, srv.srv.URL, RetryPolicy{}, clock)
	resp, err := c.Run(context.Background(), pythonRequest())
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("got %+v, %v, want a response after 2 attempts", resp, err)
	}
	if s := clock.Sleeps(); !slices.Equal(s, []time.Duration{2 * time.Second}) {
		t.Errorf("sleeps: got %v, want [2s]", s)
	}
}

func TestIsOverload(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name   string
		status int
		err    error
		want   bool
	}{
		{"429", 429, errors.New("http status 429"), true},
		{"503", 503, errors.New("http status 503"), true},
		{"500", 500, errors.New("http status 500"), false},
		{"504 has its own rule", 504, errors.New("gateway timeout (504)"), false},
		{"refused", 0, fmt.Errorf("request failed: %w", &url.Error{Op: "Post", URL: "x", Err: refused}), true},
		{"reset", 0, fmt.Errorf("request failed: %w", syscall.ECONNRESET), true},
		{"closed before answer", 0, fmt.Errorf("request failed: %w", io.EOF), true},
		{"attempt timed out", 0, fmt.Errorf("no response within 30s: %w", context.DeadlineExceeded), false},
		{"net timeout", 0, &net.OpError{Op: "read", Err: timeoutErr{}}, false},
		{"dns failure", 0, &net.DNSError{Err: "no such host", Name: "sandbox", IsNotFound: true}, false},
		{"other", 0, errors.New("tls: bad certificate"), false},
	}
	for _, tt := range tests {
		if got := IsOverload(tt.status, tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// attemptsPolicy bounds overload retries by count (5 attempts), not by
// time: the policy before --outage-grace, and what OutageGrace 0 gives.
func attemptsPolicy() RetryPolicy {
	p := DefaultRetryPolicy()
	p.OutageGrace = 0
	return p
}
