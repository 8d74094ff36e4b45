// Package config loads verl-score's one typed configuration with viper:
// command-line flags win over VERL_SCORE_* environment variables (and
// SANDBOX_FUSION_URL), which win over a config file, which wins over the
// defaults.
package config

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Config is the effective configuration of a run.
type Config struct {
	// SandboxURL lists the SandboxFusion endpoints; empty means the
	// embedded sandbox.
	SandboxURL []string `mapstructure:"sandbox_url"`
	// SandboxHeader lists "Name: value" headers sent with every request.
	SandboxHeader []string `mapstructure:"sandbox_header"`

	MaxConcurrent int     `mapstructure:"max_concurrent"`
	Timeout       float64 `mapstructure:"timeout"`
	MemoryLimitMB int     `mapstructure:"memory_limit_mb"`
	Mode          string  `mapstructure:"mode"`
	Language      string  `mapstructure:"language"`
	Extract       string  `mapstructure:"extract"`
	NoCompileSkip bool    `mapstructure:"no_compile_skip"`
	NoDedup       bool    `mapstructure:"no_dedup"`
	Compare       string  `mapstructure:"compare"`
	CheckerKey    string  `mapstructure:"checker_key"`
	Audit         bool    `mapstructure:"audit"`
	AuditFail     bool    `mapstructure:"audit_fail"`

	Cache         string `mapstructure:"cache"`
	CacheKey      string `mapstructure:"cache_key"`
	CacheTimeouts bool   `mapstructure:"cache_timeouts"`
	CacheMaxMB    int    `mapstructure:"cache_max_mb"`

	ResponseKey    string `mapstructure:"response_key"`
	DataSourceKey  string `mapstructure:"data_source_key"`
	GroundTruthKey string `mapstructure:"ground_truth_key"`
	DataSource     string `mapstructure:"data_source"`
	LanguageKey    string `mapstructure:"language_key"`

	InfraErrors     string  `mapstructure:"infra_errors"`
	MaxInfraErrors  float64 `mapstructure:"max_infra_errors"`
	MaxInputErrors  float64 `mapstructure:"max_input_errors"`
	PassK           string  `mapstructure:"pass_k"`
	CasesOutMaxText int     `mapstructure:"cases_out_max_text"`

	RetryOverload      bool   `mapstructure:"retry_overload"`
	RetrySandboxErrors int    `mapstructure:"retry_sandbox_errors"`
	LocalConcurrency   int    `mapstructure:"local_concurrency"`
	LocalIsolation     string `mapstructure:"isolation"`
	FastPaths          bool   `mapstructure:"fast_paths"`
	RubyStackMB        int    `mapstructure:"ruby_stack_mb"`
}

// Setting describes one configuration key: its flag, default and help.
// A list setting (Default []string) takes a repeatable flag, a list in the
// config file, or a comma-separated environment variable.
type Setting struct {
	Key     string
	Flag    string
	Default any
	Usage   string
	// Redact, when set, turns a value (each element of a list) into what
	// may be printed: credentials stay out of `config` output.
	Redact func(string) string
}

