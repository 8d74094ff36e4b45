package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/testcases"
)

// serveOptions are the settings and dependencies of `verl-score serve`.
type serveOptions struct {
	// Listen, Server and LogLevel are serve's settings, Sandbox the
	// embedded sandbox's (isolation, fast paths, Ruby's stack): all read
	// from config, as every command reads its settings.
	Listen   string
	Server   server.Options
	LogLevel slog.Level
	Sandbox  sandbox.Options
	// Images, ImageStore and SWE are repository tasks' settings (/run_swe).
	Images, ImageStore string
	SWE                swerun.Options
	loader             *config.Loader

	ErrOut io.Writer
	// Interrupt, when closed (the first SIGINT or SIGTERM), starts the
	// shutdown: a process manager sends one signal, then SIGKILL.
	Interrupt <-chan struct{}
	// Ready, if set, is called with the bound address once the server
	// listens (tests use it to find a port chosen by the kernel).
	Ready func(net.Addr)
}

const serveExitHelp = `

EXIT STATUS
  0  stopped cleanly (SIGINT or SIGTERM, after the runs in progress ended)
  1  failed (address in use, sandbox unusable, runs still going after
     --shutdown-timeout)
  2  usage error
`

// newServeCmd builds the command; runF, when not nil, is called with the parsed
// options in place of runServe (tests stop there).
func newServeCmd(s Streams, runF func(context.Context, *serveOptions) error) *cobra.Command {
	if runF == nil {
		runF = runServe
	}
	opts := &serveOptions{ErrOut: s.ErrOut, Interrupt: s.Interrupt}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the local sandbox over SandboxFusion's HTTP API",
		Long: `Serve runs the local sandbox behind an HTTP server that speaks SandboxFusion's
API (POST /run_code with the same request and response JSON), so verl's own
reward code can use it unchanged in place of a SandboxFusion deployment.

--slots is how many programs compile or run at once (a slot each;
default one per CPU). Requests beyond it wait, in arrival order, up to
--max-queue-bytes of request bodies (default a sixteenth of this machine's
memory); beyond that the server answers 503 with Retry-After: 1. A waiting
request spends its HTTP timeout waiting. A client that disconnects cancels
its queued or running request. One SIGINT or SIGTERM (what Kubernetes,
docker and systemd send before SIGKILL) starts the shutdown: /health
answers 503 {"status":"draining"}, new requests get 503 with Retry-After,
and the requests in progress finish (at most --shutdown-timeout); then the
server exits 0.

What a verl client needs: verl's reward_model.sandbox_fusion.max_concurrent
is how many requests it keeps in flight, not how many this server runs at
once. Any value works with the defaults (256, verl's recommendation, queues
about 256 x a few KiB), because the queue is bounded by bytes, not by
count. verl scores a 503 as -1 at once and does not retry it, so do not set
--max-queue below max_concurrent minus --slots. (--max-concurrent, the
old name of --slots, still works; run's --max-concurrent is another thing:
requests in flight.)

Other endpoints: GET /health answers {"status":"ok"} (503 while draining);
GET /metrics gives
Prometheus text (requests by HTTP status and response status, runs in
flight, queue depth, run duration by language).

Point verl at it with:
  reward_model.sandbox_fusion.url=http://127.0.0.1:8080/run_code` + serveExitHelp,
		Example: `  # serve on the default address with one run per CPU
  verl-score serve

  # listen on every interface, 16 runs at once, log every request
  verl-score serve --listen 0.0.0.0:8080 --slots 16 --log-level debug

  # then, in verl's training command:
  python3 -m verl.trainer.main_ppo ... \
      reward_model.sandbox_fusion.url=http://127.0.0.1:8080/run_code \
      reward_model.sandbox_fusion.max_concurrent=64`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadConfig(opts.loader)
			if err != nil {
				return err
			}
			opts.Listen, opts.Server, opts.LogLevel, opts.Sandbox = cfg.Listen, cfg.Server, cfg.LogLevel, cfg.Sandbox
			opts.Images, opts.ImageStore, opts.SWE = cfg.Images, cfg.ImageStore, cfg.SWE
			return runF(c.Context(), opts)
		},
	}
	opts.loader = config.AddFlags(c.Flags(), config.Serve)
	return c
}

