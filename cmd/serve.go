package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/testcases"
)

// serveOptions are the flag values and dependencies of `verl-score serve`.
type serveOptions struct {
	Listen          string
	MaxConcurrent   int
	MaxQueue        int   // requests waiting beyond MaxConcurrent; -1 no bound by count, 0 no queue
	MaxQueueBytes   int64 // bytes of the waiting request bodies
	MaxBody         int64
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	// Sandbox holds the embedded sandbox's settings (isolation, fast
	// paths, Ruby's stack), read as every command reads them.
	Sandbox sandbox.Options
	loader  *config.Loader

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
	var maxBody, logLevel, maxQueueBytes string
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
			if opts.MaxConcurrent <= 0 {
				return usageErrorf("--slots must be positive, got %d", opts.MaxConcurrent)
			}
			if opts.MaxQueue < -1 {
				return usageErrorf("--max-queue must be -1 (no bound by count), 0 (no queue) or positive, got %d", opts.MaxQueue)
			}
			qb, err := parseSize(maxQueueBytes)
			if err != nil || qb <= 0 {
				return usageErrorf("--max-queue-bytes: want a positive size, got %q", maxQueueBytes)
			}
			opts.MaxQueueBytes = qb
			n, err := parseSize(maxBody)
			if err != nil {
				return usageErrorf("--max-body: %w", err)
			}
			opts.MaxBody = n
			switch strings.ToLower(logLevel) {
			case "info":
				opts.LogLevel = slog.LevelInfo
			case "debug":
				opts.LogLevel = slog.LevelDebug
			default:
				return usageErrorf("--log-level must be info or debug, got %q", logLevel)
			}
			cfg, err := loadConfig(opts.loader)
			if err != nil {
				return err
			}
			opts.Sandbox = cfg.Sandbox
			if opts.ShutdownTimeout <= 0 {
				return usageErrorf("--shutdown-timeout must be positive, got %s", opts.ShutdownTimeout)
			}
			if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
				return usageErrorf("--listen: %w", err)
			}
			return runF(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	f.IntVar(&opts.MaxConcurrent, "slots", runtime.NumCPU(), "programs compiled or run at once")
	// The old name: run's --max-concurrent means requests in flight.
	f.IntVar(&opts.MaxConcurrent, "max-concurrent", runtime.NumCPU(), "old name of --slots")
	f.MarkDeprecated("max-concurrent", "use --slots (programs at once); run's --max-concurrent is requests in flight")
	f.IntVar(&opts.MaxQueue, "max-queue", -1, "at most this many requests wait for a free slot (-1: bounded by --max-queue-bytes only; 0: no queue)")
	f.StringVar(&maxQueueBytes, "max-queue-bytes", formatSize(server.DefaultMaxQueueBytes()), "request bodies that may wait for a free slot, in bytes or with a KiB/MiB/GiB suffix")
	f.StringVar(&maxBody, "max-body", "32MiB", "largest request body accepted (bytes, or with a KiB/MiB/GiB suffix); larger gets 413")
	f.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long a shutdown waits for runs in progress")
	f.StringVar(&logLevel, "log-level", "info", "info, or debug for one line per request")
	opts.loader = config.AddFlags(f, config.Serve)
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

	so := opts.Sandbox
	so.Concurrency, so.Warn = opts.MaxConcurrent, errOut
	// Programs built by verl-score's own fn_name driver (a client pointed
	// at this server) begin with its imports.
	so.PythonPrelude = testcases.DriverHead
	local, err := sandbox.New(so)
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

	maxQueue := opts.MaxQueue // ServerOptions: 0 no bound by count, negative no queue
	switch maxQueue {
	case -1:
		maxQueue = 0
	case 0:
		maxQueue = -1
	}
	srv := server.New(local, server.Options{
		MaxInFlight:     opts.MaxConcurrent,
		MaxQueue:        maxQueue,
		MaxQueueBytes:   opts.MaxQueueBytes,
		MaxBodyBytes:    opts.MaxBody,
		ShutdownTimeout: opts.ShutdownTimeout,
		Logger:          logger,
	})
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
	queue := formatSize(opts.MaxQueueBytes) + " of request bodies"
	switch {
	case opts.MaxQueue == 0:
		queue = "none"
	case opts.MaxQueue > 0:
		queue = fmt.Sprintf("%d requests, %s", opts.MaxQueue, queue)
	}
	return fmt.Sprintf("%d languages (%s), %d slots, queue %s, isolation %s",
		len(langs), strings.Join(langs, " "), opts.MaxConcurrent, queue, local.IsolationSummary())
}

// parseSize reads a byte count: a plain integer or one with a K/KB/KiB,
// M/MB/MiB or G/GB/GiB suffix (all binary multiples).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffixes []string
		mult     int64
	}{
		{[]string{"gib", "gb", "g"}, 1 << 30},
		{[]string{"mib", "mb", "m"}, 1 << 20},
		{[]string{"kib", "kb", "k"}, 1 << 10},
		{[]string{"b"}, 1},
	} {
		found := false
		for _, suf := range u.suffixes {
			if strings.HasSuffix(lower, suf) {
				t = strings.TrimSpace(t[:len(t)-len(suf)])
				mult = u.mult
				found = true
				break
			}
		}
		if found {
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q: want a positive number of bytes like 33554432 or 32MiB", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// formatSize writes n in the largest unit that divides it (parseSize reads it).
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
