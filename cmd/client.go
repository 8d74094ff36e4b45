package cmd

import (
	"fmt"
	"io"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandboxclient"
)

// sandboxClient builds the client the engine sends requests to: the
// SandboxFusion server at cfg.SandboxURL, or the embedded sandbox when no
// URL is set. The close function releases it.
func sandboxClient(cfg *config.Config, warn io.Writer) (sandboxclient.Client, string, func(), error) {
	if cfg.SandboxURL != "" {
		retry := sandboxclient.DefaultRetryPolicy()
		retry.Overload = cfg.RetryOverload
		retry.SandboxErrorAttempts = cfg.RetrySandboxErrors
		c, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{URL: cfg.SandboxURL, MaxConns: cfg.MaxConcurrent, Retry: retry})
		if err != nil {
			return nil, "", nil, fmt.Errorf("sandbox url: %w", err)
		}
		return c, "SandboxFusion at " + c.URL(), c.CloseIdleConnections, nil
	}
	iso := sandbox.IsolationAuto
	if cfg.LocalIsolation == "none" {
		iso = sandbox.IsolationNone
	}
	l, err := sandbox.New(sandbox.Options{Concurrency: cfg.LocalConcurrency, Isolation: iso, Warn: warn})
	if err != nil {
		return nil, "", nil, fmt.Errorf("embedded sandbox: %w", err)
	}
	return l, fmt.Sprintf("embedded sandbox (%d at once)", cfg.LocalConcurrency), func() { l.Close() }, nil
}
