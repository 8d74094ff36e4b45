//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
)

func needRootForImages(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the image store writes owners: it needs root")
		}
		t.Skip("SKIPPED LOUDLY: the image store writes owners: it needs root")
	}
}

// smallImage is an image of one layer of its own files and one it shares.
func smallImage(t *testing.T, own string, shared v1.Layer) v1.Image {
	return imagetest.Image(t, []string{"PATH=/usr/bin"}, "/testbed", shared,
		imagetest.FilesLayer(t, map[string]string{"testbed/" + own + ".txt": strings.Repeat(own, 50_000)}))
}

// TestImagesCommand: the operator's commands on a store: pull from a
// registry on loopback, import a docker save archive, ls (least recently
// used first, the image a process holds marked), and prune down to a
// bound, which evicts the least recently used images, spares the one a
// process holds, and removes the layers no image names any more.
func TestImagesCommand(t *testing.T) {
	needRootForImages(t)
	srv := httptest.NewServer(quietRegistry())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	base := imagetest.FilesLayer(t, map[string]string{"usr/bin/tool": strings.Repeat("base", 100_000)})
	refs := []string{host + "/swe/a:1", host + "/swe/b:1", host + "/swe/c:1"}
	for i, ref := range refs {
		pushImage(t, ref, smallImage(t, string(rune('a'+i)), base))
	}
	store := t.TempDir()
	code, out, stderr := run(context.Background(), "images", "pull", refs[0], refs[1], "--image-store", store)
	if code != ExitOK {
		t.Fatalf("images pull: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, refs[1]) || !strings.Contains(out, "2 layers (1 in the store already)") ||
		!strings.Contains(stderr, "pulling "+refs[0]) {
		t.Errorf("images pull says:\n%s\n%s", out, stderr)
	}
	archive := filepath.Join(t.TempDir(), "c.tar")
	imagetest.WriteArchive(t, archive, "example.org/swe/c:1", smallImage(t, "c", base))
	if code, out, stderr := run(context.Background(), "images", "import", archive, "--image-store", store); code != ExitOK ||
		!strings.Contains(out, "example.org/swe/c:1") {
		t.Fatalf("images import: exit %d\n%s\n%s", code, out, stderr)
	}
	// the imported image is found by its name, with no --images
	st, err := image.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Pulled("example.org/swe/c:1"); !ok {
		t.Error("the imported image is not found by its name")
	}

	list := func() *image.Usage {
		code, out, stderr := run(context.Background(), "images", "ls", "--json", "--image-store", store)
		if code != ExitOK {
			t.Fatalf("images ls: exit %d\n%s", code, stderr)
		}
		var u image.Usage
		if err := json.Unmarshal([]byte(out), &u); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return &u
	}
	u := list()
	if len(u.Images) != 3 || u.Blobs != 2*3+1+3 { // 3 manifests and configs, the shared layer once, 3 own
		t.Fatalf("ls: %d images, %d blobs; want 3 and 10\n%+v", len(u.Images), u.Blobs, u)
	}
	// a, b, c were unpacked in turn; use a now: b is the least recently used
	aID := u.Images[0].ID
	time.Sleep(20 * time.Millisecond)
	st.Touch(aID)
	if u = list(); u.Images[2].ID != aID {
		t.Errorf("the image just used is not listed last: %+v", u.Images)
	}
	// another process holds c
	cID := u.Images[1].ID
	holder := exec.Command("flock", "-s", filepath.Join(store, "locks", "use-"+cID+".lock"), "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Skipf("SKIPPED LOUDLY: no flock(1): %v", err)
	}
	defer holder.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for !list().Images[1].InUse && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, out, _ := run(context.Background(), "images", "ls", "--image-store", store); code != ExitOK ||
		!strings.Contains(out, "yes") || !strings.Contains(out, "3 images") {
		t.Errorf("ls does not show the image in use:\n%s", out)
	}
	// a bound below one image: b and a go, c stays (in use)
	code, out, stderr = run(context.Background(), "images", "prune", "--image-store-max-gb", "0.0000001",
		"--image-store", store)
	if code != ExitOK || !strings.Contains(out, "2 images evicted") || !strings.Contains(out, "1 in use kept") {
		t.Fatalf("images prune: exit %d\n%s\n%s", code, out, stderr)
	}
	u = list()
	if len(u.Images) != 1 || u.Images[0].ID != cID {
		t.Errorf("after the prune: %+v; want c alone", u.Images)
	}
	if u.Blobs != 4 { // c's manifest, configuration, its own layer and the shared one
		t.Errorf("after the prune: %d blobs; want c's 4", u.Blobs)
	}
	if _, ok := st.Pulled(refs[0]); ok {
		t.Error("an evicted image is still found by its name")
	}
	if _, ok := st.Pulled("example.org/swe/c:1"); !ok {
		t.Error("the image in use lost its name")
	}
	// prune with neither a bound nor --all is a usage error
	if code, _, stderr := run(context.Background(), "images", "prune", "--image-store", store); code != ExitUsage {
		t.Errorf("prune with no bound: exit %d\n%s", code, stderr)
	}
}

// TestImagesPullKilledResumes: `images pull` killed with SIGKILL midway
// through a layer keeps what it fetched; the next pull asks the registry
// for the rest alone (a Range request from there) and the image is whole.
func TestImagesPullKilledResumes(t *testing.T) {
	needRootForImages(t)
	inner := quietRegistry()
	var mu sync.Mutex
	var ranges []string
	var served int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			mu.Lock()
			ranges = append(ranges, r.Header.Get("Range"))
			mu.Unlock()
			w = slowWriter{w, &mu, &served}
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	rng := rand.New(rand.NewPCG(7, 7))
	noise := make([]byte, 6<<20)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	img := imagetest.Image(t, []string{"PATH=/usr/bin"}, "/", imagetest.FilesLayer(t, map[string]string{
		"data/big.bin": string(noise)}))
	ref := host + "/swe/big:1"
	pushImage(t, ref, img)
	mu.Lock()
	ranges, served = nil, 0
	mu.Unlock()
	store := t.TempDir()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "images", "pull", ref, "--image-store", store)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := served
		mu.Unlock()
		if n >= 2<<20 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the pull never got 2 MiB")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	partials, _ := filepath.Glob(filepath.Join(store, "blobs", "sha256", "*.partial"))
	if len(partials) != 1 {
		t.Fatalf("after the kill: %v; want one partial layer", partials)
	}
	st, _ := os.Stat(partials[0])
	code, out, stderr := run(context.Background(), "images", "pull", ref, "--image-store", store)
	if code != ExitOK {
		t.Fatalf("the second pull: exit %d\n%s\n%s", code, out, stderr)
	}
	mu.Lock()
	last := ranges[len(ranges)-1]
	mu.Unlock()
	if !strings.HasPrefix(last, fmt.Sprintf("bytes=%d-", st.Size())) {
		t.Errorf("the second pull asked for %q; want the rest from %d", last, st.Size())
	}
	s, err := image.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.Pulled(ref)
	if !ok {
		t.Fatal("the image is not recorded after the second pull")
	}
	pi, err := p.Image()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := image.ID(pi)
	u, ok := s.Get(id)
	if !ok {
		t.Fatal("the image is not unpacked")
	}
	got, err := os.ReadFile(filepath.Join(u.Root, "data/big.bin"))
	if err != nil || !bytes.Equal(got, noise) {
		t.Errorf("the unpacked file differs (%v)", err)
	}
}

// slowWriter serves about 4 MiB/s, counting what it wrote.
type slowWriter struct {
	http.ResponseWriter
	mu     *sync.Mutex
	served *int64
}

func (w slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 64<<10)
		m, err := w.ResponseWriter.Write(p[:k])
		n += m
		w.mu.Lock()
		*w.served += int64(m)
		w.mu.Unlock()
		if err != nil {
			return n, err
		}
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(15 * time.Millisecond)
		p = p[k:]
	}
	return n, nil
}
