package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/server"
)

func load(t *testing.T, args []string) (*Config, *Loader, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l := AddFlags(fs, Run)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	return c, l, err
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("max_concurrent: 7\ntimeout: 3\nmode: all\nmemory_limit_mb: 512\n"),
		0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VERL_SCORE_TIMEOUT", "5")
	t.Setenv("SANDBOX_FUSION_URL", "http://127.0.0.1:9/run_code")
	c, l, err := load(t, []string{"--config", file, "--mode", "continuous"})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		key, source string
		got, want   any
	}{
		{"mode", "flag --mode", c.Engine.Mode, score.ModeContinuous},
		{"timeout", "env VERL_SCORE_TIMEOUT", c.Engine.Timeout, 5.0},
		{"max_concurrent", "file " + file, c.Engine.MaxConcurrent, 7},
		{"memory_limit_mb", "file " + file, c.Engine.MemoryLimitMB, 512},
		{"sandbox_url", "env SANDBOX_FUSION_URL", strings.Join(c.SandboxURL, ","), "http://127.0.0.1:9/run_code"},
		{"language", "default", c.Engine.Language, "python"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.key, ck.got, ck.want)
		}
		if src := l.Source(ck.key); src != ck.source {
			t.Errorf("%s source: got %q, want %q", ck.key, src, ck.source)
		}
	}
}

func TestPrefixedURLWinsOverSandboxFusionURL(t *testing.T) {
	t.Setenv("SANDBOX_FUSION_URL", "http://a/run_code")
	t.Setenv("VERL_SCORE_SANDBOX_URL", "http://b/run_code")
	c, _, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.SandboxURL, ",") != "http://b/run_code" {
		t.Errorf("got %q, want the VERL_SCORE_ one", c.SandboxURL)
	}
}

