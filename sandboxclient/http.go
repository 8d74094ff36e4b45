package sandboxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits and defaults of the HTTP client.
const (
	// MaxResponseBytes caps the body read from the server, so a server that
	// streams without end cannot exhaust memory. A real answer is at most a
	// few hundred kilobytes (the server truncates program output).
	MaxResponseBytes = 64 << 20

	// DefaultMaxConns is the connection pool size when HTTPOptions.MaxConns
	// is 0: verl's default reward_model.sandbox_fusion.max_concurrent.
	DefaultMaxConns = 64

	// gatewayAttempts and gatewayDelay are verl's rule for HTTP 504: three
	// attempts in all, sleeping gatewayDelay times the attempt number
	// between them (1 s, then 2 s).
	gatewayAttempts = 3
	gatewayDelay    = time.Second

	// requestSlack is what verl adds to compile_timeout + run_timeout to
	// get the timeout of one HTTP request.
	requestSlack = 10 * time.Second

	// errorBodyBytes is how much of a non-2xx body goes into the error.
	errorBodyBytes = 512
	// drainBytes is how much of an unwanted body is read so that the
	// connection can go back to the pool.
	drainBytes = 64 << 10
	// pooledBufferMax keeps oversized buffers out of the pool.
	pooledBufferMax = 1 << 20
)

// RetryPolicy says which failed requests the HTTP client tries again.
// verl's rule is always on: HTTP 504 is retried, 3 attempts in all, sleeping
// 1 s and then 2 s. Every class of failure has its own budget, so the
// number of requests for one case is always bounded.
type RetryPolicy struct {
	// Overload retries HTTP 429 and 503 and connections refused or reset
	// (including a connection the server closed before answering) with
	// jittered exponential backoff, honouring a Retry-After header (seconds
	// or an HTTP date) up to OverloadMax. verl gives up on these at once;
	// retrying only turns an infrastructure failure into a real verdict.
	Overload bool
	// OverloadAttempts is the number of attempts in all that may end in
	// an overload failure before the case is an API error.
	OverloadAttempts int
	// OverloadBase is the backoff before the first overload retry; it
	// doubles with each further retry, up to OverloadMax.
	OverloadBase time.Duration
	// OverloadMax bounds every overload sleep, Retry-After included.
	OverloadMax time.Duration
	// OutageGrace, when positive, bounds overload retries by time instead
	// of by OverloadAttempts: a request is retried until this long after
	// its first overload failure (its sleeps counted, whatever the clock
	// says), so an endpoint down or restarting for less costs no verdict.
	// A connection refused or reset is tried again at least every
	// outageProbe, so a server that is back is used within seconds.
	OutageGrace time.Duration
	// SandboxErrorAttempts is the number of attempts in all whose answer
	// may have top-level status SandboxError; the last such answer is
	// returned. 1 (or 0) means no retry, as verl. Retries use the overload
	// backoff.
	SandboxErrorAttempts int
}

// DefaultRetryPolicy is verl's 504 rule plus overload retries for up to
// DefaultOutageGrace, backoff from 500 ms up to 10 s, no SandboxError
// retry.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Overload:             true,
		OverloadAttempts:     5,
		OverloadBase:         500 * time.Millisecond,
		OverloadMax:          10 * time.Second,
		OutageGrace:          DefaultOutageGrace,
		SandboxErrorAttempts: 1,
	}
}

// DefaultOutageGrace is how long an endpoint may be down or shedding load
// before its requests fail: longer than a pod restart.
const DefaultOutageGrace = 30 * time.Second

// outageProbe bounds the sleep after a refused or reset connection while
// the outage grace lasts.
const outageProbe = 2 * time.Second

// outage follows one request's overload failures and says whether, and
// after how long, it is tried again: within the policy's OutageGrace, or,
// without one, up to OverloadAttempts.
type outage struct {
	first time.Time
	slept time.Duration
}

// next is the sleep before overload retry n (1-based) after a failure
// with status (0: no answer) and the server's Retry-After; false when the
// request gives up.
func (o *outage) next(p *RetryPolicy, c *HTTPClient, n, status int, retryAfter time.Duration) (time.Duration, bool) {
	if !p.Overload {
		return 0, false
	}
	if p.OutageGrace <= 0 {
		if n >= max(p.OverloadAttempts, 1) {
			return 0, false
		}
		return c.backoff(n, retryAfter), true
	}
	now := c.now()
	if o.first.IsZero() {
		o.first = now
	}
	left := p.OutageGrace - max(now.Sub(o.first), o.slept)
	if left <= 0 {
		return 0, false
	}
	d := c.backoff(n, retryAfter)
	if status == 0 {
		d = min(d, outageProbe)
	}
	d = min(d, left)
	o.slept += d
	return d, true
}

