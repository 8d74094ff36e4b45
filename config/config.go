// Package config declares every setting of verl-score once (its key,
// which is also its flag and environment name, its default, its help, the
// commands that have it, and how its value is checked and where it goes)
// and loads them with viper: command-line flags win over VERL_SCORE_*
// environment variables (and SANDBOX_FUSION_URL), which win over a config
// file, which wins over the defaults. Every command that has a setting
// reads it the same way, serve included.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cast"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/verl-score/verl-score/job"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/testcases"
)

// Config is the effective configuration of a command: each setting's value
// where the command uses it.
type Config struct {
	// Engine, Reader and Sandbox are the options of the engine, the input
	// reader and the embedded sandbox, filled in by their settings (the
	// fields no setting names keep their defaults).
	Engine  score.Options
	Reader  rollout.Options
	Sandbox sandbox.Options

	// SandboxURL lists the SandboxFusion endpoints; empty means the
	// embedded sandbox.
	SandboxURL []string
	// SandboxHeader lists "Name: value" headers sent with every request.
	SandboxHeader []string
	// Retry is the HTTP client's retry policy: retry_overload,
	// retry_sandbox_errors and outage_grace set it.
	Retry sandboxclient.RetryPolicy
	// AdaptiveConcurrency: max_concurrent is auto, and Engine.MaxConcurrent
	// its ceiling.
	AdaptiveConcurrency bool

	Cache      string
	CacheKey   string
	CacheMaxMB int

	// Images and ImageStore are where repository tasks' images are found
	// and unpacked; SWE is how their rollouts run.
	Images     string
	ImageStore string
	SWE        swerun.Options

	// Job holds run's settings of the job (data_source, infra_errors,
	// pass_k, cases_out_max_text); the command adds the paths and streams.
	Job            job.Options
	MaxInfraErrors float64
	MaxInputErrors float64

	// Listen, Server and LogLevel are serve's: the address it listens on,
	// the server's bounds (its Slots also size the embedded sandbox) and
	// the level of its log.
	Listen   string
	Server   server.Options
	LogLevel slog.Level
}

// Command is a set of the commands that have a setting.
type Command uint

// The commands with settings. `verl-score config` shows Run's and Serve's.
const (
	Run Command = 1 << iota
	Check
	Worker
	Diff
	Serve
	Replay
	Images

	scoring = Run | Check | Worker
	// sandboxed are the commands that run code: the sandbox's settings.
	sandboxed = scoring | Replay
	rows      = Run | Check
)

// Setting is one configuration key, declared once. Its flag is the key
// with dashes, its environment variable VERL_SCORE_ and the key in capitals.
type Setting struct {
	Key string
	// Default is the value when nothing sets it; its type (string, int,
	// float64, bool, []string) is the flag's and the value's. A list
	// takes a repeatable flag, a list in the config file, or a
	// comma-separated environment variable.
	Default  any
	Usage    string
	Commands Command
	// Set checks a value (of Default's type) and stores it in the Config.
	Set func(c *Config, v any) error
	// Redact, when set, turns a value (each element of a list) into what
	// may be printed: credentials stay out of `config` output.
	Redact func(string) string
	// OldFlags are former flag names, still accepted with a deprecation
	// notice by the commands where no other setting has that flag.
	OldFlags []string
}

// Flag is the setting's command-line flag, without dashes.
func (s Setting) Flag() string { return strings.ReplaceAll(s.Key, "_", "-") }

// to stores a value as it is into the field that at gives, after the
// checks.
func to[T any](at func(*Config) *T, checks ...func(T) error) func(*Config, any) error {
	return func(c *Config, v any) error {
		x := v.(T)
		for _, ck := range checks {
			if err := ck(x); err != nil {
				return err
			}
		}
		*at(c) = x
		return nil
	}
}

// parsed parses a string value into the Config.
func parsed(set func(c *Config, s string) error) func(*Config, any) error {
	return func(c *Config, v any) error { return set(c, v.(string)) }
}

func positive[T int | float64](what string) func(T) error {
	return func(x T) error {
		if x <= 0 {
			return fmt.Errorf("%s must be positive, got %v", what, x)
		}
		return nil
	}
}

func nonNegative[T int | float64](what string) func(T) error {
	return func(x T) error {
		if x < 0 || x != x {
			return fmt.Errorf("%s must be 0 or more, got %v", what, x)
		}
		return nil
	}
}

func fraction(what string) func(float64) error {
	return func(x float64) error {
		if x < 0 || x > 1 || x != x {
			return fmt.Errorf("%s must be a fraction from 0 to 1, got %g", what, x)
		}
		return nil
	}
}