// Settings lists every key, in the order `verl-score config` prints them.
func Settings() []Setting {
	return []Setting{
		{Key: "sandbox_url", Flag: "sandbox-url", Default: []string{}, Redact: sandboxclient.RedactURL,
			Usage: "SandboxFusion run_code URL; repeat it (or separate with commas, as in env SANDBOX_FUSION_URL) for a fleet of endpoints, each optionally ending in #weight=N; empty runs code in the embedded sandbox"},
		{Key: "sandbox_header", Flag: "sandbox-header", Default: []string{}, Redact: sandboxclient.RedactHeader,
			Usage: "header 'Name: value' sent with every sandbox request, e.g. 'Authorization: Bearer $TOKEN' ($VAR is taken from the environment); repeatable; never printed"},
		{Key: "max_concurrent", Flag: "max-concurrent", Default: 64, Usage: "requests in flight across all responses and cases"},
		{Key: "timeout", Flag: "timeout", Default: 10.0, Usage: "compile and run timeout of each case, in seconds"},
		{Key: "memory_limit_mb", Flag: "memory-limit-mb", Default: 1024, Usage: "memory limit of each case, in MB"},
		{Key: "mode", Flag: "mode", Default: "auto", Usage: "scoring mode: auto (verl's routing by data source), continuous or all"},
		{Key: "language", Flag: "language", Default: "python", Usage: "language of every solution (verl sends python), or auto to take it from the code fence"},
		{Key: "extract", Flag: "extract", Default: "verl", Usage: "code extraction rule: verl or prime"},
		{Key: "no_compile_skip", Flag: "no-compile-skip", Default: false, Usage: "send every case even after a compile error (verdicts are the same)"},
		{Key: "compare", Flag: "compare", Default: "exact", Usage: "how stdout meets the expected output: exact (verl's rule), lines (trailing whitespace of each line ignored), tokens (whitespace-separated tokens; fn_name results as values), float[:TOL] (tokens, numbers within TOL absolute or relative, default 1e-6), rows[:TOL] (result sets: lines are rows, | separates cells, rows in any order, numbers within TOL); other than exact, each row also gets reward_exact"},
		{Key: "checker_key", Flag: "checker-key", Default: "", Usage: "ground-truth field holding a problem's checker (its code, or {\"code\", \"language\"}), run on each output with input.txt, output.txt, answer.txt; e.g. checker (default: none, as verl)"},
		{Key: "audit", Flag: "audit", Default: false, Usage: "probe every passing case for known loopholes (exit before the asserts, a fn_name function that raised, reading the answer from disk, a compared value equal to anything) and list flagged responses in the summary and --cases-out; one extra request per passing case (Python only)"},
		{Key: "audit_fail", Flag: "audit-fail", Default: false, Usage: "with --audit, score flagged responses 0 (default: keep verl's reward)"},
		{Key: "no_dedup", Flag: "no-dedup", Default: false, Usage: "send every execution, even one identical (code, stdin, language, limits) to one this run already sent (verdicts are the same)"},
		{Key: "cache", Flag: "cache", Default: "", Usage: "directory of a result cache shared across runs (content-addressed; safe for concurrent runs); off when empty"},
		{Key: "cache_key", Flag: "cache-key", Default: "", Usage: "the sandbox's identity in cache keys (default: the embedded sandbox's toolchain versions, or the set of sandbox URLs)"},
		{Key: "cache_timeouts", Flag: "cache-timeouts", Default: false, Usage: "also cache timeouts (-3, and -4 from compile timeouts); infrastructure errors (-1) are never cached"},
		{Key: "cache_max_mb", Flag: "cache-max-mb", Default: 1024, Usage: "size bound of the cache directory, in MB (the oldest entries go first)"},
		{Key: "response_key", Flag: "response-key", Default: "responses", Usage: "column holding the responses (a list of strings or one string)"},
		{Key: "data_source_key", Flag: "data-source-key", Default: "data_source", Usage: "column holding the data source"},
		{Key: "ground_truth_key", Flag: "ground-truth-key", Default: "reward_model.ground_truth", Usage: "dotted path of the ground truth"},
		{Key: "data_source", Flag: "data-source", Default: "", Usage: "data source for rows that have none (rollout dumps)"},
		{Key: "language_key", Flag: "language-key", Default: "", Usage: "dotted path of a per-row language (a string, or a list aligned with the responses) that overrides --language, e.g. extra_info.response_languages"},
		{Key: "infra_errors", Flag: "infra-errors", Default: "score", Usage: "responses with infrastructure failures: score (count them, as verl) or mask (leave them out of the means)"},
		{Key: "max_infra_errors", Flag: "max-infra-errors", Default: 0.05, Usage: "fail (exit 1, after writing the output) when more than this fraction of the responses sent met an infrastructure error; all of them failing always does"},
		{Key: "max_input_errors", Flag: "max-input-errors", Default: 0.2, Usage: "fail (exit 1, after writing the output) when more than this fraction of the responses could not be run for an input reason (a bad row, a ground truth that does not parse: often a wrong --ground-truth-key)"},
		{Key: "pass_k", Flag: "pass-k", Default: "", Usage: "the k of pass@k in the summary, separated by commas, e.g. 1,5,10,100 (each over the prompts with at least k responses; the summary says how many); default 1 and the powers of two"},
		{Key: "cases_out_max_text", Flag: "cases-out-max-text", Default: 4096, Usage: "bytes of stdout/stderr kept per case in --cases-out"},
		{Key: "retry_overload", Flag: "retry-overload", Default: true, Usage: "retry 429, 503 and refused/reset connections with backoff"},
		{Key: "retry_sandbox_errors", Flag: "retry-sandbox-errors", Default: 1, Usage: "attempts in all for a SandboxError answer (1 = no retry, as verl)"},
		{Key: "local_concurrency", Flag: "local-concurrency", Default: runtime.NumCPU(), Usage: "programs run at once by the embedded sandbox"},
		{Key: "isolation", Flag: "isolation", Default: "auto", Usage: "embedded sandbox isolation: auto (all the kernel allows), basic (no filesystem view, PID or IPC namespace per run) or none"},
		{Key: "ruby_stack_mb", Flag: "ruby-stack-mb", Default: 0, Usage: "embedded sandbox: stack limit of Ruby runs in MB; 0 sets it to the memory limit as SandboxFusion does, where Ruby cannot start and every Ruby program scores 0 in verl too; 8 lets Ruby run (verdicts then differ from verl's)"},
		{Key: "fast_paths", Flag: "fast-paths", Default: true, Usage: "embedded sandbox: fork Python runs from a pre-started interpreter, compile C++ against a precompiled bits/stdc++.h and start javac from a class-data archive (same verdicts; false starts and compiles each plainly)"},
	}
}