// gaveUp says, for an error message, after what the retries stopped.
func (o *outage) gaveUp(p *RetryPolicy, n int) string {
	if !p.Overload {
		return "(overload retries are off)"
	}
	if p.OutageGrace <= 0 {
		return fmt.Sprintf("after %d overload attempts", n)
	}
	return fmt.Sprintf("for %v, the outage grace (%d attempts)", p.OutageGrace, n)
}

// VerlRetryPolicy is exactly verl's behaviour: only HTTP 504 is retried.
func VerlRetryPolicy() RetryPolicy {
	p := DefaultRetryPolicy()
	p.Overload = false
	return p
}

// HTTPOptions configures NewHTTPClient. Only URL is required.
type HTTPOptions struct {
	// URL is the run_code endpoint as verl takes it, e.g.
	// http://host:8080/run_code. A URL without a path (or with path "/")
	// gets "/run_code" appended.
	URL string
	// MaxConns sizes the keep-alive connection pool: at most this many
	// connections to the server are open at once. Set it to the engine's
	// concurrency. 0 means DefaultMaxConns.
	MaxConns int
	// Retry is the retry policy. The zero value means DefaultRetryPolicy;
	// VerlRetryPolicy retries HTTP 504 only, exactly as verl.
	Retry RetryPolicy
	// Sleep waits between attempts; it must return ctx.Err() if ctx ends
	// first. nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for backoff jitter. nil means
	// math/rand/v2.
	Rand func() float64
	// Now is the clock used to read a Retry-After HTTP date. nil means
	// time.Now.
	Now func() time.Time
	// HTTP replaces the pooled client built from MaxConns.
	HTTP *http.Client
	// Header is sent with every request (a gateway's credentials, for
	// example); it is never printed.
	Header http.Header
}

// HTTPClient is a Client that POSTs to a SandboxFusion server's /run_code.
// It is safe for concurrent use; share one per server.
type HTTPClient struct {
	url    string
	header http.Header
	http   *http.Client
	retry  RetryPolicy
	sleep  func(ctx context.Context, d time.Duration) error
	rand   func() float64
	now    func() time.Time
	bufs   sync.Pool // *bytes.Buffer, for request and response bodies

	maxBody int64 // MaxResponseBytes; smaller in tests

	// answered is set by the first HTTP response, whatever its status;
	// unanswered counts the connection failures before it. An endpoint
	// that has never answered and keeps refusing is dead, not busy: its
	// requests stop retrying (neverAnsweredLimit).
	answered   atomic.Bool
	unanswered atomic.Int64
}

// neverAnsweredLimit is how many connection failures, with no answer ever,
// make the client give up retrying at once: a dead endpoint fails a run
// in seconds, not after every case's retries.
const neverAnsweredLimit = 16

