// Package server is the HTTP server of `verl-score serve`: SandboxFusion's
// /run_code and /run_jupyter over any sandboxclient.Client (the embedded
// sandbox, in practice), with a queue bounded by the bytes of the waiting
// requests, the load in every answer's headers, /health and /metrics.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes    = 32 << 20
	DefaultShutdownTimeout = time.Minute
)

// SandboxFusion's defaults for fields a request leaves out (its
// RunCodeRequest model). A memory limit of -1 means no limit.
const (
	defaultCompileTimeout = 10.0
	defaultRunTimeout     = 10.0
	defaultMemoryLimitMB  = -1
)

// Options tune a Server. Zero values take the documented defaults.
type Options struct {
	// Slots is how many requests run at once (default: NumCPU).
	Slots int
	// MaxQueueBytes bounds the request bodies waiting for a run slot
	// (default DefaultMaxQueueBytes()); a request that would go beyond it
	// gets 503 with Retry-After: 1. Waiting requests are bounded by memory,
	// not by count, because verl's client scores a 503 as -1 at once and
	// its recommended concurrency is far above the slots of one machine.
	MaxQueueBytes int64
	// MaxQueue, if positive, also bounds how many requests may wait; zero
	// means no bound by count; negative means no queue at all.
	MaxQueue int
	// MaxBodyBytes bounds a request body (default 32 MiB); larger bodies
	// get 413.
	MaxBodyBytes int64
	// ShutdownTimeout bounds how long ListenAndServe waits for requests in
	// progress once its context is cancelled (default one minute); runs
	// still going after it are cancelled.
	ShutdownTimeout time.Duration
	// Logger receives one debug line per request (default: discard).
	Logger *slog.Logger
	// SWE, if set, answers POST /run_swe (repository tasks' rollouts).
	SWE SWERunner
}

// DefaultMaxQueueBytes is the default bound on queued request bodies: a
// sixteenth of this machine's memory, between 64 MiB and 4 GiB. A typical
// verl request is a few KiB, so this holds hundreds of thousands.
func DefaultMaxQueueBytes() int64 {
	total := totalMemory()
	// Whole MiB, so that help and logs show a round figure.
	return min(max(total/16, 64<<20), 4<<30) &^ (1<<20 - 1)
}

// Server answers SandboxFusion's HTTP API (POST /run_code) with a
// sandboxclient.Client, so that verl's own client can use verl-score's
// sandbox unchanged. It also serves GET /health and GET /metrics.
type Server struct {
	client  sandboxclient.Client
	opts    Options
	slots   chan struct{} // one token per running request
	waiting atomic.Int64  // requests waiting for a slot
	queued  atomic.Int64  // bytes of their bodies
	active  atomic.Int64  // /run_code requests being answered
	// draining is set once a shutdown starts: /health is not ready and new
	// requests are turned away while those in progress finish.
	draining atomic.Bool
	metrics  *serverMetrics
	log      *slog.Logger
}

// New returns a server that runs every request with c.
func New(c sandboxclient.Client, opts Options) *Server {
	if opts.Slots <= 0 {
		opts.Slots = runtime.NumCPU()
	}
	if opts.MaxQueueBytes <= 0 {
		opts.MaxQueueBytes = DefaultMaxQueueBytes()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		client:  c,
		opts:    opts,
		slots:   make(chan struct{}, opts.Slots),
		metrics: newServerMetrics(),
		log:     log,
	}
}

// Handler returns the server's HTTP routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/run_code", s.handleRunCode)
	mux.HandleFunc("/run_jupyter", s.handleRunJupyter)
	mux.HandleFunc(sandboxclient.SWEPath, s.handleRunSWE)
	mux.HandleFunc("/health", s.handleHealth)
	mux.HandleFunc("/metrics", s.handleMetrics)
	return mux
}

// ListenAndServe listens on addr and serves until ctx is cancelled, then
// stops accepting connections and waits for requests in progress (at most
// ShutdownTimeout, after which their runs are cancelled). ready, if not
// nil, is called with the bound address once the listener is open. It
// returns nil after a clean shutdown.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln, ready)
}