// existingDir accepts "" (none) or a directory that exists.
func existingDir(what string) func(string) error {
	return func(p string) error {
		if p == "" {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: %s is not a directory", what, p)
		}
		return nil
	}
}

func oneOf(what string, choices ...string) func(string) error {
	return func(x string) error {
		for _, ch := range choices {
			if x == ch {
				return nil
			}
		}
		return fmt.Errorf("%s must be one of %s, got %q", what, strings.Join(choices, ", "), x)
	}
}

// DefaultAutoCeiling is the ceiling of --max-concurrent auto: the
// concurrency of verl's own examples.
const DefaultAutoCeiling = 256

// ParseConcurrency reads max_concurrent: a positive number, or auto
// (auto:N with a ceiling N); it returns the number of requests in flight
// (the ceiling, for auto) and whether it adapts.
func ParseConcurrency(s string) (n int, auto bool, err error) {
	s = strings.TrimSpace(s)
	rest, auto := strings.CutPrefix(s, "auto")
	if auto {
		if rest == "" {
			return DefaultAutoCeiling, true, nil
		}
		if rest, ok := strings.CutPrefix(rest, ":"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				return n, true, nil
			}
		}
		return 0, false, fmt.Errorf("max_concurrent must be a positive number, auto or auto:N with N > 0, got %q", s)
	}
	n, err = strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("max_concurrent must be positive (or auto), got %q", s)
	}
	return n, false, nil
}