// NewHTTPClient validates opts and builds a client with a connection pool
// of opts.MaxConns keep-alive connections.
func NewHTTPClient(opts HTTPOptions) (*HTTPClient, error) {
	u, err := runCodeURL(opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("max connections must not be negative, got %d", opts.MaxConns)
	}
	r := opts.Retry
	if r == (RetryPolicy{}) {
		r = DefaultRetryPolicy()
	}
	if r.Overload && r.OverloadAttempts <= 0 {
		r.OverloadAttempts = DefaultRetryPolicy().OverloadAttempts
	}
	if r.OverloadBase <= 0 {
		r.OverloadBase = DefaultRetryPolicy().OverloadBase
	}
	if r.OverloadMax <= 0 {
		r.OverloadMax = DefaultRetryPolicy().OverloadMax
	}
	if r.OverloadMax < r.OverloadBase {
		r.OverloadMax = r.OverloadBase
	}
	if r.SandboxErrorAttempts <= 0 {
		r.SandboxErrorAttempts = 1
	}
	c := &HTTPClient{
		url:    u,
		header: opts.Header.Clone(),
		http:   opts.HTTP,
		retry:  r,
		sleep:  opts.Sleep,
		rand:   opts.Rand,
		now:    opts.Now,

		maxBody: MaxResponseBytes,
	}
	if c.http == nil {
		n := opts.MaxConns
		if n == 0 {
			n = DefaultMaxConns
		}
		c.http = &http.Client{Transport: newTransport(n)}
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// URL returns the endpoint the client posts to; print it through
// RedactURL.
func (c *HTTPClient) URL() string { return c.url }

// CloseIdleConnections closes the pooled connections that are idle.
func (c *HTTPClient) CloseIdleConnections() { c.http.CloseIdleConnections() }

func runCodeURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("sandbox url is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid sandbox url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("sandbox url %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("sandbox url %q has no host", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/run_code"
		u.RawPath = ""
	}
	return u.String(), nil
}

func newTransport(maxConns int) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		MaxConnsPerHost:       maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run sends req and returns the server's answer, retrying as the policy
// says. Every error is an *APIError carrying the number of requests made;
// when ctx ends, the error wraps ctx.Err().
//
// A 2xx body must be a JSON object; it is returned whatever fields it has
// (one without "status" is judged unknown_api_status_, -1, as verl judges
// it -1). Any other body is an API error.
func (c *HTTPClient) Run(ctx context.Context, req *Request) (*Response, error) {
	if !IsSupportedLanguage(req.Language) {
		return nil, &APIError{Err: fmt.Errorf("unsupported language: %q", req.Language)}
	}
	if err := ctx.Err(); err != nil {
		return nil, &APIError{Err: fmt.Errorf("request not sent: %w", err)}
	}
	body, err := c.encode(req)
	if err != nil {
		return nil, &APIError{Err: err}
	}
	defer body.release()
	timeout := attemptTimeout(req)

	var (
		attempts                     int
		gateway, overload, sandboxEr int
		out                          outage
	)
	for {
		attempts++
		resp, status, retryAfter, err := c.attempt(ctx, body, timeout)
		if status != 0 || err == nil {
			c.answered.Store(true)
		}
		if ctx.Err() != nil {
			return nil, &APIError{Attempts: attempts, StatusCode: status, Err: fmt.Errorf("request cancelled: %w", ctx.Err())}
		}
		var delay time.Duration
		switch {
		case err == nil && resp.Status == StatusSandboxError && sandboxEr+1 < c.retry.SandboxErrorAttempts:
			sandboxEr++
			delay = c.backoff(sandboxEr, 0)
		case err == nil:
			resp.Attempts = attempts
			return resp, nil
		case status == http.StatusGatewayTimeout:
			gateway++
			if gateway >= gatewayAttempts {
				return nil, &APIError{
					Attempts:   attempts,
					StatusCode: status,
					Err:        fmt.Errorf("%w (attempt %d of %d)", err, gateway, gatewayAttempts),
				}
			}
			delay = time.Duration(gateway) * gatewayDelay
		case status == 0 && !c.answered.Load() && c.unanswered.Add(1) >= neverAnsweredLimit:
			return nil, &APIError{
				Attempts: attempts,
				Err: fmt.Errorf("%w (gave up: %s has not answered once, %d connection failures)",
					err, RedactURL(c.url), c.unanswered.Load()),
			}
		case c.retry.Overload && isOverload(status, err):
			overload++
			d, ok := out.next(&c.retry, c, overload, status, retryAfter)
			if !ok {
				return nil, &APIError{
					Attempts:   attempts,
					StatusCode: status,
					Err:        fmt.Errorf("%w (gave up %s)", err, out.gaveUp(&c.retry, overload)),
				}
			}
			delay = d
		default:
			return nil, &APIError{Attempts: attempts, StatusCode: status, Err: err}
		}
		if err := c.sleep(ctx, delay); err != nil {
			return nil, &APIError{Attempts: attempts, StatusCode: status, Err: fmt.Errorf("retry cancelled: %w", err)}
		}
	}
}

// attemptTimeout is verl's timeout of one HTTP request: compile_timeout +
// run_timeout + 10 s.
func attemptTimeout(req *Request) time.Duration {
	s := req.CompileTimeout + req.RunTimeout
	if math.IsNaN(s) || s < 0 {
		s = 0
	}
	if s > 1e6 {
		s = 1e6
	}
	return time.Duration(s*float64(time.Second)) + requestSlack
}

// backoff is the sleep before overload (or SandboxError) retry n (1-based):
// the server's Retry-After if it gave one, else equal-jitter exponential
// backoff; bounded by OverloadMax either way.
func (c *HTTPClient) backoff(n int, retryAfter time.Duration) time.Duration {
	max := c.retry.OverloadMax
	if retryAfter > 0 {
		return min(retryAfter, max)
	}
	d := c.retry.OverloadBase
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + time.Duration(c.rand()*float64(d-half))
}

// isOverload reports whether a failed attempt is the server or the network
// shedding load: 429, 503, or a connection refused, reset or closed before
// the answer.
func isOverload(status int, err error) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case 0:
		// A request that timed out is not retried (as verl): the program
		// may really run that long, and every retry would wait as long.
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return false
		}
		// net.ErrClosed: the transport closed the connection under a
		// write because its reader saw the peer reset or close it.
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
			errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, net.ErrClosed)
	}
	return false
}

