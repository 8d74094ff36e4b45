package server

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
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// fakeClient is a sandboxclient.Client whose answer is a function; it
// records every request it is asked to run.
type fakeClient struct {
	run func(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error)

	mu   sync.Mutex
	reqs []*sandboxclient.Request
}

func (f *fakeClient) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.run(ctx, req)
}

func (f *fakeClient) requests() []*sandboxclient.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sandboxclient.Request(nil), f.reqs...)
}

// echoClient answers Success with the request's stdin as stdout.
func echoClient() *fakeClient {
	return &fakeClient{run: func(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
		out := ""
		if req.Stdin != nil {
			out = *req.Stdin
		}
		zero := 0
		return &sandboxclient.Response{
			Status: sandboxclient.StatusSuccess,
			RunResult: &sandboxclient.StepResult{
				Status: sandboxclient.StepFinished, ExecutionTime: 0.01, ReturnCode: &zero, Stdout: out,
			},
		}, nil
	}}
}

// blockingClient holds every run until release is closed (or the run's
// context ends), announcing each start on started.
type blockingClient struct {
	*fakeClient
	started  chan struct{}
	release  chan struct{}
	canceled chan struct{} // one send per run whose context ended first
}

func newBlockingClient() *blockingClient {
	b := &blockingClient{
		started:  make(chan struct{}, 100),
		release:  make(chan struct{}),
		canceled: make(chan struct{}, 100),
	}
	echo := echoClient()
	b.fakeClient = &fakeClient{
		run: func(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
			b.started <- struct{}{}
			select {
			case <-b.release:
				return echo.run(ctx, req)
			case <-ctx.Done():
				b.canceled <- struct{}{}
				return nil, ctx.Err()
			}
		},
	}
	return b
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

const pythonHello = `{"code": "print(input())", "language": "python", "stdin": "hi"}`

func TestRunCodeStatusCodes(t *testing.T) {
	srv := httptest.NewServer(New(echoClient(), Options{MaxBodyBytes: 1024}).Handler())
	defer srv.Close()

	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantCode   int
		wantDetail bool // a 422 detail list with loc/msg/type
	}{
		{"valid", http.MethodPost, "/run_code", pythonHello, http.StatusOK, false},
		{
			"valid fixture shape",
			http.MethodPost,
			"/run_code",
			`{"compile_timeout": 10, "run_timeout": 10.0, "code": "x", "stdin": null, "memory_limit_MB": 1024, "language": "cpp", "files": {}, "fetch_files": []}`,
			http.StatusOK,
			false,
		},
		{"get", http.MethodGet, "/run_code", "", http.StatusMethodNotAllowed, false},
		{"put", http.MethodPut, "/run_code", pythonHello, http.StatusMethodNotAllowed, false},
		{
			"too large",
			http.MethodPost,
			"/run_code",
			`{"code": "` + strings.Repeat("x", 2000) + `", "language": "python"}`,
			http.StatusRequestEntityTooLarge,
			false,
		},
		{"not json", http.MethodPost, "/run_code", "this is not json", http.StatusUnprocessableEntity, true},
		{"truncated json", http.MethodPost, "/run_code", `{"code": "x", `, http.StatusUnprocessableEntity, true},
		{"two values", http.MethodPost, "/run_code", `{} {}`, http.StatusUnprocessableEntity, true},
		{"empty body", http.MethodPost, "/run_code", "", http.StatusUnprocessableEntity, true},
		{"array body", http.MethodPost, "/run_code", "[]", http.StatusUnprocessableEntity, true},
		{
			"unknown language",
			http.MethodPost,
			"/run_code",
			`{"code": "x", "language": "cobol"}`,
			http.StatusUnprocessableEntity,
			true,
		},
		{
			"language not a string",
			http.MethodPost,
			"/run_code",
			`{"code": "x", "language": 3}`,
			http.StatusUnprocessableEntity,
			true,
		},
		{"missing code", http.MethodPost, "/run_code", `{"language": "python"}`, http.StatusUnprocessableEntity, true},
		{"missing language", http.MethodPost, "/run_code", `{"code": "x"}`, http.StatusUnprocessableEntity, true},
		{
			"bad timeout",
			http.MethodPost,
			"/run_code",
			`{"code": "x", "language": "python", "run_timeout": "soon"}`,
			http.StatusUnprocessableEntity,
			true,
		},
		{
			"null timeout",
			http.MethodPost,
			"/run_code",
			`{"code": "x", "language": "python", "run_timeout": null}`,
			http.StatusUnprocessableEntity,
			true,
		},
		{
			"stdin not a string",
			http.MethodPost,
			"/run_code",
			`{"code": "x", "language": "python", "stdin": 5}`,
			http.StatusUnprocessableEntity,
			true,
		},
		{"health", http.MethodGet, "/health", "", http.StatusOK, false},
		{"health post", http.MethodPost, "/health", "", http.StatusMethodNotAllowed, false},
		{"metrics", http.MethodGet, "/metrics", "", http.StatusOK, false},
		{"unknown path", http.MethodGet, "/nope", "", http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.method, tt.path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("got HTTP %d (%s), want %d", resp.StatusCode, body, tt.wantCode)
			}
			if tt.wantCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
				t.Errorf("got no Allow header on 405")
			}
			if !tt.wantDetail {
				return
			}
			var v struct {
				Detail []map[string]json.RawMessage `json:"detail"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("422 body %s is not JSON: %v", body, err)
			}
			if len(v.Detail) == 0 {
				t.Fatalf("got an empty detail list in %s", body)
			}
			for _, d := range v.Detail {
				for _, k := range []string{"loc", "msg", "type"} {
					if _, ok := d[k]; !ok {
						t.Errorf("detail entry %v lacks %q", d, k)
					}
				}
			}
		})
	}
}

func TestRunCodeUnknownLanguageDetail(t *testing.T) {
	fake := echoClient()
	srv := httptest.NewServer(New(fake, Options{}).Handler())
	defer srv.Close()
	resp, body := post(t, srv.URL+"/run_code", `{"code": "x", "language": "cobol"}`)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("got HTTP %d, want 422", resp.StatusCode)
	}
	var v struct {
		Detail []struct {
			Loc  []any `json:"loc"`
			Type string
			Ctx  struct {
				Given     string   `json:"given"`
				Permitted []string `json:"permitted"`
			} `json:"ctx"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Detail) != 1 {
		t.Fatalf("got %d detail entries, want 1: %s", len(v.Detail), body)
	}
	d := v.Detail[0]
	if got, want := fmt.Sprint(d.Loc), "[body language]"; got != want {
		t.Errorf("got loc %s, want %s", got, want)
	}
	if d.Ctx.Given != "cobol" || !reflect.DeepEqual(d.Ctx.Permitted, sandboxclient.SupportedLanguages) {
		t.Errorf("got ctx given=%q permitted=%v, want cobol and the supported languages", d.Ctx.Given, d.Ctx.Permitted)
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("client ran %d requests for an unknown language, want 0", n)
	}
}

