package cmd

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// One SIGTERM, as Kubernetes, docker and systemd send before SIGKILL: the
// request in flight is answered, /health says not ready meanwhile, new
// requests are turned away, and the process exits 0.
func TestServeStopsOnOneSIGTERM(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--isolation", "none", "--slots", "2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var base string
	var startLine string
	for lines.Scan() {
		if m := regexp.MustCompile(`listening on (http://[^/]+)/run_code: (.*)`).FindStringSubmatch(lines.Text()); m != nil {
			base, startLine = m[1], m[2]
			break
		}
	}
	if base == "" {
		t.Fatal("serve never said where it listens")
	}
	// The start line says what the server offers.
	for _, want := range []string{"languages (", "python", "2 slots", "queue ", "isolation none"} {
		if !strings.Contains(startLine, want) {
			t.Errorf("start line %q lacks %q", startLine, want)
		}
	}
	// A body far over --max-body gets 413, not a reset connection.
	big, err := http.Post(
		base+"/run_code",
		"application/json",
		strings.NewReader(`{"code": "`+strings.Repeat("x", 100<<20)+`", "language": "python"}`),
	)
	if err != nil {
		t.Errorf("a 100 MB body: %v, want a 413", err)
	} else {
		big.Body.Close()
		if big.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a 100 MB body: HTTP %d, want 413", big.StatusCode)
		}
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); rest <- string(b) }()

	answered := make(chan string, 1)
	go func() {
		body := `{"code": "import time\ntime.sleep(2)\nprint('done')", "language": "python", "run_timeout": 20}`
		resp, err := http.Post(base+"/run_code", "application/json", strings.NewReader(body))
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(b)
	}()
	time.Sleep(700 * time.Millisecond) // the request is running
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatalf("/health while draining: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "draining") {
		t.Errorf("/health while draining: %d %s, want 503 draining", resp.StatusCode, b)
	}
	resp, err = http.Post(
		base+"/run_code",
		"application/json",
		strings.NewReader(`{"code": "print(1)", "language": "python"}`),
	)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf(
				"a new request while draining: %d (Retry-After %q), want 503 with Retry-After",
				resp.StatusCode,
				resp.Header.Get("Retry-After"),
			)
		}
	}
	select {
	case got := <-answered:
		if !strings.Contains(got, `"stdout":"done\n"`) {
			t.Errorf("the request in flight got %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request in flight was not answered")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Errorf("serve exited %d after one SIGTERM, want 0\n%s", ee.ExitCode(), <-rest)
		} else if err != nil {
			t.Error(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after one SIGTERM")
	}
}
