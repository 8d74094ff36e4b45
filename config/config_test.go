package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func load(t *testing.T, args []string) (*Config, *Loader, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l := AddFlags(fs, "sandbox_url", "max_concurrent", "timeout", "mode")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	return c, l, err
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("max_concurrent: 7\ntimeout: 3\nmode: all\nmemory_limit_mb: 512\n"), 0o644); err != nil {
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
		{"mode", "flag --mode", c.Mode, "continuous"},
		{"timeout", "env VERL_SCORE_TIMEOUT", c.Timeout, 5.0},
		{"max_concurrent", "file " + file, c.MaxConcurrent, 7},
		{"memory_limit_mb", "file " + file, c.MemoryLimitMB, 512},
		{"sandbox_url", "env SANDBOX_FUSION_URL", c.SandboxURL, "http://127.0.0.1:9/run_code"},
		{"language", "default", c.Language, "python"},
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
	if c.SandboxURL != "http://b/run_code" {
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
