//go:build fleet && linux

// The outage tests stop a real `serve` for 10 and 25 seconds in the middle
// of a run, so they take about a minute and a half: .ci/run runs them
// after the README's command, with -tags fleet.

package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// outageRows writes rows whose programs each take a tenth of a second and
// double their input (every third row wrong on its last case).
func outageRows(t *testing.T, path string, rows, casesPerRow int) {
	writeRows(t, path, "outage", rows, casesPerRow, func(i int) string {
		return fmt.Sprintf(
			"import time\ntime.sleep(0.1)\nn = int(input())\nprint(2 * n + (1 if n %% 100 == %d and %d %% 3 == 0 else 0))\n",
			casesPerRow-1,
			i,
		)
	})
}

// needPython skips (fails under CI=true) without /usr/bin/python3 for
// the embedded sandbox.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no /usr/bin/python3: CI installs it")
		}
		t.Skip("SKIPPED: no /usr/bin/python3 for the embedded sandbox")
	}
}

// startServe starts `verl-score serve` on addr with 2 slots and waits
// until /health says it is ready.
func startServe(t *testing.T, bin, addr string) *exec.Cmd {
	t.Helper()
	srv := exec.Command(bin, "serve", "--listen", addr, "--slots", "2")
	var errb bytes.Buffer
	srv.Stderr = &errb
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve on %s not ready after a minute: %v\n%s", addr, err, errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestFleetServeRestartCostsNoVerdict: `serve` killed with kill -9 in the
// middle of a run and started again 10 s later (and, with --max-concurrent
// auto, 25 s later): the run waits it out within --outage-grace (30 s by
// default), no response is -1, and the output and the cases are those of
// the run nobody interrupted (but for the attempts of the cases sent
// again).
func TestFleetServeRestartCostsNoVerdict(t *testing.T) {
	needPython(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	const rows, casesPerRow = 60, 2
	outageRows(t, in, rows, casesPerRow)
	args := func(out, url string, extra ...string) []string {
		return append(
			[]string{
				"run",
				in,
				"-o",
				out,
				"--cases-out",
				out + ".cases",
				"--summary",
				out + ".summary",
				"-q",
				"--sandbox-url",
				url,
			},
			extra...)
	}

	addr := freeAddr(t)
	srv := startServe(t, bin, addr)
	url := "http://" + addr + "/run_code"
	want := filepath.Join(dir, "want.jsonl")
	if out, err := exec.Command(bin, args(want, url, "--max-concurrent", "8")...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	wantOut, _ := os.ReadFile(want)
	wantCases, _ := withoutAttempts(t, casesWithoutTimes(t, want+".cases"))

	outer := t // the server outlives each subtest
	for _, tc := range []struct {
		name        string
		down        time.Duration
		concurrency string
	}{{"10s", 10 * time.Second, "8"}, {"25s-auto", 25 * time.Second, "auto"}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".jsonl")
			run := exec.Command(bin, args(out, url, "--max-concurrent", tc.concurrency)...)
			var runOut bytes.Buffer
			run.Stdout, run.Stderr = &runOut, &runOut
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			// A second into the run (a tenth of its requests answered),
			// the server dies with the rest in flight or waiting.
			time.Sleep(time.Second)
			srv.Process.Signal(syscall.SIGKILL)
			srv.Wait()
			stopped := time.Now()
			time.Sleep(tc.down)
			srv = startServe(outer, bin, addr)
			t.Logf("serve was down %.1f s", time.Since(stopped).Seconds())
			if err := run.Wait(); err != nil {
				t.Fatalf("run across the outage: %v\n%s", err, runOut.String())
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, wantOut) {
				t.Errorf("output differs from the uninterrupted run's:\n%s\nwant:\n%s", got, wantOut)
			}
			gotCases, retried := withoutAttempts(t, casesWithoutTimes(t, out+".cases"))
			if retried == 0 {
				t.Errorf("no case was sent more than once: the outage missed the run")
			}
			t.Logf("%d cases were sent again across the outage", retried)
			if gotCases != wantCases {
				os.WriteFile(out+".cases.norm", []byte(gotCases), 0o644)
				os.WriteFile(want+".cases.norm", []byte(wantCases), 0o644)
				d, _ := exec.Command("diff", want+".cases.norm", out+".cases.norm").CombinedOutput()
				t.Errorf("cases differ from the uninterrupted run's:\n%.3000s", d)
			}
			if infra := infraResponses(t, out+".summary"); infra != 0 {
				t.Errorf("%d responses had an infrastructure error (-1) across the outage", infra)
			}
		})
	}
}

