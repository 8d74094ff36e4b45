package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/resultcache"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/swe/remote"
	"github.com/verl-score/verl-score/testcases"
)

// sandboxClient builds the client the engine sends requests to: the
// SandboxFusion server at cfg.SandboxURL (a Fleet when there are several),
// or the embedded sandbox when no URL is set. The close function releases
// it.
func sandboxClient(cfg *config.Config, warn io.Writer) (sandboxclient.Client, string, func(), error) {
	if len(cfg.SandboxURL) > 0 {
		header := http.Header{}
		for _, h := range cfg.SandboxHeader {
			name, value, err := sandboxclient.ParseHeader(h)
			if err != nil {
				return nil, "", nil, err
			}
			header.Add(name, value)
		}
		ho := sandboxclient.HTTPOptions{
			URL:      cfg.SandboxURL[0],
			MaxConns: cfg.Engine.MaxConcurrent,
			Retry:    cfg.Retry,
			Header:   header,
		}
		if len(cfg.SandboxURL) == 1 && !cfg.AdaptiveConcurrency {
			c, err := sandboxclient.NewHTTPClient(ho)
			if err != nil {
				return nil, "", nil, err
			}
			return c, "SandboxFusion at " + sandboxclient.RedactURL(c.URL()), c.CloseIdleConnections, nil
		}
		fo := sandboxclient.FleetOptions{URLs: cfg.SandboxURL, HTTP: ho}
		if cfg.AdaptiveConcurrency {
			fo.Adaptive = &sandboxclient.AdaptiveOptions{Max: cfg.Engine.MaxConcurrent}
		}
		f, err := sandboxclient.NewFleet(fo)
		if err != nil {
			return nil, "", nil, err
		}
		desc := fmt.Sprintf("%d SandboxFusion endpoints (%s)", len(cfg.SandboxURL), f.Describe())
		if len(cfg.SandboxURL) == 1 {
			desc = "SandboxFusion at " + f.Describe()
		}
		if cfg.AdaptiveConcurrency {
			desc += fmt.Sprintf(", requests in flight adapting up to %d", cfg.Engine.MaxConcurrent)
		}
		return f, desc, f.Close, nil
	}
	so := cfg.Sandbox
	so.Warn, so.PythonPrelude = warn, testcases.DriverHead
	l, err := sandbox.New(so)
	if err != nil {
		return nil, "", nil, fmt.Errorf("embedded sandbox: %w", err)
	}
	desc := fmt.Sprintf("embedded sandbox (%d at once; isolation %s)", cfg.Sandbox.Concurrency, l.IsolationSummary())
	return l, desc, func() { l.Close() }, nil
}

// probeTimeout bounds the probe of each endpoint before scoring.
const probeTimeout = 5 * time.Second

// probeEndpoints asks every endpoint, at once, whether it answers, so that
// a dead sandbox fails a run in seconds rather than after every case's
// retries. None answering is an error naming each; some not answering is
// a warning (the fleet's retries go round them).
func probeEndpoints(cfg *config.Config, warn io.Writer) error {
	urls := cfg.SandboxURL
	header := http.Header{}
	for _, h := range cfg.SandboxHeader {
		if name, value, err := sandboxclient.ParseHeader(h); err == nil {
			header.Add(name, value)
		}
	}
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { errs[i] = sandboxclient.Probe(context.Background(), u, header, probeTimeout) })
	}
	wg.Wait()
	var dead []string
	for _, err := range errs {
		if err != nil {
			dead = append(dead, err.Error())
		}
	}
	switch {
	case len(dead) == 0:
		return nil
	case len(dead) == len(urls):
		return fmt.Errorf(
			"no sandbox to score with: %s (is the server running? nothing was scored)",
			strings.Join(dead, "; "),
		)
	}
	fmt.Fprintf(
		warn,
		"verl-score: warning: %d of %d sandbox endpoints do not answer: %s\n",
		len(dead),
		len(urls),
		strings.Join(dead, "; "),
	)
	return nil
}

// scoring is what a scoring command (run, check) needs: the
// configuration, the reader options, and the engine over its sandbox
// client.
type scoring struct {
	cfg    *config.Config
	reader rollout.Options
	eng    *score.Engine
	desc   string // the sandbox client, for people
	close  func()
	warn   func(string)
	// probe fails when no sandbox endpoint answers (nil for the embedded
	// sandbox); called once the input is known to be readable.
	probe func() error
	// endpoints gives a fleet's per-endpoint figures; nil for one sandbox.
	endpoints func() []sandboxclient.EndpointStats
	// swe runs repository tasks (the embedded sandbox only; else nil).
	swe *swerun.Runner
}