// Serve is ListenAndServe on an open listener, which it closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener, ready func(net.Addr)) error {
	// Requests must outlive ctx so that a shutdown lets them finish; they
	// are cancelled through hardStop only when the grace period is over.
	hardStop, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return hardStop },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if ready != nil {
		ready(ln.Addr())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Not ready from now on, still listening: a load balancer's health
	// checks see it and new requests are told to go elsewhere, while the
	// ones in progress finish.
	s.draining.Store(true)
	s.log.Info("draining", "in_progress", s.active.Load(), "grace", s.opts.ShutdownTimeout)
	graceCtx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	for s.active.Load() > 0 && graceCtx.Err() == nil {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-graceCtx.Done():
		}
	}
	err := srv.Shutdown(graceCtx)
	if err != nil {
		// Grace period over: cancel the runs still going and drop their
		// connections.
		stopRuns()
		srv.Close()
		err = fmt.Errorf("shutdown: requests still running after %s: %w", s.opts.ShutdownTimeout, err)
	}
	if serr := <-serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("serve: %w", serr)
	}
	return err
}

// handleHealth answers readiness: 200 while the server takes requests,
// 503 while it drains or while its queue is full (a load balancer then
// sends elsewhere what this server would shed). The body says which, with
// the load: slots, running, waiting.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	s.loadHeaders(w)
	status, code := "ok", http.StatusOK
	switch {
	case s.draining.Load():
		status, code = "draining", http.StatusServiceUnavailable
	case s.full():
		status, code = "full", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", s.retryAfter())
	}
	w.WriteHeader(code)
	store := ""
	if st, ok := s.opts.SWE.(SWEStore); ok {
		n, bytes := st.StoreImages()
		store = fmt.Sprintf(`,"swe":{"images":%d,"store_mb":%d}`, n, bytes>>20)
	}
	fmt.Fprintf(
		w,
		`{"status":%q,"slots":%d,"running":%d,"waiting":%d%s}`+"\n",
		status,
		s.opts.Slots,
		len(s.slots),
		s.waiting.Load(),
		store,
	)
}

// loadHeaders tells a client the server's load (sandboxclient's
// SlotsHeader, RunningHeader, WaitingHeader).
func (s *Server) loadHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set(sandboxclient.SlotsHeader, strconv.Itoa(s.opts.Slots))
	h.Set(sandboxclient.RunningHeader, strconv.Itoa(len(s.slots)))
	h.Set(sandboxclient.WaitingHeader, strconv.FormatInt(s.waiting.Load(), 10))
}

// full reports whether a request arriving now would be turned away: every
// slot busy and the queue at its bound (by count, or by bytes within a
// typical request of it).
func (s *Server) full() bool {
	if len(s.slots) < cap(s.slots) {
		return false
	}
	if s.opts.MaxQueue < 0 {
		return true
	}
	if s.opts.MaxQueue > 0 && s.waiting.Load() >= int64(s.opts.MaxQueue) {
		return true
	}
	return s.queued.Load()+typicalRequestBytes > s.opts.MaxQueueBytes
}

// typicalRequestBytes is the size of a typical verl request, for the
// queue's bound by bytes in full.
const typicalRequestBytes = 8 << 10

// retryAfter is the Retry-After of a turned-away request, in whole
// seconds: the time for the queue ahead of it to clear at the mean run
// time so far, from 1 to 30.
func (s *Server) retryAfter() string {
	mean := s.metrics.meanRun()
	if mean <= 0 {
		return "1"
	}
	ahead := float64(s.waiting.Load()+1) / float64(s.opts.Slots)
	secs := int(math.Ceil(ahead * mean.Seconds()))
	return strconv.Itoa(min(max(secs, 1), 30))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.writeTo(w)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
}

func (s *Server) handleRunCode(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	start := time.Now()
	code, status, lang := s.runCode(w, r)
	s.metrics.observeRequest(code, status)
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("remote", r.RemoteAddr),
		slog.Int("code", code),
		slog.String("language", lang),
		slog.String("status", status),
		slog.Duration("duration", time.Since(start)),
	)
}