// parseGrace reads outage_grace: a Go duration or a number of seconds,
// not negative.
func parseGrace(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != f {
			return 0, fmt.Errorf("outage_grace must be a duration such as 30s or a number of seconds, got %q", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("outage_grace must not be negative, got %q", s)
	}
	return d, nil
}

// Settings lists every key, in the order `verl-score config` prints them.
func Settings() []Setting {
	return []Setting{
		{
			Key:      "sandbox_url",
			Default:  []string{},
			Commands: sandboxed,
			Redact:   sandboxclient.RedactURL,
			Set:      to(func(c *Config) *[]string { return &c.SandboxURL }),
			Usage: "SandboxFusion run_code URL; repeat it (or separate with commas, as in env SANDBOX_FUSION_URL) for a " +
				"fleet of endpoints, each optionally ending in #weight=N; empty runs code in the embedded sandbox",
		},
		{
			Key:      "sandbox_header",
			Default:  []string{},
			Commands: sandboxed,
			Redact:   sandboxclient.RedactHeader,
			Set:      to(func(c *Config) *[]string { return &c.SandboxHeader }),
			Usage: "header 'Name: value' sent with every sandbox request, e.g. 'Authorization: Bearer $TOKEN' ($VAR is " +
				"taken from the environment); repeatable; never printed",
		},
		{Key: "max_concurrent", Default: "64", Commands: sandboxed, Set: parsed(func(c *Config, s string) (err error) {
			c.Engine.MaxConcurrent, c.AdaptiveConcurrency, err = ParseConcurrency(s)
			return
		}),
			Usage: "requests in flight across all responses and cases; auto (or auto:N, N the ceiling, default " +
				strconv.Itoa(DefaultAutoCeiling) + ") sizes each sandbox endpoint's share from its answers"},
		{
			Key:      "timeout",
			Default:  10.0,
			Commands: scoring,
			Set:      to(func(c *Config) *float64 { return &c.Engine.Timeout }, positive[float64]("timeout")),
			Usage:    "compile and run timeout of each case, in seconds",
		},
		{
			Key:      "memory_limit_mb",
			Default:  1024,
			Commands: scoring,
			OldFlags: []string{"memory-limit"},
			Set:      to(func(c *Config) *int { return &c.Engine.MemoryLimitMB }, positive[int]("memory_limit_mb")),
			Usage:    "memory limit of each case, in MB",
		},
		{
			Key:      "mode",
			Default:  "auto",
			Commands: scoring,
			Set:      parsed(func(c *Config, s string) (err error) { c.Engine.Mode, err = score.ParseMode(s); return }),
			Usage:    "scoring mode: auto (verl's routing by data source), continuous or all",
		},
		{
			Key:      "language",
			Default:  "python",
			Commands: scoring,
			Set:      to(func(c *Config) *string { return &c.Engine.Language }),
			Usage:    "language of every solution (verl sends python), or auto to take it from the code fence",
		},
		{
			Key:      "extract",
			Default:  "verl",
			Commands: scoring,
			Set:      parsed(func(c *Config, s string) (err error) { c.Engine.Extract, err = testcases.ParseRule(s); return }),
			Usage:    "code extraction rule: verl or prime",
		},
		{
			Key:      "no_compile_skip",
			Default:  false,
			Commands: scoring,
			Set:      to(func(c *Config) *bool { return &c.Engine.NoCompileSkip }),
			Usage:    "send every case even after a compile error (verdicts are the same)",
		},
		{
			Key:      "compare",
			Default:  "exact",
			Commands: scoring,
			Set: parsed(
				func(c *Config, s string) (err error) { c.Engine.Compare, err = testcases.ParseComparison(s); return },
			),
			Usage: "how stdout meets the expected output: exact (verl's rule), lines (trailing whitespace of each line " +
				"ignored), tokens (whitespace-separated tokens; fn_name results as values), float[:TOL] (tokens, numbers " +
				"within TOL absolute or relative, default 1e-6), rows[:TOL] (result sets: lines are rows, | separates cells, " +
				"rows in any order, numbers within TOL); other than exact, each row also gets reward_exact",
		},
		{Key: "checker_key", Default: "", Commands: scoring, Set: to(func(c *Config) *string { return &c.Engine.CheckerKey }),
			Usage: "ground-truth field holding a problem's checker (its code, or {\"code\", \"language\"}), run on each " +
				"output with input.txt, output.txt, answer.txt; e.g. checker (default: none, as verl)"},
		{Key: "images", Default: "", Commands: scoring | Serve,
			Set: to(func(c *Config) *string { return &c.Images }, existingDir("images")),
			Usage: "repository tasks: a directory of their images, OCI layouts (or one layout holding many) and docker " +
				"save archives, found by the name a row gives (image, image_name, docker_image) or SWE-bench's naming"},
		{Key: "image_store", Default: "", Commands: scoring | Images | Serve, Set: to(func(c *Config) *string { return &c.ImageStore }),
			Usage: "repository tasks: where images are unpacked, once each, shared by concurrent runs (default: the " +
				"user's cache directory, verl-score/images)"},
		{Key: "image_store_max_gb", Default: 0.0, Commands: scoring | Images | Serve,
			Set: to(func(c *Config) *float64 { return &c.SWE.StoreMaxGB }, nonNegative[float64]("image_store_max_gb")),
			Usage: "repository tasks: GB the image store may hold (unpacked images and fetched layers); past it, the " +
				"least recently used images no process is using are evicted; 0: no bound"},
		{Key: "prefetch_images", Default: 2, Commands: scoring | Serve,
			Set: to(func(c *Config) *int { return &c.SWE.PrefetchImages }, nonNegative[int]("prefetch_images")),
			Usage: "repository tasks: images of the rows ahead pulled and unpacked at once in the background, so " +
				"rollouts do not wait for them; 0: none"},
		{Key: "prefetch_mb", Default: 16384, Commands: scoring | Serve,
			Set: to(func(c *Config) *int { return &c.SWE.PrefetchMB }, positive[int]("prefetch_mb")),
			Usage: "repository tasks: MB of images (unpacked) readied ahead and not yet used; past it, prefetching " +
				"waits for rollouts to use them"},
		{Key: "pull", Default: swerun.PullMissing, Commands: scoring | Serve,
			Set: to(func(c *Config) *string { return &c.SWE.Pull },
				oneOf("pull", swerun.PullMissing, swerun.PullAlways, swerun.PullNever)),
			Usage: "repository tasks: when an image is pulled from its registry: missing (one in neither --images nor " +
				"the store), always (each reference resolved once per run) or never"},
		{Key: "registry_auth", Default: []string{}, Commands: scoring | Images | Serve, Redact: image.RedactRegistryAuth,
			Set: func(c *Config, v any) error {
				c.SWE.Auth = nil
				for _, a := range v.([]string) {
					host, auth, err := image.ParseRegistryAuth(a)
					if err != nil {
						return err
					}
					if c.SWE.Auth == nil {
						c.SWE.Auth = map[string]authn.Authenticator{}
					}
					c.SWE.Auth[host] = auth
				}
				return nil
			},
			Usage: "repository tasks: credentials for a registry, HOST=USER:PASSWORD or HOST=Bearer TOKEN ($VAR is " +
				"taken from the environment); repeatable; never printed. Docker's configuration " +
				"(~/.docker/config.json) is read too"},
		{Key: "swe_timeout", Default: 1800.0, Commands: scoring | Serve, Set: func(c *Config, v any) error {
			x := v.(float64)
			if err := positive[float64]("swe_timeout")(x); err != nil {
				return err
			}
			c.SWE.Timeout = time.Duration(x * float64(time.Second))
			return nil
		}, Usage: "repository tasks: seconds a rollout's apply and tests may take " +
			"(SWE-bench's 1800); beyond, the outcome is timeout"},
		{Key: "env_disk_mb", Default: 2048, Commands: scoring | Serve,
			Set:   to(func(c *Config) *int { return &c.SWE.DiskMB }, positive[int]("env_disk_mb")),
			Usage: "repository tasks: MB a rollout may write over its image (in memory: it counts in swe_memory_mb)"},
		{Key: "swe_memory_mb", Default: 8192, Commands: scoring | Serve,
			Set:   to(func(c *Config) *int { return &c.SWE.MemoryMB }, positive[int]("swe_memory_mb")),
			Usage: "repository tasks: MB of memory a rollout's processes and written files may use together"},
		{Key: "swe_rules", Default: "4.1.0", Commands: scoring, Set: parsed(func(c *Config, s string) error {
			v, err := swe.ParseRulesVersion(s)
			c.Engine.SWERules, c.SWE.Rules = swe.Rules{Version: v}, swe.Rules{Version: v}
			return err
		}), Usage: "repository tasks: the SWE-bench release whose rules apply and grade, 4.1.0 or 5 (docs/semantics.md)"},
		{Key: "swe_reward", Default: score.SWERewardResolved, Commands: scoring,
			Set: to(func(c *Config) *string { return &c.Engine.SWEReward },
				oneOf("swe_reward", score.SWERewardResolved, score.SWERewardF2P, score.SWERewardPartial)),
			Usage: "repository tasks' reward: resolved (1 or 0, as SWE-bench), f2p (the share of FAIL_TO_PASS tests " +
				"that pass) or partial (SWE-bench's RESOLVED_PARTIAL scores that share)"},
		{Key: "audit", Default: false, Commands: scoring, Set: to(func(c *Config) *bool { return &c.Engine.Audit }),
			Usage: "probe every passing case for known loopholes (exit before the asserts, a fn_name function that raised, " +
				"reading the answer from disk, a compared value equal to anything) and list flagged responses in the summary " +
				"and --cases-out; one extra request per passing case (Python only)"},
		{Key: "audit_fail", Default: false, Commands: scoring, Set: to(func(c *Config) *bool { return &c.Engine.AuditFail }),
			Usage: "with --audit, score flagged responses 0 (default: keep verl's reward)"},
		{Key: "no_dedup", Default: false, Commands: scoring, Set: to(func(c *Config) *bool { return &c.Engine.NoDedup }),
			Usage: "send every execution, even one identical (code, stdin, language, limits) to one this run already sent " +
				"(verdicts are the same)"},
		{Key: "cache", Default: "", Commands: scoring, Set: to(func(c *Config) *string { return &c.Cache }),
			Usage: "directory of a result cache shared across runs (content-addressed; safe for concurrent runs); off when " +
				"empty"},
		{Key: "cache_key", Default: "", Commands: scoring, Set: to(func(c *Config) *string { return &c.CacheKey }),
			Usage: "the sandbox's identity in cache keys (default: the embedded sandbox's toolchain versions, or the set of " +
				"sandbox URLs)"},
		{
			Key:      "cache_timeouts",
			Default:  false,
			Commands: scoring,
			Set:      to(func(c *Config) *bool { return &c.Engine.CacheTimeouts }),
			Usage:    "also cache timeouts (-3, and -4 from compile timeouts); infrastructure errors (-1) are never cached",
		},
		{
			Key:      "cache_max_mb",
			Default:  1024,
			Commands: scoring,
			Set:      to(func(c *Config) *int { return &c.CacheMaxMB }, positive[int]("cache_max_mb")),
			Usage:    "size bound of the cache directory, in MB (the oldest entries go first)",
		},
		{
			Key:      "response_key",
			Default:  "responses",
			Commands: rows,
			Set:      to(func(c *Config) *string { return &c.Reader.ResponseKey }),
			Usage:    "column holding the responses (a list of strings or one string)",
		},
		{Key: "data_source_key", Default: "data_source", Commands: rows | Diff, Set: parsed(func(c *Config, s string) error {
			c.Reader.RequireDataSource = s != rollout.DefaultOptions().DataSourceKey // chosen, not defaulted
			c.Reader.DataSourceKey = s
			return nil
		}), Usage: "column holding the data source"},
		{
			Key:      "ground_truth_key",
			Default:  "reward_model.ground_truth",
			Commands: rows,
			Set:      to(func(c *Config) *string { return &c.Reader.GroundTruthKey }),
			Usage:    "dotted path of the ground truth",
		},
		{Key: "data_source", Default: "", Commands: rows, Set: to(func(c *Config) *string { return &c.Job.DataSource }),
			Usage: "data source for rows that have none (rollout dumps)"},
		{Key: "language_key", Default: "", Commands: rows, Set: to(func(c *Config) *string { return &c.Reader.LanguageKey }),
			Usage: "dotted path of a per-row language (a string, or a list aligned with the responses) that overrides " +
				"--language, e.g. extra_info.response_languages"},
		{Key: "infra_errors", Default: "score", Commands: Run, Set: parsed(func(c *Config, s string) error {
			c.Job.MaskInfra = s == "mask"
			return oneOf("infra_errors", "score", "mask")(s)
		}), Usage: "responses with infrastructure failures: score (count them, as verl) or mask (leave them out of the " +
			"means)"},
		{
			Key:      "max_infra_errors",
			Default:  0.05,
			Commands: Run,
			Set:      to(func(c *Config) *float64 { return &c.MaxInfraErrors }, fraction("max_infra_errors")),
			Usage: "fail (exit 1, after writing the output) when more than this fraction of the responses sent met an " +
				"infrastructure error; all of them failing always does",
		},
		{
			Key:      "max_input_errors",
			Default:  0.2,
			Commands: Run,
			Set:      to(func(c *Config) *float64 { return &c.MaxInputErrors }, fraction("max_input_errors")),
			Usage: "fail (exit 1, after writing the output) when more than this fraction of the responses could not be run " +
				"for an input reason (a bad row, a ground truth that does not parse: often a wrong --ground-truth-key)",
		},
		{
			Key:      "pass_k",
			Default:  "",
			Commands: Run,
			Set:      parsed(func(c *Config, s string) (err error) { c.Job.PassK, err = results.ParsePassK(s); return }),
			Usage: "the k of pass@k in the summary, separated by commas, e.g. 1,5,10,100 (each over the prompts with at " +
				"least k responses; the summary says how many); default 1 and the powers of two",
		},
		{Key: "cases_out_max_text", Default: 4096, Commands: Run, Set: to(func(c *Config) *int { return &c.Job.MaxText }),
			Usage: "bytes of stdout/stderr kept per case in --cases-out"},
		{Key: "outage_grace", Default: "30s", Commands: sandboxed, Set: parsed(func(c *Config, s string) (err error) {
			c.Retry.OutageGrace, err = parseGrace(s)
			return
		}),
			Usage: "how long a sandbox endpoint may refuse or shed requests before they fail (-1): a duration such as 30s or " +
				"2m, or seconds; 0 gives up after 5 attempts"},
		{
			Key:      "retry_overload",
			Default:  true,
			Commands: sandboxed,
			Set:      to(func(c *Config) *bool { return &c.Retry.Overload }),
			Usage:    "retry 429, 503 and refused/reset connections with backoff",
		},
		{
			Key:      "retry_sandbox_errors",
			Default:  1,
			Commands: sandboxed,
			Set: to(func(c *Config) *int { return &c.Retry.SandboxErrorAttempts }, func(n int) error {
				if n < 1 {
					return fmt.Errorf("retry_sandbox_errors must be at least 1, got %d", n)
				}
				return nil
			}),
			Usage: "attempts in all for a SandboxError answer (1 = no retry, as verl)",
		},
		{
			Key:      "local_concurrency",
			Default:  runtime.NumCPU(),
			Commands: sandboxed,
			Set:      to(func(c *Config) *int { return &c.Sandbox.Concurrency }, positive[int]("local_concurrency")),
			Usage:    "programs run at once by the embedded sandbox",
		},
		{
			Key:      "isolation",
			Default:  "auto",
			Commands: sandboxed | Serve,
			Set: parsed(
				func(c *Config, s string) (err error) { c.Sandbox.Isolation, err = sandbox.ParseIsolation(s); return },
			),
			Usage: "embedded sandbox isolation: auto (all the kernel allows), basic (no filesystem view, PID or IPC namespace " +
				"per run) or none",
		},
		{
			Key:      "ruby_stack_mb",
			Default:  0,
			Commands: sandboxed | Serve,
			Set: to(func(c *Config) *int { return &c.Sandbox.RubyStackMB }, func(n int) error {
				if n < 0 {
					return fmt.Errorf("ruby_stack_mb must be 0 (the memory limit, as SandboxFusion) or a size in MB, got %d", n)
				}
				return nil
			}),
			Usage: "embedded sandbox: stack limit of Ruby runs in MB; 0 sets it to the memory limit as SandboxFusion does, " +
				"where Ruby cannot start and every Ruby program scores 0 in verl too; 8 lets Ruby run (verdicts then differ " +
				"from verl's)",
		},
		{Key: "seccomp", Default: "on", Commands: sandboxed | Serve, Set: parsed(func(c *Config, s string) error {
			switch s {
			case "on":
				c.Sandbox.NoSeccomp = false
			case "off":
				c.Sandbox.NoSeccomp = true
			default:
				return fmt.Errorf("seccomp must be on or off, got %q", s)
			}
			return nil
		}), Usage: "embedded sandbox: on starts every program under Docker's default system-call filter with verl-score's " +
			"refusals added " +
			"(verl-score doctor --seccomp lists it); off, for debugging, starts them without one and warns each time a " +
			"sandbox starts"},
		{
			Key:      "fast_paths",
			Default:  true,
			Commands: sandboxed | Serve,
			Set:      parsed2(func(c *Config, on bool) { c.Sandbox.NoFastPaths = !on }),
			Usage: "embedded sandbox: fork Python runs from a pre-started interpreter, compile C++ against a precompiled " +
				"bits/stdc++.h and start javac from a class-data archive (same verdicts; false starts and compiles each " +
				"plainly)",
		},
		{
			Key:      "listen",
			Default:  "127.0.0.1:8080",
			Commands: Serve,
			Set: to(func(c *Config) *string { return &c.Listen }, func(a string) error {
				if _, _, err := net.SplitHostPort(a); err != nil {
					return fmt.Errorf("listen: %w", err)
				}
				return nil
			}),
			Usage: "address to listen on (host:port; port 0 picks a free one)",
		},
		{
			Key:      "slots",
			Default:  runtime.NumCPU(),
			Commands: Serve,
			OldFlags: []string{"max-concurrent"},
			Set:      to(func(c *Config) *int { return &c.Server.Slots }, positive[int]("slots")),
			Usage:    "programs compiled or run at once",
		},
		{Key: "max_queue", Default: -1, Commands: Serve, Set: parsed3(func(c *Config, n int) error {
			// The one translation: the setting says -1 for no bound by
			// count and 0 for no queue, as a user would; server.Options
			// keeps Go's useful zero (no bound) and takes -1 for none.
			switch {
			case n < -1:
				return fmt.Errorf("max_queue must be -1 (no bound by count), 0 (no queue) or positive, got %d", n)
			case n == -1:
				c.Server.MaxQueue = 0
			case n == 0:
				c.Server.MaxQueue = -1
			default:
				c.Server.MaxQueue = n
			}
			return nil
		}), Usage: "at most this many requests wait for a free slot (-1: bounded by --max-queue-bytes only; 0: no queue)"},
		{
			Key:      "max_queue_bytes",
			Default:  FormatSize(server.DefaultMaxQueueBytes()),
			Commands: Serve,
			Set:      size(func(c *Config) *int64 { return &c.Server.MaxQueueBytes }),
			Usage:    "request bodies that may wait for a free slot, in bytes or with a KiB/MiB/GiB suffix",
		},
		{
			Key:      "max_body",
			Default:  FormatSize(server.DefaultMaxBodyBytes),
			Commands: Serve,
			Set:      size(func(c *Config) *int64 { return &c.Server.MaxBodyBytes }),
			Usage:    "largest request body accepted (bytes, or with a KiB/MiB/GiB suffix); larger gets 413",
		},
		{
			Key:      "shutdown_timeout",
			Default:  server.DefaultShutdownTimeout.String(),
			Commands: Serve,
			Set: parsed(func(c *Config, s string) error {
				d, err := time.ParseDuration(strings.TrimSpace(s))
				if err != nil || d <= 0 {
					return fmt.Errorf("shutdown_timeout must be a positive duration such as 30s or 2m, got %q", s)
				}
				c.Server.ShutdownTimeout = d
				return nil
			}),
			Usage: "how long a shutdown waits for runs in progress",
		},
		{Key: "log_level", Default: "info", Commands: Serve, Set: parsed(func(c *Config, s string) error {
			switch strings.ToLower(s) {
			case "info":
				c.LogLevel = slog.LevelInfo
			case "debug":
				c.LogLevel = slog.LevelDebug
			default:
				return fmt.Errorf("log_level must be info or debug, got %q", s)
			}
			return nil
		}), Usage: "info, or debug for one line per request"},
	}
}

// size stores a byte count (ParseSize) into the field that at gives.
func size(at func(*Config) *int64) func(*Config, any) error {
	return parsed(func(c *Config, s string) (err error) {
		*at(c), err = ParseSize(s)
		return err
	})
}

// parsed3 stores an int through set, which checks it.
func parsed3(set func(c *Config, n int) error) func(*Config, any) error {
	return func(c *Config, v any) error { return set(c, v.(int)) }
}

// parsed2 stores a bool through set.
func parsed2(set func(c *Config, on bool)) func(*Config, any) error {
	return func(c *Config, v any) error { set(c, v.(bool)); return nil }
}

// envPrefix is the prefix of the environment variables read.
const envPrefix = "VERL_SCORE"

// Loader binds a command's flags, the environment and a config file.
type Loader struct {
	v     *viper.Viper
	flags *pflag.FlagSet
	cmd   Command
}

// AddFlags registers on fs the flags of the settings that cmd has, and
// returns a Loader that reads them. The other settings still load from
// the environment, the file and the defaults.
func AddFlags(fs *pflag.FlagSet, cmd Command) *Loader {
	l := &Loader{v: viper.New(), flags: fs, cmd: cmd}
	for _, s := range Settings() {
		l.v.SetDefault(s.Key, s.Default)
		if !l.has(s) {
			continue
		}
		switch d := s.Default.(type) {
		case string:
			fs.String(s.Flag(), d, s.Usage)
		case int:
			fs.Int(s.Flag(), d, s.Usage)
		case float64:
			fs.Float64(s.Flag(), d, s.Usage)
		case bool:
			fs.Bool(s.Flag(), d, s.Usage)
		case []string:
			fs.StringArray(s.Flag(), d, s.Usage)
		}
	}
	// The old names come after every current one, so that a name another
	// setting of this command has now stays that setting's.
	for _, s := range Settings() {
		for _, old := range s.OldFlags {
			if !l.has(s) || fs.Lookup(old) != nil {
				continue
			}
			f := *fs.Lookup(s.Flag())
			f.Name, f.Shorthand, f.Usage = old, "", "old name of --"+s.Flag()
			fs.AddFlag(&f) // shares the current flag's value
			fs.MarkDeprecated(old, "use --"+s.Flag())
		}
	}
	fs.String(
		"config",
		"",
		"config file (YAML, JSON or TOML) with the keys that \"verl-score config\" lists; default ./verl-score.yaml if "+
			"present",
	)
	return l
}

// has reports whether the loader's command has s as a flag.
func (l *Loader) has(s Setting) bool { return s.Commands&l.cmd != 0 }

// Load resolves the configuration. A config file named by --config must
// exist; without --config, ./verl-score.yaml is read when present.
func (l *Loader) Load() (*Config, error) {
	v := l.v
	for _, s := range Settings() {
		if l.has(s) {
			if old := l.oldFlag(s); old != nil {
				l.flags.Lookup(s.Flag()).Changed = true // given by its old name
			}
			if err := v.BindPFlag(s.Key, l.flags.Lookup(s.Flag())); err != nil {
				return nil, err
			}
		}
		if err := v.BindEnv(s.Key, envName(s.Key)); err != nil {
			return nil, err
		}
	}
	if err := v.BindEnv("sandbox_url", envName("sandbox_url"), "SANDBOX_FUSION_URL"); err != nil {
		return nil, err
	}
	path, _ := l.flags.GetString("config")
	if path == "" {
		if _, err := os.Stat("verl-score.yaml"); err == nil {
			path = "verl-score.yaml"
		}
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, &fileError{fmt.Errorf("config file %s: %w", path, err)}
		}
		if err := checkFileKeys(path); err != nil {
			return nil, &fileError{err}
		}
	}
	c := &Config{Engine: score.DefaultOptions(), Reader: rollout.DefaultOptions(),
		Retry: sandboxclient.DefaultRetryPolicy(), SWE: swerun.DefaultOptions}
	var errs []error
	fileFault := false
	for _, s := range Settings() {
		if err := l.set(c, s); err != nil {
			if !strings.Contains(err.Error(), s.Key) {
				err = fmt.Errorf("%s: %w", s.Key, err)
			}
			errs = append(errs, &ValueError{Key: s.Key, Err: err})
			fileFault = fileFault || strings.HasPrefix(l.Source(s.Key), "file ")
		}
	}
	err := errors.Join(errs...)
	if fileFault {
		// Values from the file that are out of range are the file's fault.
		return nil, &fileError{fmt.Errorf("config file %s: %w", path, err)}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// set converts the resolved value of s to its type and stores it.
func (l *Loader) set(c *Config, s Setting) error {
	raw := l.v.Get(s.Key)
	var v any
	var err error
	switch s.Default.(type) {
	case string:
		v, err = cast.ToStringE(raw)
	case int:
		v, err = cast.ToIntE(raw)
	case float64:
		v, err = cast.ToFloat64E(raw)
	case bool:
		v, err = cast.ToBoolE(raw)
	case []string:
		if str, ok := raw.(string); ok { // an environment variable: commas separate
			var list []string
			for _, e := range strings.Split(str, ",") {
				if e = strings.TrimSpace(e); e != "" {
					list = append(list, e)
				}
			}
			v = list
		} else {
			v, err = cast.ToStringSliceE(raw)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: want a %T, got %v", s.Key, s.Default, raw)
	}
	return s.Set(c, v)
}

// checkFileKeys fails on a key of the config file that is no setting,
// naming the closest one: a misspelt key would otherwise be ignored.
func checkFileKeys(path string) error {
	fv := viper.New()
	fv.SetConfigFile(path)
	if err := fv.ReadInConfig(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]bool{}
	var names []string
	for _, s := range Settings() {
		known[s.Key] = true
		names = append(names, s.Key)
	}
	var errs []error
	for _, k := range fv.AllKeys() {
		if known[k] {
			continue
		}
		hint := ""
		if c := closest(k, names); c != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", c)
		}
		errs = append(
			errs,
			fmt.Errorf("config file %s: unknown key %q%s; \"verl-score config\" lists the keys", path, k, hint),
		)
	}
	return errors.Join(errs...)
}

// closest is the name nearest to s by edit distance, if it is near enough
// to be a likely typo.
func closest(s string, names []string) string {
	best, bestD := "", len(s)/2+2
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ConfigFile returns the config file that was read, or "".
func (l *Loader) ConfigFile() string { return l.v.ConfigFileUsed() }

func envName(key string) string { return envPrefix + "_" + strings.ToUpper(key) }

// ErrConfigFile is wrapped by Load's error when the config file is at
// fault: it cannot be read, it has a key verl-score does not know, or a
// value from it is out of range. That is a configuration failure, not a
// usage error.
var ErrConfigFile = errors.New("bad config file")

// ValueError is a setting whose value is out of range or not a choice.
type ValueError struct {
	Key string
	Err error
}

func (e *ValueError) Error() string { return e.Err.Error() }
func (e *ValueError) Unwrap() error { return e.Err }

// fileError marks err as the config file's fault.
type fileError struct{ err error }

func (e *fileError) Error() string   { return e.err.Error() }
func (e *fileError) Unwrap() []error { return []error{e.err, ErrConfigFile} }

// oldFlag is the old flag of s that the command line gave, if any.
func (l *Loader) oldFlag(s Setting) *pflag.Flag {
	for _, old := range s.OldFlags {
		if f := l.flags.Lookup(old); f != nil && f.Changed && f.Value == l.flags.Lookup(s.Flag()).Value {
			return f
		}
	}
	return nil
}

// Source says where the value of key came from.
func (l *Loader) Source(key string) string {
	for _, s := range Settings() {
		if s.Key == key && l.has(s) {
			if f := l.oldFlag(s); f != nil {
				return "flag --" + f.Name
			}
			if f := l.flags.Lookup(s.Flag()); f != nil && f.Changed {
				return "flag --" + s.Flag()
			}
		}
	}
	if _, ok := os.LookupEnv(envName(key)); ok {
		return "env " + envName(key)
	}
	if key == "sandbox_url" {
		if _, ok := os.LookupEnv("SANDBOX_FUSION_URL"); ok {
			return "env SANDBOX_FUSION_URL"
		}
	}
	if l.v.InConfig(key) {
		return "file " + l.v.ConfigFileUsed()
	}
	return "default"
}

// Entry is one line of the effective configuration.
type Entry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// Effective lists every key of the loader's commands with its value and
// source.
func (l *Loader) Effective() []Entry {
	var out []Entry
	for _, s := range Settings() {
		if !l.has(s) {
			continue
		}
		var val any = l.v.Get(s.Key)
		if _, list := s.Default.([]string); list {
			vals := l.v.GetStringSlice(s.Key)
			if s.Redact != nil {
				for i := range vals {
					vals[i] = s.Redact(vals[i])
				}
			}
			val = vals
		} else if s.Redact != nil {
			val = s.Redact(l.v.GetString(s.Key))
		}
		out = append(out, Entry{Key: s.Key, Value: val, Source: l.Source(s.Key)})
	}
	return out
}