func TestRunCodeDefaults(t *testing.T) {
	fake := echoClient()
	srv := httptest.NewServer(New(fake, Options{}).Handler())
	defer srv.Close()

	tests := []struct {
		name string
		body string
		want sandboxclient.Request
	}{
		{
			name: "only required fields",
			body: `{"code": "print(1)", "language": "python"}`,
			want: sandboxclient.Request{
				CompileTimeout: 10,
				RunTimeout:     10,
				Code:           "print(1)",
				MemoryLimitMB:  -1,
				Language:       "python",
				Files:          map[string]string{},
				FetchFiles:     []string{},
			},
		},
		{
			name: "verl's request",
			body: `{"compile_timeout": 4, "run_timeout": 4.5, "code": "c", "stdin": "in", "memory_limit_MB": 1024, "language": "cpp", "files": {}, "fetch_files": []}`,
			want: sandboxclient.Request{
				CompileTimeout: 4,
				RunTimeout:     4.5,
				Code:           "c",
				Stdin:          ptr("in"),
				MemoryLimitMB:  1024,
				Language:       "cpp",
				Files:          map[string]string{},
				FetchFiles:     []string{},
			},
		},
		{
			name: "null stdin, numeric strings, files, extra fields",
			body: `{"code": "c", "language": "go", "stdin": null, "run_timeout": "2.5", "memory_limit_MB": 512.0, "files": {"a.txt": "aGk=", "b": null}, "fetch_files": ["out.txt"], "args": ["-q"]}`,
			want: sandboxclient.Request{
				CompileTimeout: 10,
				RunTimeout:     2.5,
				Code:           "c",
				MemoryLimitMB:  512,
				Language:       "go",
				Files:          map[string]string{"a.txt": "aGk=", "b": ""},
				FetchFiles:     []string{"out.txt"},
			},
		},
		{
			name: "empty stdin stays empty, not null",
			body: `{"code": "c", "language": "bash", "stdin": ""}`,
			want: sandboxclient.Request{
				CompileTimeout: 10,
				RunTimeout:     10,
				Code:           "c",
				Stdin:          ptr(""),
				MemoryLimitMB:  -1,
				Language:       "bash",
				Files:          map[string]string{},
				FetchFiles:     []string{},
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/run_code", tt.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got HTTP %d (%s), want 200", resp.StatusCode, body)
			}
			reqs := fake.requests()
			if len(reqs) != i+1 {
				t.Fatalf("client got %d requests, want %d", len(reqs), i+1)
			}
			got := *reqs[i]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got request\n%s\nwant\n%s", dump(got), dump(tt.want))
			}
		})
	}
}