// runCode answers one /run_code request and returns the HTTP status, the
// response's top-level status (empty if none) and the language asked for.
func (s *Server) runCode(w http.ResponseWriter, r *http.Request) (code int, status, lang string) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return http.StatusMethodNotAllowed, "", ""
	}
	if s.draining.Load() {
		s.loadHeaders(w)
		w.Header().Set("Retry-After", "1")
		writeJSON(
			w,
			http.StatusServiceUnavailable,
			map[string]string{"detail": "shutting down: send this request to another server"},
		)
		return http.StatusServiceUnavailable, "", ""
	}
	body, code := s.readBody(w, r)
	if code != 0 {
		return code, "", ""
	}
	req, problems := decodeRunRequest(body)
	if len(problems) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, validationError{Detail: problems})
		return http.StatusUnprocessableEntity, "", langOf(req)
	}
	lang = req.Language

	ctx := r.Context()
	arrived := time.Now()
	release, ok, err := s.acquire(ctx, int64(len(body)))
	if !ok {
		s.loadHeaders(w)
		w.Header().Set("Retry-After", s.retryAfter())
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "sandbox queue is full, retry later"})
		return http.StatusServiceUnavailable, "", lang
	}
	if err != nil {
		// The caller gave up while waiting; it will not read the answer.
		return 499, "", lang
	}
	runStart := time.Now()
	queueWait := runStart.Sub(arrived)
	resp, err := s.client.Run(ctx, req)
	s.metrics.observeRun(lang, time.Since(runStart))
	release()
	if err != nil {
		if ctx.Err() != nil {
			return 499, "", lang
		}
		resp = &sandboxclient.Response{
			Status:  sandboxclient.StatusSandboxError,
			Message: fmt.Sprintf("exception on running code: %v", err),
		}
	}
	if resp.Files == nil {
		resp.Files = map[string]string{}
	}
	s.loadHeaders(w)
	w.Header().Set(sandboxclient.QueueWaitHeader, strconv.FormatFloat(queueWait.Seconds(), 'f', 6, 64))
	writeJSON(w, http.StatusOK, resp)
	return http.StatusOK, resp.Status, lang
}

// readBody reads a request's body up to --max-body. When it cannot, it
// answers (413 past the bound, 400 for a body that could not be read) and
// returns that status; 0 when body is whole.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, code int) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, s.tooLarge(w)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, s.tooLarge(w)
		}
		// The client went away or sent a broken body; nobody reads this.
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "could not read the request body"})
		return nil, http.StatusBadRequest
	}
	return body, 0
}

func (s *Server) tooLarge(w http.ResponseWriter) int {
	writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{
		"detail": fmt.Sprintf("request body larger than %d bytes", s.opts.MaxBodyBytes),
	})
	return http.StatusRequestEntityTooLarge
}