func TestValidate(t *testing.T) {
	_, _, err := load(t, []string{"--mode", "sometimes", "--max-concurrent", "0"})
	if err == nil {
		t.Fatal("got nil error, want validation errors")
	}
	for _, want := range []string{"mode must be one of", "max_concurrent must be positive"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestMissingConfigFile(t *testing.T) {
	_, _, err := load(t, []string{"--config", filepath.Join(t.TempDir(), "nope.yaml")})
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("got %v, want an error naming the file", err)
	}
}

// A misspelt key in a config file is an error naming the file, the key and
// the closest setting; values from a file that are out of range, and files
// that cannot be read, are the file's fault (ErrConfigFile).
func TestConfigFileFaults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, text string
		args       []string
		fileFault  bool
		want       []string
	}{
		{"typo.yaml", "max_concurent: 128\n", nil, true, []string{"typo.yaml", `unknown key "max_concurent"`,
			`did you mean "max_concurrent"`}},
		{"nested.yaml", "sandbox:\n  url: x\n", nil, true, []string{`unknown key "sandbox.url"`}},
		{"range.yaml", "mode: sometimes\n", nil, true, []string{"range.yaml", "mode must be one of"}},
		{"broken.yaml", "mode: [\n", nil, true, []string{"broken.yaml"}},
		{"flag.yaml", "timeout: 3\n", []string{"--mode", "sometimes"}, false, []string{"mode must be one of"}},
		{"fine.yaml", "memory_limit_mb: 256\nmax_concurrent: 9\n", nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(tc.name, tc.text)
			_, _, err := load(t, append([]string{"--config", path}, tc.args...))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if got := errors.Is(err, ErrConfigFile); got != tc.fileFault {
				t.Errorf("errors.Is(err, ErrConfigFile) = %v, want %v (%v)", got, tc.fileFault, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// The old --memory-limit still works.
func TestFlagAlias(t *testing.T) {
	for _, flag := range []string{"--memory-limit", "--memory-limit-mb"} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		l := AddFlags(fs, Run)
		if err := fs.Parse([]string{flag, "300"}); err != nil {
			t.Fatal(err)
		}
		c, err := l.Load()
		if err != nil || c.Engine.MemoryLimitMB != 300 {
			t.Errorf("%s 300: got %v, %v", flag, c, err)
		}
	}
}

// Each setting is declared once and reaches the Config: given through its
// environment variable a value other than its default, the loaded Config
// differs from the defaults' (a setting whose Set stores nothing fails).
// Every setting is some command's, and `verl-score config` lists it.
func TestEverySettingReachesTheConfig(t *testing.T) {
	other := map[string]string{ // values of the settings whose default cannot be bumped blindly
		"mode": "all", "extract": "prime", "compare": "tokens", "data_source_key": "src", "infra_errors": "mask",
		"pass_k": "1,3", "isolation": "none", "language": "cpp", "max_concurrent": "auto:32", "outage_grace": "5s",
		"seccomp": "off",
		"listen":  "0.0.0.0:9000", "max_queue": "5", "max_queue_bytes": "1MiB", "max_body": "1MiB",
		"shutdown_timeout": "5s", "log_level": "debug",
		"images": t.TempDir(), "swe_rules": "5", "swe_reward": "f2p", "pull": "never",
		"registry_auth": "ghcr.io=Bearer tok3n", "image_store_max_gb": "50", "prefetch_images": "0",
	}
	base, baseLoader, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Settings() {
		if st.Commands == 0 {
			t.Errorf("setting %q is no command's", st.Key)
		}
		if !slices.ContainsFunc(baseLoader.Effective(), func(e Entry) bool { return e.Key == st.Key }) &&
			st.Commands&Run != 0 {
			t.Errorf("run's provenance does not list %q", st.Key)
		}
		fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
		if !slices.ContainsFunc(AddFlags(fs, Run|Serve).Effective(), func(e Entry) bool { return e.Key == st.Key }) {
			t.Errorf("verl-score config does not list %q", st.Key)
		}
		val, ok := other[st.Key]
		if !ok {
			switch d := st.Default.(type) {
			case string:
				val = d + "x"
			case int:
				val = fmt.Sprint(d + 3)
			case float64:
				val = fmt.Sprint(d / 2)
			case bool:
				val = fmt.Sprint(!d)
			case []string:
				val = "http://h/run_code"
			}
		}
		t.Run(st.Key, func(t *testing.T) {
			t.Setenv(envName(st.Key), val)
			c, _, err := load(t, nil)
			if err != nil {
				t.Fatalf("%s=%s: %v", envName(st.Key), val, err)
			}
			if reflect.DeepEqual(c, base) {
				t.Errorf("%s=%s left the Config as the defaults have it", envName(st.Key), val)
			}
		})
	}
}

// TestServeSettings: serve's settings come from flags (its old
// --max-concurrent too), the environment and the file like the others,
// and max_queue's -1 and 0 reach server.Options as its no bound and none.
func TestServeSettings(t *testing.T) {
	serve := func(t *testing.T, args ...string) (*Config, *Loader) {
		t.Helper()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		l := AddFlags(fs, Serve)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c, err := l.Load()
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return c, l
	}
	c, l := serve(t, "--max-concurrent", "3")
	if c.Server.Slots != 3 || l.Source("slots") != "flag --max-concurrent" {
		t.Errorf("--max-concurrent 3: slots %d from %s", c.Server.Slots, l.Source("slots"))
	}
	if c, _ := serve(t, "--max-queue", "0"); c.Server.MaxQueue != -1 {
		t.Errorf("--max-queue 0 (no queue): server.Options.MaxQueue %d, want -1", c.Server.MaxQueue)
	}
	if c, _ := serve(t); c.Server.MaxQueue != 0 || c.Server.MaxQueueBytes != server.DefaultMaxQueueBytes() {
		t.Errorf("default queue: %d requests, %d bytes", c.Server.MaxQueue, c.Server.MaxQueueBytes)
	}
	t.Setenv("VERL_SCORE_SLOTS", "5")
	t.Setenv("VERL_SCORE_SHUTDOWN_TIMEOUT", "7s")
	c, l = serve(t, "--max-body", "1KiB")
	if c.Server.Slots != 5 || c.Server.ShutdownTimeout != 7*time.Second || c.Server.MaxBodyBytes != 1024 ||
		l.Source("slots") != "env VERL_SCORE_SLOTS" {
		t.Errorf("from the environment: %+v (slots from %s)", c.Server, l.Source("slots"))
	}
	// run keeps its own --max-concurrent: requests in flight.
	c, _, err := load(t, []string{"--max-concurrent", "7"})
	if err != nil || c.Engine.MaxConcurrent != 7 || c.Server.Slots != 5 {
		t.Errorf("run --max-concurrent 7: engine %d, slots %d, %v", c.Engine.MaxConcurrent, c.Server.Slots, err)
	}
}

// A list setting comes from a repeated flag, a comma-separated variable or
// a list in the file; printed, its credentials are redacted.
func TestListSettingsAndRedaction(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("sandbox_url:\n  - http://a:8080/run_code\n  - http://tok3n@b:8080/run_code#weight=2\nsandbox_header:\n  - 'Authorization: Bearer s3cret'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l := AddFlags(fs, Run)
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SandboxURL) != 2 || c.SandboxURL[1] != "http://tok3n@b:8080/run_code#weight=2" || len(c.SandboxHeader) != 1 {
		t.Errorf("from the file: %q %q", c.SandboxURL, c.SandboxHeader)
	}
	for _, e := range l.Effective() {
		if s := fmt.Sprint(e.Value); strings.Contains(s, "s3cret") || strings.Contains(s, "tok3n") {
			t.Errorf("config output prints a credential: %s = %s", e.Key, s)
		}
	}

	t.Setenv("SANDBOX_FUSION_URL", "http://x/run_code,http://y/run_code")
	c, _, err = load(t, nil)
	if err != nil || strings.Join(c.SandboxURL, " ") != "http://x/run_code http://y/run_code" {
		t.Errorf("comma-separated SANDBOX_FUSION_URL: %q, %v", c.SandboxURL, err)
	}
	c, _, err = load(t, []string{"--sandbox-url", "http://p/run_code", "--sandbox-url", "http://q/run_code"})
	if err != nil || strings.Join(c.SandboxURL, " ") != "http://p/run_code http://q/run_code" {
		t.Errorf("repeated --sandbox-url: %q, %v", c.SandboxURL, err)
	}
}

// TestConcurrencyAndGraceValues: max_concurrent takes a number, auto or
// auto:N; outage_grace a duration or seconds; anything else names the key.
func TestConcurrencyAndGraceValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		auto bool
		bad  bool
	}{
		{"64", 64, false, false}, {"auto", DefaultAutoCeiling, true, false}, {"auto:32", 32, true, false},
		{"0", 0, false, true}, {"auto:0", 0, false, true}, {"autox", 0, false, true}, {"auto:", 0, false, true}, {"-3", 0,
			false, true},
	} {
		n, auto, err := ParseConcurrency(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && (n != tc.n || auto != tc.auto)) {
			t.Errorf("ParseConcurrency(%q) = %d, %v, %v", tc.in, n, auto, err)
		}
		if err != nil && !strings.Contains(err.Error(), "max_concurrent") {
			t.Errorf("error %q does not name the key", err)
		}
	}
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "2m": 2 * time.Minute,
		"12.5": 12500 * time.Millisecond, "0": 0} {
		if d, err := parseGrace(in); err != nil || d != want {
			t.Errorf("parseGrace(%q) = %v, %v, want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"-1s", "soon", "NaN"} {
		if _, err := parseGrace(in); err == nil || !strings.Contains(err.Error(), "outage_grace") {
			t.Errorf("parseGrace(%q): %v, want an error naming outage_grace", in, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"1024", 1024, false},
		{"32MiB", 32 << 20, false},
		{"32mb", 32 << 20, false},
		{"8K", 8 << 10, false},
		{"1 GiB", 1 << 30, false},
		{"100B", 100, false},
		{"", 0, true},
		{"-5", 0, true},
		{"1.5MiB", 0, true},
		{"MiB", 0, true},
		{"99999999999999GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q): got %d, %v, want %d (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDefaultMaxQueueBytes(t *testing.T) {
	n := server.DefaultMaxQueueBytes()
	if n < 64<<20 || n > 4<<30 {
		t.Errorf("got %d, want between 64 MiB and 4 GiB", n)
	}
	if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
		t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, got, err)
	}
}
