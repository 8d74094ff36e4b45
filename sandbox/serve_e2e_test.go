//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/verdict"
)

// fakeClient is a sandboxclient.Client whose answer is a function; it
// records every request it is asked to run.
var goTestTime = regexp.MustCompile(`\tcommand-line-arguments\t[0-9.]+s`)

// untimed is stdout without go test's durations.
func untimed(s string) string {
	s = goTestTime.ReplaceAllString(s, "\tcommand-line-arguments\tTIME")
	s = junitTime.ReplaceAllString(s, "finished after TIME ms")
	return pytestTime.ReplaceAllString(s, " in TIMEs =")
}

// junitTime is the run time JUnit's console launcher prints.
var junitTime = regexp.MustCompile(`finished after [0-9]+ ms`)

// pytestTime is the run time on pytest's last line ("1 passed in 0.01s").
var pytestTime = regexp.MustCompile(` in [0-9.]+s =`)

// newLocalServer starts a real Local behind the server on an httptest
// listener and returns an HTTP client for it, as verl-score's own remote
// path would use.
func newLocalServer(t *testing.T, opts server.Options) (*Local, *sandboxclient.HTTPClient) {
	t.Helper()
	local, err := New(Options{Concurrency: opts.Slots, Warn: io.Discard})
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	t.Cleanup(func() { local.Close() })
	srv := httptest.NewServer(server.New(local, opts).Handler())
	t.Cleanup(srv.Close)
	hc, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{
		URL:      srv.URL + "/run_code",
		MaxConns: opts.Slots + opts.MaxQueue,
		Retry:    sandboxclient.VerlRetryPolicy(),
	})
	if err != nil {
		t.Fatalf("NewHTTPClient: %v", err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return local, hc
}

// TestServeLanguageCasesEndToEnd runs the whole conformance matrix through
// the HTTP server and directly through Local: both must give the case's
// verdict, with the same statuses.
func TestServeLanguageCasesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs every language")
	}
	serveMatrix(t, lang.CasesOf(false))
}

// serveMatrix runs cases through the HTTP server and directly through
// Local: both must give each case's verdict, with the same statuses.
func serveMatrix(t *testing.T, cases []lang.Case) {
	local, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 64})
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	ctx := context.Background()
	// The cases run as parallel subtests, so at most -parallel (GOMAXPROCS
	// by default) at once: a request waiting in the server's queue would
	// spend its HTTP timeout there, as with SandboxFusion.
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			needTools(t, local, c.Language)
			t.Parallel()
			// Through HTTP first, so that Local's compile cache cannot make
			// the server path look better than the direct one.
			hResp, hErr := hc.Run(ctx, c.Request())
			dResp, dErr := local.Run(ctx, c.Request())
			viaHTTP, direct := c.Judge(hResp, hErr), c.Judge(dResp, dErr)
			if viaHTTP.Verdict != c.Want {
				t.Errorf(
					"via HTTP: got verdict %v (%s), want %v; response %s",
					viaHTTP.Verdict,
					viaHTTP.Status,
					c.Want,
					dump(hResp),
				)
			}
			if direct.Verdict != c.Want {
				t.Errorf("direct: got verdict %v (%s), want %v; response %s", direct.Verdict, direct.Status, c.Want, dump(dResp))
			}
			if viaHTTP.Status != direct.Status ||
				deref(viaHTTP.APIStatus) != deref(direct.APIStatus) ||
				deref(viaHTTP.CompileStatus) != deref(direct.CompileStatus) ||
				deref(viaHTTP.RunStatus) != deref(direct.RunStatus) {
				t.Errorf("via HTTP: got status %s api %s compile %s run %s; direct: %s api %s compile %s run %s",
					viaHTTP.Status, deref(viaHTTP.APIStatus), deref(viaHTTP.CompileStatus), deref(viaHTTP.RunStatus),
					direct.Status, deref(direct.APIStatus), deref(direct.CompileStatus), deref(direct.RunStatus))
			}
			if c.Want == verdict.True || c.Want == verdict.False {
				if untimed(deref(viaHTTP.Stdout)) != untimed(deref(direct.Stdout)) {
					t.Errorf("via HTTP: got stdout %q, direct %q", deref(viaHTTP.Stdout), deref(direct.Stdout))
				}
			}
		})
	}
}

// TestServeConcurrentEchoEndToEnd sends many requests at once, each with
// its own stdin, through the server to real Python processes: every answer
// must carry its own input back.
func TestServeConcurrentEchoEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	_, hc := newLocalServer(t, server.Options{Slots: 2, MaxQueue: 64})
	const n = 64
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := fmt.Sprintf("request %d says %x\n", i, i*7919)
			req := &sandboxclient.Request{
				CompileTimeout: 10, RunTimeout: 20, MemoryLimitMB: 1024, Language: "python",
				Code:  "import sys\nsys.stdout.write(sys.stdin.read())\n",
				Stdin: &in, Files: map[string]string{}, FetchFiles: []string{},
			}
			resp, err := hc.Run(context.Background(), req)
			if err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			if resp.Status != sandboxclient.StatusSuccess || resp.RunResult == nil || resp.RunResult.Stdout != in {
				errs <- fmt.Errorf("request %d: got %s, want stdout %q", i, dump(resp), in)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestServeUnknownLanguageEndToEnd: the HTTP client sees a non-2xx answer
// (an API error, verdict -1), as with a real SandboxFusion server.
func TestServeUnknownLanguageEndToEnd(t *testing.T) {
	_, hc := newLocalServer(t, server.Options{Slots: 1})
	stdin := ""
	resp, err := hc.Run(context.Background(), &sandboxclient.Request{
		CompileTimeout: 10, RunTimeout: 10, MemoryLimitMB: 1024, Language: "cobol", Code: "x", Stdin: &stdin,
	})
	if err == nil {
		t.Fatalf("got response %s, want an API error", dump(resp))
	}
	if got := judge.Case(0, "", "", nil, resp, err).Verdict; got != verdict.APIError {
		t.Errorf("got verdict %v, want -1", got)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// BenchmarkPythonEcho compares a trivial Python request run directly by
// Local with the same request through the server.
func BenchmarkPythonEcho(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	local, err := New(Options{Concurrency: 2, Warn: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	srv := httptest.NewServer(server.New(local, server.Options{Slots: 2}).Handler())
	defer srv.Close()
	hc, err := sandboxclient.NewHTTPClient(
		sandboxclient.HTTPOptions{URL: srv.URL + "/run_code", MaxConns: 2, Retry: sandboxclient.VerlRetryPolicy()},
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
	for _, bc := range []struct {
		name string
		c    sandboxclient.Client
	}{{"direct", local}, {"http", hc}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetParallelism(1) // GOMAXPROCS goroutines: the sandbox's 2 slots on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := bc.c.Run(context.Background(), req)
					if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "hello\n" {
						b.Errorf("got %s, %v", dump(resp), err)
						return
					}
				}
			})
		})
	}
}

func ptr[T any](v T) *T { return &v }

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