// flagAliases are old flag names still accepted, mapped to the current
// ones (which match the keys).
var flagAliases = map[string]string{"memory-limit": "memory-limit-mb"}

// envPrefix is the prefix of the environment variables read.
const envPrefix = "VERL_SCORE"

// Loader binds a command's flags, the environment and a config file.
type Loader struct {
	v     *viper.Viper
	flags *pflag.FlagSet
	keys  map[string]bool
}

// AddFlags registers the flags of the given keys on fs and returns a
// Loader that reads them. Keys not given still load from env, file and
// defaults.
func AddFlags(fs *pflag.FlagSet, keys ...string) *Loader {
	l := &Loader{v: viper.New(), flags: fs, keys: map[string]bool{}}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, s := range Settings() {
		l.v.SetDefault(s.Key, s.Default)
		if !want[s.Key] {
			continue
		}
		l.keys[s.Key] = true
		switch d := s.Default.(type) {
		case string:
			fs.String(s.Flag, d, s.Usage)
		case int:
			fs.Int(s.Flag, d, s.Usage)
		case float64:
			fs.Float64(s.Flag, d, s.Usage)
		case bool:
			fs.Bool(s.Flag, d, s.Usage)
		case []string:
			fs.StringArray(s.Flag, d, s.Usage)
		}
	}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := flagAliases[name]; ok {
			return pflag.NormalizedName(n)
		}
		return pflag.NormalizedName(name)
	})
	fs.String("config", "", "config file (YAML, JSON or TOML) with the keys that \"verl-score config\" lists; default ./verl-score.yaml if present")
	return l
}