// TestRunCodeFixtures replays real SandboxFusion exchanges: the server must
// hand the client exactly the request verl sent and send back the client's
// response byte-for-byte equivalent (same keys, same values, same nulls).
func TestRunCodeFixtures(t *testing.T) {
	paths, err := filepath.Glob("../testdata/protocol/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures found: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Request  json.RawMessage `json:"request"`
				Response json.RawMessage `json:"response"`
			}
			if err := json.Unmarshal(raw, &fx); err != nil {
				t.Fatal(err)
			}
			if len(fx.Request) == 0 {
				t.Skip("a note without a request")
			}
			var wantReq sandboxclient.Request
			var canned sandboxclient.Response
			if err := json.Unmarshal(fx.Request, &wantReq); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(fx.Response, &canned); err != nil {
				t.Fatal(err)
			}
			fake := &fakeClient{run: func(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error) {
				c := canned
				return &c, nil
			}}
			srv := httptest.NewServer(New(fake, Options{}).Handler())
			defer srv.Close()

			resp, body := post(t, srv.URL+"/run_code", string(fx.Request))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got HTTP %d (%s), want 200", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("got Content-Type %q, want application/json", got)
			}
			reqs := fake.requests()
			if len(reqs) != 1 || !reflect.DeepEqual(*reqs[0], wantReq) {
				t.Fatalf("client got %s, want %s", dump(reqs), dump(wantReq))
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("response %s is not JSON: %v", body, err)
			}
			if err := json.Unmarshal(fx.Response, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got response\n%s\nwant\n%s", body, fx.Response)
			}
		})
	}
}

func TestRunCodeResponseKeys(t *testing.T) {
	tests := []struct {
		name string
		run  func(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error)
	}{
		{"echo", echoClient().run},
		{"bare response", func(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error) {
			return &sandboxclient.Response{Status: sandboxclient.StatusFailed}, nil
		}},
		{"client error", func(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error) {
			return nil, errors.New("no runner for sql")
		}},
	}
	wantKeys := []string{"compile_result", "executor_pod_name", "files", "message", "run_result", "status"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(New(&fakeClient{run: tt.run}, Options{}).Handler())
			defer srv.Close()
			resp, body := post(t, srv.URL+"/run_code", pythonHello)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got HTTP %d, want 200", resp.StatusCode)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, wantKeys) {
				t.Errorf("got keys %v, want %v", keys, wantKeys)
			}
			if got := string(m["files"]); got != "{}" {
				t.Errorf("got files %s, want {}", got)
			}
			if got := string(m["executor_pod_name"]); got != "null" {
				t.Errorf("got executor_pod_name %s, want null", got)
			}
			if string(m["run_result"]) != "null" {
				var rr map[string]json.RawMessage
				if err := json.Unmarshal(m["run_result"], &rr); err != nil {
					t.Fatal(err)
				}
				var rk []string
				for k := range rr {
					rk = append(rk, k)
				}
				sort.Strings(rk)
				if want := []string{"execution_time", "return_code", "status", "stderr", "stdout"}; !reflect.DeepEqual(rk, want) {
					t.Errorf("got run_result keys %v, want %v", rk, want)
				}
			}
		})
	}
}