// acquire takes a run slot, waiting in the queue if all are busy. ok is
// false when the queue is full (by bytes or by count); err is set when ctx
// ends while waiting. release must be called once the run is over.
func (s *Server) acquire(ctx context.Context, size int64) (release func(), ok bool, err error) {
	release = func() {
		<-s.slots
		s.metrics.inFlight.Add(-1)
	}
	select {
	case s.slots <- struct{}{}:
		s.metrics.inFlight.Add(1)
		return release, true, nil
	default:
	}
	if s.opts.MaxQueue < 0 {
		return nil, false, nil
	}
	n := s.waiting.Add(1)
	b := s.queued.Add(size)
	defer func() {
		s.waiting.Add(-1)
		s.queued.Add(-size)
	}()
	if (s.opts.MaxQueue > 0 && n > int64(s.opts.MaxQueue)) || b > s.opts.MaxQueueBytes {
		return nil, false, nil
	}
	s.metrics.queueDepth.Add(1)
	defer s.metrics.queueDepth.Add(-1)
	select {
	case s.slots <- struct{}{}:
		s.metrics.inFlight.Add(1)
		return release, true, nil
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		fmt.Fprintf(&buf, "{\"detail\": %q}\n", err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// validationError is the body of a 422 answer, shaped like FastAPI's.
type validationError struct {
	Detail []fieldError `json:"detail"`
}

// fieldError is one entry of a 422 answer's detail list.
type fieldError struct {
	Loc  []any          `json:"loc"`
	Msg  string         `json:"msg"`
	Type string         `json:"type"`
	Ctx  map[string]any `json:"ctx,omitempty"`
}

func langOf(req *sandboxclient.Request) string {
	if req == nil {
		return ""
	}
	return req.Language
}

// decodeRunRequest parses a /run_code body the way SandboxFusion's request
// model does: code and language are required, the language must be one it
// knows, other fields take its defaults when missing, unknown fields are
// ignored, and numbers may be sent as numeric strings. Every problem is
// reported, not only the first.
func decodeRunRequest(body []byte) (*sandboxclient.Request, []fieldError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, []fieldError{{Loc: []any{"body"}, Msg: "field required", Type: "value_error.missing"}}
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || dec.More() {
		msg := "invalid JSON"
		if err != nil {
			msg = err.Error()
		}
		return nil, []fieldError{{Loc: []any{"body", 0}, Msg: msg, Type: "value_error.jsondecode"}}
	}
	fields, ok := raw.(map[string]any)
	if !ok {
		return nil, []fieldError{{Loc: []any{"body"}, Msg: "value is not a valid dict", Type: "type_error.dict"}}
	}

	req := &sandboxclient.Request{
		CompileTimeout: defaultCompileTimeout,
		RunTimeout:     defaultRunTimeout,
		MemoryLimitMB:  defaultMemoryLimitMB,
		Files:          map[string]string{},
		FetchFiles:     []string{},
	}
	var problems []fieldError
	bad := func(field, msg, typ string) {
		problems = append(problems, fieldError{Loc: []any{"body", field}, Msg: msg, Type: typ})
	}
	missing := func(field string) { bad(field, "field required", "value_error.missing") }
	if v, ok := fields["compile_timeout"]; ok {
		if f, ok := asFloat(v); ok {
			req.CompileTimeout = f
		} else {
			bad("compile_timeout", "value is not a valid float", "type_error.float")
		}
	}
	if v, ok := fields["run_timeout"]; ok {
		if f, ok := asFloat(v); ok {
			req.RunTimeout = f
		} else {
			bad("run_timeout", "value is not a valid float", "type_error.float")
		}
	}
	if v, ok := fields["memory_limit_MB"]; ok {
		if n, ok := asInt(v); ok {
			req.MemoryLimitMB = n
		} else {
			bad("memory_limit_MB", "value is not a valid integer", "type_error.integer")
		}
	}
	if v, ok := fields["code"]; !ok {
		missing("code")
	} else if sv, ok := v.(string); ok {
		req.Code = sv
	} else {
		bad("code", "str type expected", "type_error.str")
	}
	if v, ok := fields["stdin"]; ok && v != nil {
		if sv, ok := v.(string); ok {
			req.Stdin = &sv
		} else {
			bad("stdin", "str type expected", "type_error.str")
		}
	}
	if v, ok := fields["language"]; !ok {
		missing("language")
	} else if sv, ok := v.(string); !ok || !sandboxclient.IsSupportedLanguage(sv) {
		quoted := make([]string, len(sandboxclient.SupportedLanguages))
		for i, l := range sandboxclient.SupportedLanguages {
			quoted[i] = "'" + l + "'"
		}
		problems = append(problems, fieldError{
			Loc:  []any{"body", "language"},
			Msg:  "unexpected value; permitted: " + strings.Join(quoted, ", "),
			Type: "value_error.const",
			Ctx:  map[string]any{"given": v, "permitted": sandboxclient.SupportedLanguages},
		})
		if ok {
			req.Language = sv
		}
	} else {
		req.Language = sv
	}
	if v, ok := fields["files"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			bad("files", "value is not a valid dict", "type_error.dict")
		}
		for name, content := range m {
			switch c := content.(type) {
			case nil:
				req.Files[name] = ""
			case string:
				req.Files[name] = c
			default:
				problems = append(problems,
					fieldError{Loc: []any{"body", "files", name}, Msg: "str type expected", Type: "type_error.str"})
			}
		}
	}
	if v, ok := fields["fetch_files"]; ok {
		list, ok := v.([]any)
		if !ok {
			bad("fetch_files", "value is not a valid list", "type_error.list")
		}
		for i, item := range list {
			if sv, ok := item.(string); ok {
				req.FetchFiles = append(req.FetchFiles, sv)
			} else {
				problems = append(problems,
					fieldError{Loc: []any{"body", "fetch_files", i}, Msg: "str type expected", Type: "type_error.str"})
			}
		}
	}
	return req, problems
}

// asFloat accepts a JSON number or a numeric string, as pydantic does.
func asFloat(v any) (float64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// asInt accepts a JSON number or numeric string; a fractional value is
// truncated the way pydantic v1 does.
func asInt(v any) (int, bool) {
	f, ok := asFloat(v)
	if !ok || math.Abs(f) > 1<<50 {
		return 0, false
	}
	return int(f), true
}