// Load resolves the configuration. A config file named by --config must
// exist; without --config, ./verl-score.yaml is read when present.
func (l *Loader) Load() (*Config, error) {
	v := l.v
	for _, s := range Settings() {
		if l.keys[s.Key] {
			if err := v.BindPFlag(s.Key, l.flags.Lookup(s.Flag)); err != nil {
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
	var c Config
	if err := v.Unmarshal(&c); err != nil {
		return nil, &fileError{fmt.Errorf("config file %s: %w", path, err)}
	}
	if err := c.Validate(); err != nil {
		// Out-of-range values that came from the file are the file's fault.
		var ves []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			ves = j.Unwrap()
		}
		for _, e := range ves {
			var ve *ValueError
			if errors.As(e, &ve) && strings.HasPrefix(l.Source(ve.Key), "file ") {
				return nil, &fileError{fmt.Errorf("config file %s: %w", path, err)}
			}
		}
		return nil, err
	}
	return &c, nil
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
		errs = append(errs, fmt.Errorf("config file %s: unknown key %q%s; \"verl-score config\" lists the keys", path, k, hint))
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

// Validate checks values that have a fixed set of choices or a range.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxConcurrent <= 0 {
		errs = append(errs, &ValueError{Key: "max_concurrent", Err: fmt.Errorf("max_concurrent must be positive, got %d", c.MaxConcurrent)})
	}
	if c.Timeout <= 0 {
		errs = append(errs, &ValueError{Key: "timeout", Err: fmt.Errorf("timeout must be positive, got %g", c.Timeout)})
	}
	if c.MemoryLimitMB <= 0 {
		errs = append(errs, &ValueError{Key: "memory_limit_mb", Err: fmt.Errorf("memory_limit_mb must be positive, got %d", c.MemoryLimitMB)})
	}
	if c.LocalConcurrency <= 0 {
		errs = append(errs, &ValueError{Key: "local_concurrency", Err: fmt.Errorf("local_concurrency must be positive, got %d", c.LocalConcurrency)})
	}
	if c.CacheMaxMB <= 0 {
		errs = append(errs, &ValueError{Key: "cache_max_mb", Err: fmt.Errorf("cache_max_mb must be positive, got %d", c.CacheMaxMB)})
	}
	if c.RetrySandboxErrors <= 0 {
		errs = append(errs, &ValueError{Key: "retry_sandbox_errors", Err: fmt.Errorf("retry_sandbox_errors must be at least 1, got %d", c.RetrySandboxErrors)})
	}
	oneOf := func(key, val string, choices ...string) {
		for _, ch := range choices {
			if val == ch {
				return
			}
		}
		errs = append(errs, &ValueError{Key: key, Err: fmt.Errorf("%s must be one of %s, got %q", key, strings.Join(choices, ", "), val)})
	}
	oneOf("mode", c.Mode, "auto", "continuous", "all")
	oneOf("extract", c.Extract, "verl", "prime")
	oneOf("infra_errors", c.InfraErrors, "score", "mask")
	if c.MaxInfraErrors < 0 || c.MaxInfraErrors > 1 {
		errs = append(errs, &ValueError{Key: "max_infra_errors", Err: fmt.Errorf("max_infra_errors must be a fraction from 0 to 1, got %g", c.MaxInfraErrors)})
	}
	if c.MaxInputErrors < 0 || c.MaxInputErrors > 1 {
		errs = append(errs, &ValueError{Key: "max_input_errors", Err: fmt.Errorf("max_input_errors must be a fraction from 0 to 1, got %g", c.MaxInputErrors)})
	}
	for _, f := range strings.Split(c.PassK, ",") {
		if f = strings.TrimSpace(f); f == "" && strings.TrimSpace(c.PassK) == "" {
			break
		}
		if k, err := strconv.Atoi(f); err != nil || k < 1 {
			errs = append(errs, &ValueError{Key: "pass_k", Err: fmt.Errorf("pass_k: want positive whole numbers separated by commas, such as 1,5,10,100; got %q", c.PassK)})
			break
		}
	}
	oneOf("isolation", c.LocalIsolation, "auto", "basic", "none")
	if c.RubyStackMB < 0 {
		errs = append(errs, &ValueError{Key: "ruby_stack_mb", Err: fmt.Errorf("ruby_stack_mb must be 0 (the memory limit, as SandboxFusion) or a size in MB, got %d", c.RubyStackMB)})
	}
	return errors.Join(errs...)
}

// Source says where the value of key came from.
func (l *Loader) Source(key string) string {
	if l.keys[key] {
		for _, s := range Settings() {
			if s.Key == key {
				if f := l.flags.Lookup(s.Flag); f != nil && f.Changed {
					return "flag --" + s.Flag
				}
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

// Effective lists every key with its value and source.
func (l *Loader) Effective() []Entry {
	var out []Entry
	for _, s := range Settings() {
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
