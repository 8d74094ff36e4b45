//go:build linux

package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
)

// startNode starts a serve process on loopback with a store of its own
// (a node of a fleet) and returns its /run_code URL.
func startNode(t *testing.T, bin string, args ...string) string {
	u, _ := startNodeLogged(t, bin, args...)
	return u
}

// startNodeLogged is startNode, and what serve has logged so far.
func startNodeLogged(t *testing.T, bin string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--slots", "2"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := regexp.MustCompile(`listening on (http://[^ ]+/run_code):`).FindStringSubmatch(lines.Text()); m != nil {
			var mu sync.Mutex
			var logged strings.Builder
			go func() {
				for lines.Scan() {
					mu.Lock()
					logged.WriteString(lines.Text() + "\n")
					mu.Unlock()
				}
			}()
			return m[1], func() string { mu.Lock(); defer mu.Unlock(); return logged.String() }
		}
	}
	t.Fatal("serve never said where it listens")
	return "", nil
}

// TestSWEFleet: run --sandbox-url over three serve processes on loopback,
// each with a store of its own, on rows of three images in a registry:
// the rewards and case results are those of the embedded run, every
// image's rollouts go to one endpoint, which pulled it itself, so the
// fleet pulls each image once (not once per endpoint), and the summary
// says so.
func TestSWEFleet(t *testing.T) {
	_, images := sweDataset(t, nil, nil)
	calc := calcImage(t, images)
	srv := httptest.NewServer(quietRegistry())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	wrong := strings.Replace(imagetest.CalcGoldPatch, "+    return a + b", "+    return a * b", 1)
	var rows strings.Builder
	for i := range 3 {
		img, err := mutate.AppendLayers(calc, imagetest.FilesLayer(t, map[string]string{
			"opt/node.txt": fmt.Sprintf("image %d\n", i)}))
		if err != nil {
			t.Fatal(err)
		}
		ref := fmt.Sprintf("%s/fleet/calc-%d:1", host, i)
		pushImage(t, ref, img)
		for _, resp := range [][]string{{imagetest.CalcGoldPatch, wrong}, {"no patch here", imagetest.CalcGoldPatch}} {
			rows.WriteString(calcRow(t, "swe-fleet", ref, resp...))
		}
	}
	dir := t.TempDir()
	in := writeFile(t, dir, "rows.jsonl", rows.String())
	bin := buildBinary(t)
	var urls []string
	for i := range 3 {
		urls = append(urls, startNode(t, bin, "--image-store", filepath.Join(dir, fmt.Sprintf("node%d", i))))
	}
	fleetOut, sum := filepath.Join(dir, "fleet.jsonl"), filepath.Join(dir, "sum.json")
	args := []string{"run", in, "-o", fleetOut, "--summary", sum}
	for _, u := range urls {
		args = append(args, "--sandbox-url", u)
	}
	code, stdout, stderr := run(context.Background(), args...)
	if code != ExitOK {
		t.Fatalf("run over the fleet: exit %d\n%s\n%s", code, stdout, stderr)
	}
	localOut := filepath.Join(dir, "local.jsonl")
	if code, stdout, stderr := run(context.Background(), "run", in, "-o", localOut, "--image-store",
		filepath.Join(dir, "local-store"), "-q"); code != ExitOK {
		t.Fatalf("embedded run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	fleet, local := readJSONL(t, fleetOut), readJSONL(t, localOut)
	for i := range local {
		for _, k := range []string{"reward", "case_results", "case_status"} {
			a, _ := json.Marshal(fleet[i][k])
			b, _ := json.Marshal(local[i][k])
			if string(a) != string(b) {
				t.Errorf("row %d: %s over the fleet %s, embedded %s", i, k, a, b)
			}
		}
	}
	b, _ := json.Marshal(local[0]["reward"])
	if string(b) != "[1,0]" {
		t.Errorf("the embedded run scored row 0 %s, want [1,0]", b)
	}
	var s results.Summary
	raw, _ := os.ReadFile(sum)
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	var rollouts, routed, pulls int64
	for _, ep := range s.Endpoints {
		rollouts, routed, pulls = rollouts+ep.SWERollouts, routed+ep.SWEImages, pulls+ep.SWEPulls
		if ep.SWEImages != ep.SWEPulls {
			t.Errorf("endpoint %s: %d images routed to it, %d pulled: each node pulls what it is sent", ep.URL,
				ep.SWEImages, ep.SWEPulls)
		}
	}
	// 6 rows of 2 responses, one without a patch (scored without a rollout)
	if rollouts != 9 || routed != 3 || pulls != 3 {
		t.Errorf("the fleet ran %d rollouts of %d images with %d pulls; want 9, 3 and 3 (once per image)\n%s",
			rollouts, routed, pulls, stdout+stderr)
	}
	// each node's /health tells its store: the three images, one each
	healthRe := regexp.MustCompile(`"swe":\{"images":(\d+),"store_mb":\d+\}`)
	held := 0
	for _, u := range urls {
		resp, err := http.Get(strings.TrimSuffix(u, "/run_code") + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := healthRe.FindStringSubmatch(string(body))
		if m == nil {
			t.Errorf("%s/health does not tell its store: %s", u, body)
			continue
		}
		held += int(atof(m[1]))
	}
	if held != 3 {
		t.Errorf("the nodes' stores hold %d images; want the 3, once each", held)
	}
	if !strings.Contains(stdout+stderr, "repository tasks over 3 endpoints: 3 images routed, 3 pulls") {
		t.Errorf("the summary does not tell the affinity:\n%s\n%s", stdout, stderr)
	}
}