func TestRunCodeClientErrorIsSandboxError(t *testing.T) {
	fake := &fakeClient{run: func(context.Context, *sandboxclient.Request) (*sandboxclient.Response, error) {
		return nil, errors.New("no runner for sql")
	}}
	srv := httptest.NewServer(New(fake, Options{}).Handler())
	defer srv.Close()
	resp, body := post(t, srv.URL+"/run_code", `{"code": "select 1;", "language": "sql"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got HTTP %d, want 200", resp.StatusCode)
	}
	var r sandboxclient.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != sandboxclient.StatusSandboxError || !strings.Contains(r.Message, "no runner for sql") {
		t.Errorf("got status %q message %q, want SandboxError naming the cause", r.Status, r.Message)
	}
	if got := judge.Case(0, "", "", nil, &r, nil).Verdict; got != verdict.APIError {
		t.Errorf("got verdict %v, want -1", got)
	}
}

func TestRunCodeQueueOverflow(t *testing.T) {
	t.Run("count", func(t *testing.T) { testQueueOverflow(t, Options{Slots: 1, MaxQueue: 1}) })
	// Room for one waiting body, not two.
	t.Run("bytes", func(t *testing.T) {
		testQueueOverflow(t, Options{Slots: 1, MaxQueueBytes: int64(len(pythonHello)*2 - 1)})
	})
}

func testQueueOverflow(t *testing.T, opts Options) {
	block := newBlockingClient()
	s := New(block, opts)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	type result struct {
		code int
		err  error
	}
	results := make(chan result, 2)
	send := func() {
		resp, err := http.Post(srv.URL+"/run_code", "application/json", strings.NewReader(pythonHello))
		if err != nil {
			results <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		results <- result{code: resp.StatusCode}
	}
	go send()
	<-block.started // the one slot is taken
	go send()
	waitFor(t, "one queued request", func() bool { return s.metrics.queueDepth.Load() == 1 })

	resp, body := post(t, srv.URL+"/run_code", pythonHello)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got HTTP %d (%s), want 503", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("got Retry-After %q, want 1", got)
	}
	// The answer and /health tell the load: 1 slot, running 1, waiting 1;
	// a full server is not ready.
	for _, h := range []http.Header{resp.Header, health(t, srv.URL, http.StatusServiceUnavailable, "full").Header} {
		if h.Get(sandboxclient.SlotsHeader) != "1" || h.Get(sandboxclient.RunningHeader) != "1" ||
			h.Get(sandboxclient.WaitingHeader) != "1" {
			t.Errorf("load headers %v, want slots 1, running 1, waiting 1", h)
		}
	}

	close(block.release)
	for range 2 {
		r := <-results
		if r.err != nil || r.code != http.StatusOK {
			t.Errorf("got %d, %v for an admitted request, want 200", r.code, r.err)
		}
	}
	if got := len(block.requests()); got != 2 {
		t.Errorf("client ran %d requests, want 2", got)
	}
	// Slots are free again: a new request is admitted, and says it did
	// not wait.
	resp, _ = post(t, srv.URL+"/run_code", pythonHello)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("got HTTP %d after the queue drained, want 200", resp.StatusCode)
	}
	if w, err := strconv.ParseFloat(resp.Header.Get(sandboxclient.QueueWaitHeader), 64); err != nil || w < 0 || w > 0.5 {
		t.Errorf("queue wait header %q of a request that found a free slot", resp.Header.Get(sandboxclient.QueueWaitHeader))
	}
	health(t, srv.URL, http.StatusOK, "ok")
}

// health asks /health and checks its code and status.
func health(t *testing.T, url string, code int, status string) *http.Response {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != code || v["status"] != status {
		t.Errorf("/health: HTTP %d %v, want %d status %s", resp.StatusCode, v, code, status)
	}
	return resp
}

// TestQueueWaitIsTold: a request that waited for the slot says how long,
// and the fleet's client reads it.
func TestQueueWaitIsTold(t *testing.T) {
	block := newBlockingClient()
	s := New(block, Options{Slots: 1})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan *sandboxclient.Response, 1)
	go func() {
		r, _ := c.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: "print(1)"})
		first <- r
	}()
	<-block.started
	second := make(chan *sandboxclient.Response, 1)
	go func() {
		r, _ := c.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: "print(2)"})
		second <- r
	}()
	waitFor(t, "one queued request", func() bool { return s.metrics.queueDepth.Load() == 1 })
	time.Sleep(200 * time.Millisecond)
	block.release <- struct{}{}
	<-block.started
	block.release <- struct{}{}
	r1, r2 := <-first, <-second
	if r1 == nil || r2 == nil || !r1.QueueWaitKnown || !r2.QueueWaitKnown {
		t.Fatalf("answers %+v %+v, want both with the queue wait known", r1, r2)
	}
	if r1.QueueWait > 100*time.Millisecond || r2.QueueWait < 200*time.Millisecond {
		t.Errorf(
			"queue waits %v and %v: want the first about none, the second at least the 200 ms it was held",
			r1.QueueWait,
			r2.QueueWait,
		)
	}
}

func TestRunCodeClientDisconnectCancels(t *testing.T) {
	block := newBlockingClient()
	s := New(block, Options{Slots: 1, MaxQueue: 4})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	postCtx := func(ctx context.Context, done chan<- error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/run_code", strings.NewReader(pythonHello))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	queuedCtx, cancelQueued := context.WithCancel(context.Background())
	defer cancelRun()
	defer cancelQueued()
	runDone := make(chan error, 1)
	queuedDone := make(chan error, 1)

	go postCtx(runCtx, runDone)
	<-block.started
	go postCtx(queuedCtx, queuedDone)
	waitFor(t, "one queued request", func() bool { return s.metrics.queueDepth.Load() == 1 })

	cancelQueued()
	<-queuedDone
	waitFor(t, "the queue to empty", func() bool { return s.metrics.queueDepth.Load() == 0 })

	cancelRun()
	<-runDone
	select {
	case <-block.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the running request's context was not cancelled after the client went away")
	}
	waitFor(t, "the slot to be free", func() bool { return s.metrics.inFlight.Load() == 0 })
	if got := len(block.requests()); got != 1 {
		t.Errorf("client ran %d requests, want 1 (the queued one left before its turn)", got)
	}
}

func TestHealth(t *testing.T) {
	srv := httptest.NewServer(New(echoClient(), Options{}).Handler())
	defer srv.Close()
	health(t, srv.URL, http.StatusOK, "ok")
}

func TestMetricsAfterRequests(t *testing.T) {
	fake := &fakeClient{run: func(_ context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
		one := 1
		if req.Code == "fail" {
			return &sandboxclient.Response{
				Status:    sandboxclient.StatusFailed,
				RunResult: &sandboxclient.StepResult{Status: sandboxclient.StepFinished, ReturnCode: &one},
			}, nil
		}
		return echoClient().run(context.Background(), req)
	}}
	srv := httptest.NewServer(New(fake, Options{}).Handler())
	defer srv.Close()

	bodies := []string{
		`{"code": "ok", "language": "python"}`,
		`{"code": "ok", "language": "python"}`,
		`{"code": "fail", "language": "python"}`,
		`{"code": "ok", "language": "cpp"}`,
		`{"code": "ok", "language": "cobol"}`,
		`not json`,
	}
	for _, b := range bodies {
		post(t, srv.URL+"/run_code", b)
	}
	resp, err := http.Get(srv.URL + "/run_code")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("got Content-Type %q, want the Prometheus text format", ct)
	}
	text, _ := io.ReadAll(resp.Body)
	wantLines := []string{
		`verl_score_run_code_requests_total{code="200"} 4`,
		`verl_score_run_code_requests_total{code="405"} 1`,
		`verl_score_run_code_requests_total{code="422"} 2`,
		`verl_score_run_code_responses_total{status="Failed"} 1`,
		`verl_score_run_code_responses_total{status="Success"} 3`,
		`verl_score_run_duration_seconds_bucket{language="python",le="+Inf"} 3`,
		`verl_score_run_duration_seconds_count{language="python"} 3`,
		`verl_score_run_duration_seconds_count{language="cpp"} 1`,
		`verl_score_runs_in_flight 0`,
		`verl_score_queue_depth 0`,
		`# TYPE verl_score_run_duration_seconds histogram`,
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(text), "\n") {
		lines[l] = true
	}
	for _, w := range wantLines {
		if !lines[w] {
			t.Errorf("metrics lack line %q; got:\n%s", w, text)
		}
	}
	if strings.Contains(string(text), `language="cobol"`) {
		t.Errorf("a rejected language got a duration series:\n%s", text)
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	block := newBlockingClient()
	s := New(block, Options{Slots: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	addrCh := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrCh <- a }) }()
	addr := (<-addrCh).String()
	url := "http://" + addr + "/run_code"

	type result struct {
		code int
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(
			url,
			"application/json",
			strings.NewReader(`{"code": "x", "language": "python", "stdin": "still here"}`),
		)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{code: resp.StatusCode, body: b, err: err}
	}()
	<-block.started
	cancel()

	// Draining: /health is not ready and new requests are turned away with
	// Retry-After while the run goes on.
	waitFor(t, "/health to say draining", func() bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	turned, err := http.Post(url, "application/json", strings.NewReader(`{"code": "x", "language": "python"}`))
	if err != nil {
		t.Fatalf("a new request while draining: %v", err)
	}
	turned.Body.Close()
	if turned.StatusCode != http.StatusServiceUnavailable || turned.Header.Get("Retry-After") == "" {
		t.Errorf(
			"a new request while draining: %d, Retry-After %q; want 503 with Retry-After",
			turned.StatusCode,
			turned.Header.Get("Retry-After"),
		)
	}
	select {
	case err := <-served:
		t.Fatalf("ListenAndServe returned %v before the in-flight run finished", err)
	default:
	}

	close(block.release)
	r := <-done
	if r.err != nil || r.code != http.StatusOK {
		t.Fatalf("got %d, %v for the in-flight request, want 200", r.code, r.err)
	}
	var resp sandboxclient.Response
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "still here" {
		t.Errorf("got body %s (%v), want the run's stdout", r.body, err)
	}
	if err := <-served; err != nil {
		t.Errorf("ListenAndServe returned %v, want nil", err)
	}
	// Then the listener is gone.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener is still open after the shutdown")
	}
	select {
	case <-block.canceled:
		t.Error("the in-flight run was cancelled by the shutdown")
	default:
	}
}

