package sandboxclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Fleet.
const (
	// DefaultEjectAfter is how many failures in a row take an endpoint out
	// of rotation.
	DefaultEjectAfter = 3
	// DefaultProbeEvery is the wait before the first probe of an ejected
	// endpoint; it doubles after each failed probe, up to maxProbeEvery.
	DefaultProbeEvery = time.Second
	maxProbeEvery     = 30 * time.Second
)

// FleetOptions configure NewFleet.
type FleetOptions struct {
	// URLs are the endpoints, as HTTPOptions.URL takes them. One may end in
	// "#weight=N" (N > 0, default 1): it then gets N times the share of
	// requests in flight of a weight-1 endpoint.
	URLs []string
	// HTTP holds the options every endpoint's client shares (MaxConns,
	// Retry, Header, Sleep, ...); its URL is ignored.
	HTTP HTTPOptions
	// EjectAfter is the number of endpoint failures in a row (refused or
	// reset connections, 5xx, 429) that takes an endpoint out of rotation
	// until a probe succeeds. 0 means DefaultEjectAfter.
	EjectAfter int
	// ProbeEvery is the wait before the first probe; 0 means
	// DefaultProbeEvery.
	ProbeEvery time.Duration
	// Adaptive, when set, gives each endpoint a limit on its requests in
	// flight that adapts to its answers (adaptive.go); a request waits in
	// the fleet while every endpoint it may go to is at its limit.
	Adaptive *AdaptiveOptions
}

// Fleet is a Client over several SandboxFusion endpoints. Each request
// goes to the endpoint in rotation with the fewest requests in flight
// (relative to its weight). A request that meets an endpoint failure is
// sent again to another endpoint; only when every endpoint failed it does
// the case fail. An endpoint that keeps failing is ejected and probed
// with a tiny /run_code request until it answers again.
type Fleet struct {
	eps        []*endpoint
	retry      RetryPolicy
	sleep      func(ctx context.Context, d time.Duration) error
	ejectAfter int
	probeEvery time.Duration

	closing context.Context
	close   context.CancelFunc
	probes  sync.WaitGroup
}

type endpoint struct {
	client   *HTTPClient
	weight   float64
	inFlight atomic.Int64
	lim      *adaptive // nil: no limit of its own

	mu        sync.Mutex
	failures  int // in a row
	ejected   bool
	requests  int64
	errors    int64
	ejections int64
	latency   time.Duration // sum over the answered requests
	answered  int64
}

