//go:build linux

package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/verl-score/verl-score/sandbox/image/imagetest"
)

// throttled serves blobs at about bytesPerSec, as a registry over a real
// network would.
type throttled struct {
	http.ResponseWriter
	rate float64
}

func (w throttled) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 256<<10)
		m, err := w.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		time.Sleep(time.Duration(float64(k) / w.rate * float64(time.Second)))
		p = p[k:]
	}
	return n, nil
}

// BenchmarkSWEPrefetch runs K images' rollouts from a registry on loopback
// (served at 100 MB/s), each image's rollouts taking longer than its pull
// and unpack, without and with prefetching, in one run each on a fresh
// store: the share of the sandbox's slot time spent waiting for images,
// and that share less the first image's wait (which no prefetch spares;
// target ≤ 10 %).
func BenchmarkSWEPrefetch(b *testing.B) {
	const k, perImage = 3, 4
	calc := calcImage(b, imagetest.CalcImages(b))
	inner := quietRegistry()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			w = throttled{w, 100 << 20}
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	// the fix, with a test that takes 2 s more: tests slower than pulls
	slow := strings.Replace(imagetest.CalcGoldPatch, "+    return a + b",
		"+    import time\n+    time.sleep(2)\n+    return a + b", 1)
	slow = strings.Replace(slow, "@@ -1,6 +1,6 @@", "@@ -1,6 +1,8 @@", 1)
	dir := b.TempDir()
	var rows strings.Builder
	for i := range k {
		img, err := mutate.AppendLayers(calc, imagetest.FilesLayer(b, map[string]string{
			"opt/image.txt": fmt.Sprintf("image %d\n", i)}))
		if err != nil {
			b.Fatal(err)
		}
		ref := fmt.Sprintf("%s/bench/calc-%d:1", host, i)
		pushImage(b, ref, img)
		for range perImage {
			rows.WriteString(calcRow(b, "bench", ref, slow))
		}
	}
	in := writeFile(b, dir, "rows.jsonl", rows.String())
	waitRe := regexp.MustCompile(`slots were idle ([\d.]+) slot-s waiting for images \(found, pulled, unpacked; ` +
		`the first ready after ([\d.]+) s\) in a ([\d.]+) s run`)
	share := map[string][2]float64{}
	for range b.N {
		for _, prefetch := range []string{"0", "2"} {
			out := filepath.Join(b.TempDir(), "out.jsonl")
			code, stdout, stderr := run(context.Background(), "run", in, "-o", out, "--image-store",
				filepath.Join(b.TempDir(), "store"), "--prefetch-images", prefetch, "--local-concurrency", "2")
			if code != ExitOK {
				b.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, r := range readJSONL(b, out) {
				if got, _ := json.Marshal(r["reward"]); string(got) != "[1]" {
					b.Fatalf("reward %s (%v)", got, r["reward_error"])
				}
			}
			m := waitRe.FindStringSubmatch(stderr)
			if m == nil {
				b.Fatalf("no wait line:\n%s", stderr)
			}
			idle, first, wall := atof(m[1]), atof(m[2]), atof(m[3])
			const slots = 2
			share[prefetch] = [2]float64{idle / (slots * wall), max(0, idle-slots*first) / (slots * wall)}
			b.Logf("prefetch %s: slots idle %.1f slot-s waiting for images (the first ready after %.1f s) in %.1f s",
				prefetch, idle, first, wall)
		}
	}
	b.ReportMetric(100*share["0"][0], "idle-%-none")
	b.ReportMetric(100*share["0"][1], "idle-%-after-first-none")
	b.ReportMetric(100*share["2"][0], "idle-%-prefetch")
	b.ReportMetric(100*share["2"][1], "idle-%-after-first-prefetch")
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