func TestServeShutdownTimeoutCancelsRuns(t *testing.T) {
	block := newBlockingClient()
	s := New(block, Options{ShutdownTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrCh <- a }) }()
	url := "http://" + (<-addrCh).String() + "/run_code"

	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader(pythonHello))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-block.started
	cancel()
	if err := <-served; err == nil {
		t.Error("ListenAndServe returned nil with a run still going past the shutdown timeout, want an error")
	}
	select {
	case <-block.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the run still going after the shutdown timeout was not cancelled")
	}
}

func TestListenAndServeBadAddress(t *testing.T) {
	s := New(echoClient(), Options{})
	err := s.ListenAndServe(context.Background(), "256.0.0.1:bad", nil)
	if err == nil {
		t.Fatal("got nil error for an unusable address, want one")
	}
}

func TestServerConcurrentEcho(t *testing.T) {
	srv := httptest.NewServer(New(echoClient(), Options{Slots: 4, MaxQueue: 64}).Handler())
	defer srv.Close()
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			in := fmt.Sprintf("input %d", i)
			b, _ := json.Marshal(map[string]any{"code": "x", "language": "python", "stdin": in})
			resp, err := http.Post(srv.URL+"/run_code", "application/json", bytes.NewReader(b))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var r sandboxclient.Response
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				errs <- err
				return
			}
			if r.RunResult == nil || r.RunResult.Stdout != in {
				errs <- fmt.Errorf("request %d: got %+v, want stdout %q", i, r.RunResult, in)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (the condition is expected within milliseconds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// goTestTime is the duration `go test` prints after its package.

func TestRunCodeNoQueue(t *testing.T) {
	block := newBlockingClient()
	s := New(block, Options{Slots: 1, MaxQueue: -1})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/run_code", "application/json", strings.NewReader(pythonHello))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-block.started
	resp, body := post(t, srv.URL+"/run_code", pythonHello)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("got HTTP %d (%s) with the only slot busy and no queue, want 503", resp.StatusCode, body)
	}
	close(block.release)
	if got := <-first; got != http.StatusOK {
		t.Errorf("got HTTP %d for the running request, want 200", got)
	}
}

// BenchmarkServerOverhead measures what the HTTP layer adds per request
// (JSON in and out, queue, metrics) with a client that answers at once.
func BenchmarkServerOverhead(b *testing.B) {
	srv := httptest.NewServer(New(echoClient(), Options{Slots: 8, MaxQueue: 64}).Handler())
	defer srv.Close()
	hc, err := sandboxclient.NewHTTPClient(
		sandboxclient.HTTPOptions{URL: srv.URL + "/run_code", MaxConns: 8, Retry: sandboxclient.VerlRetryPolicy()},
	)
	if err != nil {
		b.Fatal(err)
	}
	in := "hello"
	req := &sandboxclient.Request{
		CompileTimeout: 10,
		RunTimeout:     10,
		MemoryLimitMB:  1024,
		Language:       "python",
		Code:           "print(input())",
		Stdin:          &in,
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := hc.Run(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