// attempt makes one request. It returns the decoded answer, or the HTTP
// status (0 if none came), the Retry-After delay the server asked for, and
// the error.
func (c *HTTPClient) attempt(
	ctx context.Context,
	body *sharedBody,
	timeout time.Duration,
) (*Response, int, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, nil)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("build request: %w", err)
	}
	hreq.Body = body.reader()
	hreq.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	hreq.ContentLength = int64(body.buf.Len())
	hreq.Header = http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json"},
	}
	for k, vs := range c.header {
		hreq.Header[k] = vs
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		// The error names the URL: keep its credentials out of messages.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = RedactURL(ue.URL)
		}
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, 0, 0, fmt.Errorf("no response within %v: %w", timeout, err)
		}
		return nil, 0, 0, fmt.Errorf("request failed: %w", err)
	}
	defer hresp.Body.Close()
	status := hresp.StatusCode

	if status < 200 || status > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(hresp.Body, errorBodyBytes))
		_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, drainBytes))
		err := fmt.Errorf("http status %d %s: %s", status, http.StatusText(status), bytes.TrimSpace(snippet))
		if status == http.StatusGatewayTimeout {
			err = fmt.Errorf("gateway timeout (504)")
		}
		return nil, status, c.retryAfter(hresp.Header.Get("Retry-After")), err
	}

	buf := c.getBuffer()
	defer c.putBuffer(buf)
	n, err := buf.ReadFrom(io.LimitReader(hresp.Body, c.maxBody+1))
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, status, 0, fmt.Errorf("response not read within %v: %w", timeout, err)
		}
		return nil, status, 0, fmt.Errorf("read response: %w", err)
	}
	if n > c.maxBody {
		return nil, status, 0, fmt.Errorf("response body larger than %d bytes", c.maxBody)
	}
	data := bytes.TrimSpace(buf.Bytes())
	if len(data) == 0 || data[0] != '{' {
		return nil, status, 0, fmt.Errorf("response is not a json object: %q", truncate(data, 80))
	}
	resp := new(Response)
	if err := json.Unmarshal(data, resp); err != nil {
		return nil, status, 0, fmt.Errorf("decode response: %w", err)
	}
	if w, err := strconv.ParseFloat(hresp.Header.Get(QueueWaitHeader), 64); err == nil && w >= 0 && w < 1e6 {
		resp.QueueWait, resp.QueueWaitKnown = time.Duration(w*float64(time.Second)), true
	}
	return resp, status, 0, nil
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
// It returns 0 when there is none or it cannot be read.
func (c *HTTPClient) retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(c.now()); d > 0 {
			return d
		}
	}
	return 0
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// encode renders the request body into a pooled buffer. nil files and
// fetch_files go out as {} and [], as the server expects.
func (c *HTTPClient) encode(req *Request) (*sharedBody, error) {
	r := *req
	if r.Files == nil {
		r.Files = map[string]string{}
	}
	if r.FetchFiles == nil {
		r.FetchFiles = []string{}
	}
	buf := c.getBuffer()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&r); err != nil {
		c.putBuffer(buf)
		return nil, fmt.Errorf("encode request: %w", err)
	}
	b := &sharedBody{buf: buf, put: c.putBuffer}
	b.refs.Store(1)
	return b, nil
}

func (c *HTTPClient) getBuffer() *bytes.Buffer {
	if b, ok := c.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (c *HTTPClient) putBuffer(b *bytes.Buffer) {
	if b.Cap() <= pooledBufferMax {
		c.bufs.Put(b)
	}
}

// sharedBody is a request body in a pooled buffer, read by one reader per
// attempt. The transport may close a body after Do returns, so the buffer
// goes back to the pool only once Run and every reader are done with it.
type sharedBody struct {
	buf  *bytes.Buffer
	put  func(*bytes.Buffer)
	refs atomic.Int32
}

func (b *sharedBody) reader() io.ReadCloser {
	b.refs.Add(1)
	r := &bodyReader{body: b}
	r.Reset(b.buf.Bytes())
	return r
}

func (b *sharedBody) release() {
	if b.refs.Add(-1) == 0 {
		b.put(b.buf)
	}
}

type bodyReader struct {
	bytes.Reader
	body   *sharedBody
	closed atomic.Bool
}

func (r *bodyReader) Close() error {
	// The reader itself is left alone: the transport may still hold it.
	if r.closed.CompareAndSwap(false, true) {
		r.body.release()
	}
	return nil
}

// Probe asks whether anything answers HTTP at url within timeout (asking
// again while it refuses): any response, whatever
// its status (a SandboxFusion server answers 405 to a GET of /run_code),
// means the endpoint is up; a refused, reset or timed-out connection, an
// unknown host or a TLS failure means it is not. It goes through the
// environment's proxy as requests do, and sends header.
func Probe(ctx context.Context, rawURL string, header http.Header, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	defer c.CloseIdleConnections()
	// A server still starting refuses for a moment: asked again until the
	// time is up.
	resp, err := c.Do(req)
	for err != nil && ctx.Err() == nil {
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
		}
		if ctx.Err() == nil {
			resp, err = c.Do(req.Clone(ctx))
		}
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s does not answer: %w", RedactURL(rawURL), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return nil
}
