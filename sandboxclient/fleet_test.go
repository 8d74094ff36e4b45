package sandboxclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/verl-score/verl-score/sandboxclient"
)

// endpointServer answers /run_code with the recorded python_success body
// while healthy, and with 503 (or by closing the connection) while sick.
type endpointServer struct {
	srv      *httptest.Server
	sick     atomic.Bool
	reset    bool // sick means: close the connection without an answer
	runs     atomic.Int64
	auth     atomic.Value // last Authorization header seen
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	hold     time.Duration
}

func newEndpoint(t *testing.T, body []byte, hold time.Duration) *endpointServer {
	t.Helper()
	e := &endpointServer{hold: hold}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.auth.Store(r.Header.Get("Authorization"))
		if e.sick.Load() {
			if e.reset {
				if hj, ok := w.(http.Hijacker); ok {
					c, _, _ := hj.Hijack()
					c.Close()
					return
				}
			}
			http.Error(w, `{"detail":"overloaded"}`, http.StatusServiceUnavailable)
			return
		}
		n := e.inFlight.Add(1)
		for m := e.maxSeen.Load(); n > m && !e.maxSeen.CompareAndSwap(m, n); m = e.maxSeen.Load() {
		}
		time.Sleep(e.hold)
		e.inFlight.Add(-1)
		e.runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func newTestFleet(t *testing.T, urls []string, header http.Header) *Fleet {
	t.Helper()
	f, err := NewFleet(FleetOptions{URLs: urls, ProbeEvery: 20 * time.Millisecond,
		HTTP: HTTPOptions{MaxConns: 16, Header: header, Rand: func() float64 { return 0.5 },
			Retry: RetryPolicy{
				Overload:             true,
				OverloadAttempts:     3,
				OverloadBase:         time.Millisecond,
				OverloadMax:          5 * time.Millisecond,
				SandboxErrorAttempts: 1,
			}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// runMany sends n requests at most conc at once and returns how many got
// an answer.
func runMany(t *testing.T, c Client, n, conc int) (answered int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := c.Run(context.Background(), pythonRequest())
			if err == nil && resp.Status == StatusSuccess {
				mu.Lock()
				answered++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return answered
}

// A refused endpoint, one that answers 503 and one that resets every
// connection cost no answer while a healthy one is left: each failed
// request moves on, and the failing endpoints are ejected after a few
// failures, so the healthy one carries nearly everything.
func TestFleetFailsOverAndEjects(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	good := newEndpoint(t, body, 0)
	busy := newEndpoint(t, body, 0)
	busy.sick.Store(true)
	resetting := newEndpoint(t, body, 0)
	resetting.reset = true
	resetting.sick.Store(true)
	refused := "http://" + closedAddr(t) + "/run_code"
	f := newTestFleet(t, []string{refused, busy.srv.URL, resetting.srv.URL, good.srv.URL}, nil)

	const n = 300
	if got := runMany(t, f, n, 8); got != n {
		t.Fatalf("%d of %d requests answered, want all: the healthy endpoint was left", got, n)
	}
	stats := f.Stats()
	for i, name := range []string{"refused", "503", "reset"} {
		s := stats[i]
		if s.Ejections < 1 || !s.Ejected {
			t.Errorf("%s endpoint: %d ejections (ejected at end %v), want ejected", name, s.Ejections, s.Ejected)
		}
		// Ejected after DefaultEjectAfter failures in a row; a few more
		// may be in flight then, and each probe is one more.
		if s.Requests > 60 {
			t.Errorf("%s endpoint got %d of %d requests: it stayed in rotation", name, s.Requests, n)
		}
	}
	if stats[3].Requests != n || stats[3].Errors != 0 {
		t.Errorf("healthy endpoint: %+v, want all %d requests and no errors", stats[3], n)
	}
	if stats[3].MeanLatencyMS <= 0 {
		t.Errorf("healthy endpoint's mean latency %v", stats[3].MeanLatencyMS)
	}
}

// Only when every endpoint fails does a request fail, after the overload
// rounds; the error says so.
func TestFleetAllEndpointsFail(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	a, b := newEndpoint(t, body, 0), newEndpoint(t, body, 0)
	a.sick.Store(true)
	b.sick.Store(true)
	f := newTestFleet(t, []string{a.srv.URL, b.srv.URL}, nil)
	_, err := f.Run(context.Background(), pythonRequest())
	if err == nil || !strings.Contains(err.Error(), "every sandbox endpoint failed") {
		t.Fatalf("got %v, want every endpoint failed", err)
	}
	ae, ok := err.(*APIError)
	if !ok || ae.Attempts != 6 || ae.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("got %#v, want an APIError after 3 rounds of 2 attempts with status 503", err)
	}
}

// An ejected endpoint is probed and, once it answers again, takes its
// share of the requests.
func TestFleetReadmitsARecoveredEndpoint(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	a, b := newEndpoint(t, body, 0), newEndpoint(t, body, 0)
	a.sick.Store(true)
	f := newTestFleet(t, []string{a.srv.URL, b.srv.URL}, nil)
	runMany(t, f, 20, 1)
	if !f.Stats()[0].Ejected {
		t.Fatal("the sick endpoint was not ejected")
	}
	a.sick.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for f.Stats()[0].Ejected && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if f.Stats()[0].Ejected {
		t.Fatal("the recovered endpoint was never readmitted")
	}
	before := a.runs.Load()
	runMany(t, f, 40, 4)
	if got := a.runs.Load() - before; got < 5 {
		t.Errorf("the readmitted endpoint ran %d of 40 requests", got)
	}
}

// Requests go to the endpoint with the fewest in flight per weight: with
// weights 1 and 3 and slow answers, the second carries about three times
// the first's load.
func TestFleetBalancesByWeight(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	a, b := newEndpoint(t, body, 20*time.Millisecond), newEndpoint(t, body, 20*time.Millisecond)
	f := newTestFleet(t, []string{a.srv.URL, b.srv.URL + "#weight=3"}, nil)
	runMany(t, f, 200, 8)
	ra, rb := a.runs.Load(), b.runs.Load()
	if ra+rb != 200 || rb < 2*ra || rb > 4*ra {
		t.Errorf("weights 1 and 3: %d and %d requests, want about 1:3", ra, rb)
	}
	if a.maxSeen.Load() > 3 {
		t.Errorf("the weight-1 endpoint had %d in flight at once, want at most about 8/4", a.maxSeen.Load())
	}
}

// Headers reach every endpoint; credentials never reach a message.
func TestFleetHeadersAndRedaction(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	a := newEndpoint(t, body, 0)
	t.Setenv("SANDBOX_TOKEN", "s3cret-token")
	name, value, err := ParseHeader("authorization: Bearer $SANDBOX_TOKEN")
	if err != nil || name != "Authorization" || value != "Bearer s3cret-token" {
		t.Fatalf("ParseHeader: %q %q %v", name, value, err)
	}
	refused := "http://user:pa55@" + closedAddr(t) + "/run_code?token=s3cret-token"
	f := newTestFleet(t, []string{a.srv.URL, refused}, http.Header{name: {value}})
	runMany(t, f, 10, 2)
	if got, _ := a.auth.Load().(string); got != "Bearer s3cret-token" {
		t.Errorf("endpoint saw Authorization %q", got)
	}
	c, err := NewHTTPClient(HTTPOptions{URL: refused, Retry: VerlRetryPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), pythonRequest())
	for _, text := range []string{err.Error(), f.Describe(), RedactURL(c.URL()),
		RedactHeader("Authorization: Bearer s3cret-token")} {
		if strings.Contains(text, "s3cret") || strings.Contains(text, "pa55") {
			t.Errorf("a credential is printed: %s", text)
		}
	}
	if !strings.Contains(err.Error(), "REDACTED@127.0.0.1") {
		t.Errorf("the error does not name the endpoint: %v", err)
	}
	if _, _, err := ParseHeader("no colon here"); err == nil {
		t.Error("a header without a colon was accepted")
	}
}

// TestAdaptiveFleetHoldsItsCeiling: with an adaptive limit, 16 callers at
// once never put more than the ceiling in flight at one endpoint (the
// rest wait in the fleet), every request is answered, and the stats say
// where the limit went.
func TestAdaptiveFleetHoldsItsCeiling(t *testing.T) {
	body := loadFixture(t, "python_success").Response
	a, b := newEndpoint(t, body, 5*time.Millisecond), newEndpoint(t, body, 5*time.Millisecond)
	f, err := NewFleet(FleetOptions{URLs: []string{a.srv.URL, b.srv.URL}, Adaptive: &AdaptiveOptions{Start: 1, Max: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runMany(t, f, 200, 16)
	if a.runs.Load()+b.runs.Load() != 200 {
		t.Errorf("%d + %d requests reached the endpoints, want 200", a.runs.Load(), b.runs.Load())
	}
	for i, e := range []*endpointServer{a, b} {
		if e.maxSeen.Load() > 3 {
			t.Errorf("endpoint %d had %d in flight at once, want at most the ceiling 3", i, e.maxSeen.Load())
		}
	}
	for _, st := range f.Stats() {
		if st.Adaptive == nil || st.Adaptive.Highest > 3 || st.Adaptive.Lowest < 1 || st.Adaptive.Limit < 1 {
			t.Errorf("stats of %s: %+v", st.URL, st.Adaptive)
		}
	}
}