// EndpointStats are one endpoint's figures over a run.
type EndpointStats struct {
	URL           string  `json:"url"` // credentials redacted
	Weight        float64 `json:"weight"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	Ejections     int64   `json:"ejections"`
	MeanLatencyMS float64 `json:"mean_latency_ms"`
	Ejected       bool    `json:"ejected_at_end"`
	// Adaptive is where the endpoint's adaptive limit went (--max-concurrent
	// auto); nil without one.
	Adaptive *AdaptiveStats `json:"adaptive,omitempty"`
	// Of repository tasks (SWEFleet): the rollouts it ran, the images
	// routed to it, and those it pulled.
	SWERollouts int64 `json:"swe_rollouts,omitempty"`
	SWEImages   int64 `json:"swe_images,omitempty"`
	SWEPulls    int64 `json:"swe_pulls,omitempty"`
}

// NewFleet builds a client over opts.URLs.
func NewFleet(opts FleetOptions) (*Fleet, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("sandbox url is empty")
	}
	f := &Fleet{ejectAfter: opts.EjectAfter, probeEvery: opts.ProbeEvery}
	if f.ejectAfter <= 0 {
		f.ejectAfter = DefaultEjectAfter
	}
	if f.probeEvery <= 0 {
		f.probeEvery = DefaultProbeEvery
	}
	f.closing, f.close = context.WithCancel(context.Background())
	ho := opts.HTTP
	// Overload is handled here, across the endpoints: an endpoint's own
	// client gives up at once so that the request moves on.
	fleetRetry := ho.Retry
	if fleetRetry == (RetryPolicy{}) {
		fleetRetry = DefaultRetryPolicy()
	}
	ho.Retry = fleetRetry
	ho.Retry.Overload = false
	seen := map[string]bool{}
	for _, raw := range opts.URLs {
		u, w, err := splitWeight(raw)
		if err != nil {
			return nil, err
		}
		ho.URL = u
		c, err := NewHTTPClient(ho)
		if err != nil {
			return nil, err
		}
		if seen[c.url] {
			return nil, fmt.Errorf("sandbox url %s is given twice", RedactURL(c.url))
		}
		seen[c.url] = true
		ep := &endpoint{client: c, weight: w}
		if a := opts.Adaptive; a != nil {
			ao := *a
			if ao.Max <= 0 {
				ao.Max = DefaultMaxConns
			}
			ep.lim = newAdaptive(ao)
		}
		f.eps = append(f.eps, ep)
	}
	f.retry, f.sleep = fleetRetry, f.eps[0].client.sleep
	return f, nil
}

// splitWeight takes "#weight=N" off a URL.
func splitWeight(raw string) (string, float64, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Fragment == "" {
		return raw, 1, nil // NewHTTPClient reports a bad URL
	}
	v, ok := strings.CutPrefix(u.Fragment, "weight=")
	w, perr := strconv.ParseFloat(v, 64)
	if !ok || perr != nil || w <= 0 {
		return "", 0, fmt.Errorf("sandbox url %s: the fragment must be #weight=N with N > 0", RedactURL(raw))
	}
	u.Fragment = ""
	return u.String(), w, nil
}

// Close stops the probes and closes idle connections.
func (f *Fleet) Close() {
	f.close()
	f.probes.Wait()
	for _, ep := range f.eps {
		ep.client.CloseIdleConnections()
	}
}

// Describe names the endpoints for people, credentials redacted.
func (f *Fleet) Describe() string {
	s := ""
	for i, ep := range f.eps {
		if i > 0 {
			s += ", "
		}
		s += RedactURL(ep.client.url)
		if ep.weight != 1 {
			s += fmt.Sprintf(" (weight %g)", ep.weight)
		}
	}
	return s
}

// Stats returns each endpoint's figures so far, in the order given.
func (f *Fleet) Stats() []EndpointStats {
	out := make([]EndpointStats, len(f.eps))
	for i, ep := range f.eps {
		ep.mu.Lock()
		out[i] = EndpointStats{URL: RedactURL(ep.client.url), Weight: ep.weight, Requests: ep.requests, Errors: ep.errors,
			Ejections: ep.ejections, Ejected: ep.ejected}
		if ep.answered > 0 {
			out[i].MeanLatencyMS = float64(ep.latency.Microseconds()) / 1000 / float64(ep.answered)
		}
		ep.mu.Unlock()
		if ep.lim != nil {
			st := ep.lim.stats()
			out[i].Adaptive = &st
		}
	}
	return out
}

// pick chooses the endpoint for the next attempt among those not tried
// yet: the one in rotation with the fewest in flight per weight, or, when
// every untried one is ejected, the ejected one with the fewest (it may
// have recovered; trying beats failing without a try). An endpoint with an
// adaptive limit is chosen only with a place free under it, which the
// caller then holds; when every untried endpoint is at its limit, pick
// waits for a place. nil when every endpoint was tried.
func (f *Fleet) pick(ctx context.Context, tried []bool) (*endpoint, error) {
	for {
		var best *endpoint
		bestIdx, bestLoad, bestEjected := -1, 0.0, true
		var full []<-chan struct{}
		for i, ep := range f.eps {
			if tried[i] {
				continue
			}
			if ep.lim != nil {
				// The channel first: a place freed after the look wakes us.
				wake := ep.lim.waitChan()
				if ep.lim.full() {
					full = append(full, wake)
					continue
				}
			}
			ep.mu.Lock()
			ejected := ep.ejected
			ep.mu.Unlock()
			load := float64(ep.inFlight.Load()) / ep.weight
			if best == nil || (bestEjected && !ejected) || (ejected == bestEjected && load < bestLoad) {
				best, bestIdx, bestLoad, bestEjected = ep, i, load, ejected
			}
		}
		if best != nil && (best.lim == nil || best.lim.tryAcquire()) {
			tried[bestIdx] = true
			return best, nil
		}
		if best == nil && len(full) == 0 {
			return nil, nil
		}
		if best == nil {
			if err := waitAny(ctx, full); err != nil {
				return nil, err
			}
		}
		// A place taken between the look and the take: look again.
	}
}

// Run sends req to the fleet. An endpoint failure moves the request to
// another endpoint; when every endpoint failed, the fleet waits (the
// overload backoff) and tries them all again, for as long as the retry
// policy's outage grace (or as many rounds as its overload attempts,
// without one), before the case fails.
func (f *Fleet) Run(ctx context.Context, req *Request) (*Response, error) {
	attempts := 0
	var last *APIError
	var out outage
	for round := 1; ; round++ {
		tried := make([]bool, len(f.eps))
		for {
			ep, err := f.pick(ctx, tried)
			if err != nil {
				return nil, &APIError{Attempts: attempts, Err: fmt.Errorf("request cancelled: %w", err)}
			}
			if ep == nil {
				break
			}
			resp, err := f.send(ctx, ep, req)
			if resp != nil {
				attempts += resp.Attempts
				resp.Attempts = attempts
				return resp, nil
			}
			var ae *APIError
			if errors.As(err, &ae) {
				attempts += ae.Attempts
				ae.Attempts = attempts
			}
			if ctx.Err() != nil || !endpointFailure(err) {
				return nil, err
			}
			last = ae
		}
		delay, ok := out.next(&f.retry, f.eps[0].client, round, last.StatusCode, 0)
		if !ok {
			return nil, &APIError{Attempts: attempts, StatusCode: last.StatusCode,
				Err: fmt.Errorf(
					"every sandbox endpoint failed (%d of them) %s, the last with: %w",
					len(f.eps),
					out.gaveUp(&f.retry, round),
					last.Err,
				)}
		}
		if err := f.sleep(ctx, delay); err != nil {
			return nil, &APIError{Attempts: attempts, Err: fmt.Errorf("retry cancelled: %w", err)}
		}
	}
}

func (f *Fleet) send(ctx context.Context, ep *endpoint, req *Request) (*Response, error) {
	ep.inFlight.Add(1)
	start := time.Now()
	resp, err := ep.client.Run(ctx, req)
	took := time.Since(start)
	ep.inFlight.Add(-1)
	if ep.lim != nil {
		var ae *APIError
		shed := err != nil && ctx.Err() == nil && errors.As(err, &ae) && isOverload(ae.StatusCode, ae.Err)
		ep.lim.release(took, resp, shed)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.requests++
	switch {
	case err == nil:
		ep.failures = 0
		ep.latency += took
		ep.answered++
	case ctx.Err() != nil:
		// Cancelled: says nothing about the endpoint.
	case endpointFailure(err):
		ep.errors++
		ep.failures++
		if ep.failures >= f.ejectAfter && !ep.ejected {
			ep.ejected = true
			ep.ejections++
			f.probes.Add(1)
			go f.probe(ep)
		}
	default:
		ep.errors++
	}
	return resp, err
}

// probeRequest is the tiny run that tells an ejected endpoint is back:
// any answer with a JSON body will do.
var probeRequest = Request{CompileTimeout: 5, RunTimeout: 5, Code: "print(1)", Language: "python", MemoryLimitMB: 128}

// probe puts ep back into rotation once it answers again.
func (f *Fleet) probe(ep *endpoint) {
	defer f.probes.Done()
	wait := f.probeEvery
	for {
		if err := f.sleep(f.closing, wait); err != nil {
			return
		}
		req := probeRequest
		if _, err := ep.client.Run(f.closing, &req); err == nil {
			ep.mu.Lock()
			ep.ejected, ep.failures = false, 0
			ep.mu.Unlock()
			return
		}
		if f.closing.Err() != nil {
			return
		}
		wait = min(2*wait, maxProbeEvery)
	}
}

// endpointFailure reports whether err is the endpoint's fault (so another
// endpoint may well answer): a connection refused, reset or closed, or an
// HTTP 5xx or 429. A timeout is not: the program may really run that long.
func endpointFailure(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	if ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500 {
		return true
	}
	return ae.StatusCode == 0 && isOverload(0, ae.Err)
}