// cacheIdentity is the sandbox's part of every cache key: --cache-key, or
// the set of endpoints, or the embedded sandbox's toolchains.
func cacheIdentity(cfg *config.Config) string {
	switch {
	case cfg.CacheKey != "":
		return "key " + cfg.CacheKey
	case len(cfg.SandboxURL) > 0:
		urls := slices.Clone(cfg.SandboxURL)
		slices.Sort(urls)
		return "sandbox urls " + strings.Join(urls, " ")
	}
	id := toolchain.Identity(cfg.Sandbox.Isolation.String())
	if cfg.Sandbox.RubyStackMB > 0 {
		id += fmt.Sprintf("\nruby stack %d MB", cfg.Sandbox.RubyStackMB) // other Ruby verdicts
	}
	return id
}

// loadConfig resolves the configuration: a config file at fault is a
// configuration failure (exit 1), a bad flag or variable a usage error.
func loadConfig(loader *config.Loader) (*config.Config, error) {
	cfg, err := loader.Load()
	if err != nil && !errors.Is(err, config.ErrConfigFile) {
		return nil, &UsageError{Err: err}
	}
	return cfg, err
}

// setupScoring loads the configuration and builds the sandbox client and
// the engine over it; warnings go to errOut.
func setupScoring(loader *config.Loader, errOut io.Writer) (*scoring, error) {
	cfg, err := loadConfig(loader)
	if err != nil {
		return nil, err
	}
	eo, ro := cfg.Engine, cfg.Reader
	warn := func(msg string) { fmt.Fprintln(errOut, "verl-score: warning:", msg) }
	ro.Warn = warn
	client, desc, closeClient, err := sandboxClient(cfg, errOut)
	if err != nil {
		return nil, err
	}
	if cfg.Cache != "" {
		c, err := resultcache.Open(cfg.Cache, cacheIdentity(cfg), int64(cfg.CacheMaxMB)<<20)
		if err != nil {
			closeClient()
			return nil, err
		}
		eo.Cache = c
	}
	var sweRunner *swerun.Runner
	var sweFleet *sandboxclient.SWEFleet
	if len(cfg.SandboxURL) > 0 {
		// repository tasks go to the endpoints' /run_swe (verl-score serve)
		header := http.Header{}
		for _, h := range cfg.SandboxHeader {
			if name, value, err := sandboxclient.ParseHeader(h); err == nil {
				header.Add(name, value)
			}
		}
		sweFleet, err = sandboxclient.NewSWEFleet(sandboxclient.SWEFleetOptions{URLs: cfg.SandboxURL, Header: header,
			Timeout: cfg.SWE.Timeout + sweFleetPullTime})
		if err != nil {
			closeClient()
			return nil, err
		}
		eo.SWE = &remote.Fleet{F: sweFleet, Rules: cfg.Engine.SWERules}
	}
	if l, ok := client.(*sandbox.Local); ok {
		// repository tasks run in the embedded sandbox alone
		if r, err := sandbox.NewSWE(l, cfg.Images, cfg.ImageStore, cfg.SWE); err == nil {
			eo.SWE, sweRunner = r, r
			closeSandbox := closeClient
			closeClient = func() { r.Close(); closeSandbox() }
		}
	}
	eng, err := score.New(client, eo)
	if err != nil {
		closeClient()
		return nil, err
	}
	sc := &scoring{cfg: cfg, reader: ro, eng: eng, desc: desc, close: closeClient, warn: warn, swe: sweRunner,
		probe: func() error {
			if len(cfg.SandboxURL) == 0 {
				return nil
			}
			return probeEndpoints(cfg, errOut)
		}}
	if f, ok := client.(*sandboxclient.Fleet); ok {
		sc.endpoints = f.Stats
	}
	if sweFleet != nil {
		programs := sc.endpoints
		sc.endpoints = func() []sandboxclient.EndpointStats { return mergeSWEStats(programs, sweFleet.Stats()) }
	}
	return sc, nil
}

// sweFleetPullTime is what a fleet's rollout may take beyond its own
// timeout: a node that lacks the image pulls and unpacks it first.
const sweFleetPullTime = time.Hour

// mergeSWEStats puts the repository tasks' figures of each endpoint beside
// its programs' (by URL; programs is nil with one endpoint).
func mergeSWEStats(programs func() []sandboxclient.EndpointStats,
	swe []sandboxclient.EndpointStats) []sandboxclient.EndpointStats {
	var out []sandboxclient.EndpointStats
	if programs != nil {
		out = programs()
	}
	for _, s := range swe {
		found := false
		for i := range out {
			if out[i].URL == s.URL {
				out[i].SWERollouts, out[i].SWEImages, out[i].SWEPulls = s.SWERollouts, s.SWEImages, s.SWEPulls
				out[i].Requests += s.Requests
				out[i].Errors += s.Errors
				found = true
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}
