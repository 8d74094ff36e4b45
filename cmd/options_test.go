package cmd

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/score"
)

// errStop ends a command at its runF seam, after parsing.
var errStop = errors.New("stopped at runF")

// parse runs the command built by build with args up to its runF seam.
func parse(t *testing.T, build func(Streams) (runE func() error), env map[string]string) error {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	err := build(Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})()
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// TestRunParsedOptions: run's flags, variables and defaults reach the
// options and the configuration runScore would get.
func TestRunParsedOptions(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, o *runOptions, cfg *config.Config)
	}{
		{"defaults", []string{"data.parquet"}, nil, func(t *testing.T, o *runOptions, cfg *config.Config) {
			if o.input != "data.parquet" || o.output != "" || o.shardAt != nil || cfg.Engine.Mode != score.ModeAuto ||
				cfg.Engine.Timeout != 10 || cfg.Engine.MaxConcurrent != 64 || len(cfg.SandboxURL) != 0 {
				t.Errorf("got %+v, config %+v", o, cfg.Engine)
			}
			if !strings.HasSuffix(o.resumeCmd, "-o data.scored.parquet --resume") {
				t.Errorf("resume command %q", o.resumeCmd)
			}
		}},
		{
			"flag beats environment",
			[]string{"in.jsonl", "--timeout", "3", "--mode", "all"},
			map[string]string{"VERL_SCORE_TIMEOUT": "7", "VERL_SCORE_MEMORY_LIMIT_MB": "256"},
			func(t *testing.T, o *runOptions, cfg *config.Config) {
				if cfg.Engine.Timeout != 3 || cfg.Engine.Mode != score.ModeAll || cfg.Engine.MemoryLimitMB != 256 {
					t.Errorf(
						"got timeout %v mode %v memory %d, want 3 all 256",
						cfg.Engine.Timeout,
						cfg.Engine.Mode,
						cfg.Engine.MemoryLimitMB,
					)
				}
			},
		},
		{
			"shard names the output",
			[]string{"in.jsonl", "--shard", "1/4"},
			nil,
			func(t *testing.T, o *runOptions, cfg *config.Config) {
				if o.shardAt == nil || o.shardAt.K != 1 || o.shardAt.N != 4 || !strings.Contains(o.output, "1-of-4") {
					t.Errorf("got shard %v output %q", o.shardAt, o.output)
				}
			},
		},
		{
			"audit-fail audits",
			[]string{"in.jsonl", "--audit-fail", "--compare", "float:0.01"},
			nil,
			func(t *testing.T, o *runOptions, cfg *config.Config) {
				if !cfg.Engine.AuditFail || cfg.Engine.Compare.Exact() {
					t.Errorf("got %+v", cfg.Engine)
				}
			},
		},
		{
			"reader keys and run's own",
			[]string{"in.jsonl", "--response-key", "outs", "--pass-k", "1,5", "--infra-errors", "mask"},
			map[string]string{"VERL_SCORE_DATA_SOURCE_KEY": "src"},
			func(t *testing.T, o *runOptions, cfg *config.Config) {
				if cfg.Reader.ResponseKey != "outs" || cfg.Reader.DataSourceKey != "src" || !cfg.Reader.RequireDataSource ||
					len(cfg.Job.PassK) != 2 || cfg.Job.PassK[1] != 5 || !cfg.Job.MaskInfra {
					t.Errorf("got reader %+v pass@k %v mask %v", cfg.Reader, cfg.Job.PassK, cfg.Job.MaskInfra)
				}
			},
		},
		{
			"isolation from the environment",
			[]string{"in.jsonl"},
			map[string]string{"VERL_SCORE_ISOLATION": "basic", "VERL_SCORE_FAST_PATHS": "false"},
			func(t *testing.T, o *runOptions, cfg *config.Config) {
				if cfg.Sandbox.Isolation != sandbox.IsolationBasic || !cfg.Sandbox.NoFastPaths {
					t.Errorf("got %+v", cfg.Sandbox)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *runOptions
			err := parse(t, func(s Streams) func() error {
				c := newRunCmd(s, func(_ context.Context, o *runOptions) error { got = o; return errStop })
				c.SetArgs(tt.args)
				return c.Execute
			}, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := got.loader.Load()
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got, cfg)
		})
	}
}

// TestCheckParsedOptions: check's own flags and the settings it shares.
func TestCheckParsedOptions(t *testing.T) {
	var got *checkOptions
	err := parse(t, func(s Streams) func() error {
		c := newCheckCmd(s, func(_ context.Context, o *checkOptions) error { got = o; return errStop })
		c.SetArgs(
			[]string{"dump/", "--baseline", "old.parquet", "--reruns", "0", "--tolerance", "0.01", "--language", "auto"},
		)
		return c.Execute
	}, map[string]string{"SANDBOX_FUSION_URL": "http://a/run_code,http://b/run_code"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := got.loader.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.input != "dump/" || got.baseline != "old.parquet" || got.reruns != 0 || got.report.tolerance != 0.01 ||
		cfg.Engine.Language != "auto" || len(cfg.SandboxURL) != 2 {
		t.Errorf("got %+v, language %q, urls %q", got, cfg.Engine.Language, cfg.SandboxURL)
	}
}

// TestServeReadsTheSharedSettings: serve reads isolation, fast paths and
// Ruby's stack as every command does, so VERL_SCORE_ISOLATION reaches it,
// and a flag still wins.
func TestServeReadsTheSharedSettings(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want sandbox.Options
	}{
		{"defaults", nil, nil, sandbox.Options{Isolation: sandbox.IsolationAuto}},
		{
			"environment",
			nil,
			map[string]string{"VERL_SCORE_ISOLATION": "basic", "VERL_SCORE_FAST_PATHS": "0", "VERL_SCORE_RUBY_STACK_MB": "8"},
			sandbox.Options{Isolation: sandbox.IsolationBasic, NoFastPaths: true, RubyStackMB: 8},
		},
		{"flag over environment", []string{"--isolation", "none"}, map[string]string{"VERL_SCORE_ISOLATION": "basic"},
			sandbox.Options{Isolation: sandbox.IsolationNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *serveOptions
			err := parse(t, func(s Streams) func() error {
				c := newServeCmd(s, func(_ context.Context, o *serveOptions) error { got = o; return errStop })
				c.SetArgs(tt.args)
				return c.Execute
			}, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			got.Sandbox.Concurrency = 0 // serve's is --slots, set when it starts
			if got.Sandbox != tt.want {
				t.Errorf("got %+v, want %+v", got.Sandbox, tt.want)
			}
		})
	}
}

// TestServeWithIsolationFromTheEnvironment: VERL_SCORE_ISOLATION=basic
// verl-score serve serves with basic isolation.
func TestServeWithIsolationFromTheEnvironment(t *testing.T) {
	t.Setenv("VERL_SCORE_ISOLATION", "basic")
	errOut := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	served := make(chan error, 1)
	c := newServeCmd(Streams{Out: io.Discard, ErrOut: errOut}, func(ctx context.Context, o *serveOptions) error {
		o.Ready = func(a net.Addr) { ready <- a }
		return runServe(ctx, o)
	})
	c.SetArgs([]string{"--listen", "127.0.0.1:0", "--slots", "1"})
	go func() { served <- c.ExecuteContext(ctx) }()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve returned %v before listening:\n%s", err, errOut)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not listen")
	}
	if !strings.Contains(errOut.String(), "isolation basic") {
		t.Errorf("the start line does not say isolation basic:\n%s", errOut)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}