// runServe builds the local sandbox and serves it until ctx is cancelled.
func runServe(ctx context.Context, opts *serveOptions) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if opts.Interrupt != nil {
		go func() {
			select {
			case <-opts.Interrupt:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	errOut := opts.ErrOut
	if errOut == nil {
		errOut = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: opts.LogLevel}))

	sbo := opts.Sandbox
	sbo.Concurrency, sbo.Warn = opts.Server.Slots, errOut
	// Programs built by verl-score's own fn_name driver (a client pointed
	// at this server) begin with its imports.
	sbo.PythonPrelude = testcases.DriverHead
	local, err := sandbox.New(sbo)
	if err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}
	defer local.Close()
	// The caches of the first compiles (precompiled header, javac archive,
	// Go modules and build cache) are built now, in the background, so that
	// the first requests of a language seldom wait for them (they would,
	// untimed).
	prepCtx, stopPrep := context.WithCancel(ctx)
	prepDone := make(chan struct{})
	defer func() { stopPrep(); <-prepDone }() // before local.Close
	go func() {
		defer close(prepDone)
		for _, p := range local.Prepare(prepCtx) {
			logger.Debug("prepared", "what", p.Name, "ready", p.Available, "detail", p.Detail)
		}
	}()

	so := opts.Server
	so.Logger = logger
	// repository tasks (/run_swe) on Linux, with the embedded sandbox
	if r, err := sandbox.NewSWE(local, opts.Images, opts.ImageStore, opts.SWE); err == nil {
		r.Notify = func(msg string) { logger.Info(msg) }
		defer r.Close()
		so.SWE = &sweServer{r: r}
	}
	srv := server.New(local, so)
	err = srv.ListenAndServe(ctx, opts.Listen, func(a net.Addr) {
		fmt.Fprintf(errOut, "listening on http://%s/run_code: %s\n", a, startLine(local, opts))
		if opts.Ready != nil {
			opts.Ready(a)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(errOut, "stopped")
	return nil
}

// startLine says what the server offers: its languages, slots, queue bound
// and isolation.
func startLine(local *sandbox.Local, opts *serveOptions) string {
	langs := local.RunnableLanguages()
	queue := config.FormatSize(opts.Server.MaxQueueBytes) + " of request bodies"
	switch {
	case opts.Server.MaxQueue < 0:
		queue = "none"
	case opts.Server.MaxQueue > 0:
		queue = fmt.Sprintf("%d requests, %s", opts.Server.MaxQueue, queue)
	}
	return fmt.Sprintf("%d languages (%s), %d slots, queue %s, isolation %s",
		len(langs), strings.Join(langs, " "), opts.Server.Slots, queue, local.IsolationSummary())
}

// sweServer answers /run_swe with the embedded sandbox's repository tasks,
// saying which image each rollout ran in and whether its request pulled it.
type sweServer struct {
	r        *swerun.Runner
	mu       sync.Mutex
	reported map[string]bool // images whose pull a response has told of
	// the store's figures for /health, read at most every 10 s
	listed     time.Time
	images     int
	storeBytes int64
}

// StoreImages is what the node's image store holds (server.SWEStore).
func (s *sweServer) StoreImages() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.listed) > 10*time.Second {
		if n, b, err := s.r.StoreUsage(); err == nil {
			s.images, s.storeBytes = n, b
		}
		s.listed = time.Now()
	}
	return s.images, s.storeBytes
}

func (s *sweServer) Run(req *http.Request, inst *swe.Instance, plan *swe.Plan, patch string,
	rules swe.Rules) (*swe.Outcome, *sandboxclient.SWEImage) {
	o := s.r.EvaluateUnder(req.Context(), inst, plan, patch, rules)
	ref := inst.ImageRef()
	for _, u := range s.r.Used() {
		if u.Ref != ref {
			continue
		}
		img := &sandboxclient.SWEImage{Ref: ref, Digest: u.Digest, ID: u.ID, Source: u.Source}
		s.mu.Lock()
		if u.Source == "registry" && !s.reported[ref] {
			if s.reported == nil {
				s.reported = map[string]bool{}
			}
			s.reported[ref], img.Pulled = true, true
		}
		s.mu.Unlock()
		return o, img
	}
	return o, nil
}