// withoutAttempts takes the attempts out of normalised case lines (the
// cases sent again across an outage took more) and counts the cases that
// took more than one.
func withoutAttempts(t *testing.T, cases string) (string, int) {
	var out strings.Builder
	retried := 0
	for _, line := range strings.Split(strings.TrimSpace(cases), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if a, _ := m["attempts"].(float64); a > 1 {
			retried++
		}
		delete(m, "attempts")
		norm, _ := json.Marshal(m)
		out.Write(norm)
		out.WriteByte('\n')
	}
	return out.String(), retried
}

// infraResponses reads a summary's count of responses with an
// infrastructure error (verdict -1).
func infraResponses(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Overall *struct {
			Infra    int            `json:"responses_with_infra_error"`
			Verdicts map[string]int `json:"verdicts"`
		} `json:"overall"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Overall == nil || len(s.Overall.Verdicts) == 0 {
		t.Fatalf("%s: no overall figures (%v):\n%s", path, err, b)
	}
	return s.Overall.Infra
}

// TestFleetAllTimeoutsThroughTwoSlots is verl's all-timeout scenario
// (test_integration_concurrency_all_timeout: 100 programs that each time
// out, verl's client limit on each request of compile_timeout +
// run_timeout + 10 s), scaled to a 1 s timeout (a 12 s client limit),
// against a `serve` with 2 slots: with a static 64 in flight (verl's
// default max_concurrent) the requests at the back of serve's queue wait
// past the client's limit and are -1; with --max-concurrent auto the
// client keeps about the slots in flight and none is.
func TestFleetAllTimeoutsThroughTwoSlots(t *testing.T) {
	needPython(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	var b strings.Builder
	for i := range 100 {
		gt, _ := json.Marshal(
			map[string]any{"inputs": []string{"324 384429\n"}, "outputs": []string{fmt.Sprintf("output_%d\n", i)}},
		)
		line, _ := json.Marshal(map[string]any{
			"data_source":  "timeouts",
			"responses":    []string{fmt.Sprintf("```python\n# program %d\nwhile True:\n    pass\n```", i)},
			"reward_model": map[string]any{"style": "rule", "ground_truth": string(gt)},
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, bin, addr)
	url := "http://" + addr + "/run_code"
	for _, tc := range []struct {
		concurrency string
		wantInfra   bool
	}{{"64", true}, {"auto", false}} {
		out := filepath.Join(dir, tc.concurrency+".jsonl")
		cmd := exec.Command(bin, "run", in, "-o", out, "--summary", out+".summary", "-q", "--sandbox-url", url,
			"--timeout", "1", "--max-concurrent", tc.concurrency)
		if o, err := cmd.CombinedOutput(); err != nil && !tc.wantInfra {
			t.Fatalf("--max-concurrent %s: %v\n%s", tc.concurrency, err, o)
		}
		infra := infraResponses(t, out+".summary")
		t.Logf("--max-concurrent %s: %d of 100 responses -1", tc.concurrency, infra)
		if tc.wantInfra && infra == 0 {
			t.Errorf("--max-concurrent %s: no response -1; the scenario does not bite here", tc.concurrency)
		}
		if !tc.wantInfra && infra != 0 {
			t.Errorf("--max-concurrent %s: %d responses -1, want none", tc.concurrency, infra)
		}
	}
}
