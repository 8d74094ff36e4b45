package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/server"
	"github.com/verl-score/verl-score/verdict"
)

// syncBuffer is a bytes.Buffer safe to write from the server's goroutines
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunServeAnswersAndStops(t *testing.T) {
	errOut := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrCh := make(chan net.Addr, 1)
	opts := &serveOptions{
		Listen:   "127.0.0.1:0",
		Server:   server.Options{Slots: 2, MaxQueue: 8, MaxBodyBytes: 1 << 20, ShutdownTimeout: 30 * time.Second},
		LogLevel: slog.LevelDebug,
		Sandbox:  sandbox.Options{Isolation: sandbox.IsolationNone},
		ErrOut:   errOut,
		Ready:    func(a net.Addr) { addrCh <- a },
	}
	served := make(chan error, 1)
	go func() { served <- runServe(ctx, opts) }()

	var addr net.Addr
	select {
	case addr = <-addrCh:
	case err := <-served:
		t.Fatalf("runServe returned %v before listening", err)
	}
	url := "http://" + addr.String() + "/run_code"
	if want := "listening on " + url; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q lacks %q", errOut.String(), want)
	}

	body := `{"compile_timeout": 10, "run_timeout": 10, "code": "print(input()[::-1])", "stdin": "olleh", "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}`
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got HTTP %d (%s), want 200", resp.StatusCode, raw)
	}
	var r sandboxclient.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	expected := "hello"
	if got := judge.Case(0, "olleh", "hello", &expected, &r, nil); got.Verdict != verdict.True {
		t.Errorf("got verdict %v (status %s, response %s), want True", got.Verdict, got.Status, raw)
	}
	if !strings.Contains(errOut.String(), "language=python") {
		t.Errorf("debug log lacks the request line:\n%s", errOut.String())
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("runServe returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runServe did not return after its context was cancelled")
	}
}

func TestRunServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	opts := &serveOptions{
		Listen: ln.Addr().String(), Server: server.Options{Slots: 1, MaxBodyBytes: 1024, ShutdownTimeout: time.Second},
		Sandbox: sandbox.Options{Isolation: sandbox.IsolationNone}, ErrOut: io.Discard,
	}
	if err := runServe(context.Background(), opts); err == nil {
		t.Error("got nil error serving on an address in use, want one")
	}
}

func TestServeFlagValidation(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"zero slots", []string{"--slots", "0"}},
		{"zero slots, old name", []string{"--max-concurrent", "0"}},
		{"negative queue", []string{"--max-queue", "-2"}},
		{"bad queue bytes", []string{"--max-queue-bytes", "lots"}},
		{"bad body size", []string{"--max-body", "lots"}},
		{"zero body size", []string{"--max-body", "0"}},
		{"bad log level", []string{"--log-level", "trace"}},
		{"bad isolation", []string{"--isolation", "full"}},
		{"bad listen", []string{"--listen", "8080"}},
		{"zero shutdown timeout", []string{"--shutdown-timeout", "0s"}},
		{"extra argument", []string{"now"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			c := newServeCmd(Streams{Out: &out, ErrOut: &errOut}, nil)
			c.SetArgs(tt.args)
			c.SetOut(&out)
			c.SetErr(&errOut)
			c.SilenceUsage, c.SilenceErrors = true, true
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := c.ExecuteContext(ctx)
			if err == nil {
				t.Fatal("got nil error, want a usage error")
			}
			var ue *UsageError
			if tt.name != "extra argument" && !errors.As(err, &ue) {
				t.Errorf("got %T %v, want a *UsageError", err, err)
			}
		})
	}
}

func TestServeHelpPointsVerlAtIt(t *testing.T) {
	var out bytes.Buffer
	c := newServeCmd(Streams{Out: &out, ErrOut: &out}, nil)
	c.SetOut(&out)
	c.SetArgs([]string{"--help"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reward_model.sandbox_fusion.url=http://127.0.0.1:8080/run_code", "--slots",
		"EXIT STATUS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDoctorOutput(t *testing.T) {
	fakeTools := func() []toolchain.Toolchain {
		return []toolchain.Toolchain{
			{Language: "python", Program: "python3", Path: "/usr/bin/python3", Version: "Python 3.11.2", Found: true},
			{Language: "rust", Program: "rustc"},
		}
	}
	fakeProt := func() []sandbox.Protection {
		return []sandbox.Protection{{Name: "network namespace", Available: true, Detail: "steps have no network"}}
	}

	t.Run("table", func(t *testing.T) {
		var out bytes.Buffer
		err := runDoctor(context.Background(), &doctorOptions{Out: &out, toolchains: fakeTools, protections: fakeProt})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		var python, rust, netns string
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "python "):
				python = strings.Join(strings.Fields(l), " ")
			case strings.HasPrefix(l, "rust "):
				rust = strings.Join(strings.Fields(l), " ")
			case strings.HasPrefix(l, "network namespace"):
				netns = strings.Join(strings.Fields(l), " ")
			}
		}
		if want := "python python3 yes /usr/bin/python3 Python 3.11.2"; python != want {
			t.Errorf("got python row %q, want %q", python, want)
		}
		if want := "rust rustc no - -"; rust != want {
			t.Errorf("got rust row %q, want %q", rust, want)
		}
		if want := "network namespace yes steps have no network"; netns != want {
			t.Errorf("got protection row %q, want %q", netns, want)
		}
	})

	t.Run("json", func(t *testing.T) {
		var out bytes.Buffer
		err := runDoctor(
			context.Background(),
			&doctorOptions{JSON: true, Out: &out, toolchains: fakeTools, protections: fakeProt},
		)
		if err != nil {
			t.Fatal(err)
		}
		var rep doctorReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("output %s is not JSON: %v", out.String(), err)
		}
		if len(rep.Toolchains) != 2 || rep.Toolchains[0].Path != "/usr/bin/python3" || rep.Toolchains[1].Found {
			t.Errorf("got toolchains %+v, want the two given", rep.Toolchains)
		}
		if len(rep.Protections) != 1 || !rep.Protections[0].Available {
			t.Errorf("got protections %+v, want the one given", rep.Protections)
		}
	})
}

// TestDoctorOnThisHost runs the real probes: python3 is installed here, so
// it must be found with a version.
func TestDoctorOnThisHost(t *testing.T) {
	var out bytes.Buffer
	c := newDoctorCmd(Streams{Out: &out, ErrOut: io.Discard})
	c.SetArgs([]string{"--json"})
	if err := c.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rep doctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output %s is not JSON: %v", out.String(), err)
	}
	found := false
	for _, tc := range rep.Toolchains {
		if tc.Program == "python3" {
			found = tc.Found && tc.Path != "" && tc.Version != ""
		}
	}
	if !found {
		t.Errorf("python3 not reported found with a path and version: %+v", rep.Toolchains)
	}
	if len(rep.Protections) == 0 {
		t.Error("got no protections")
	}
}
