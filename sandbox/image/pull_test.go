//go:build linux

package image

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is go-containerregistry's registry on loopback, with hooks
// that misbehave on the blobs a test names: cut a download after some
// bytes (and hang there until the client goes), or flip its bytes.
type testRegistry struct {
	srv  *httptest.Server
	host string
	mu   sync.Mutex
	// cut: serve this many bytes of the blob, then stop, for the next
	// cuts[digest] requests; hang: stop by waiting for the client to go
	cut     map[string]int64
	cuts    map[string]int
	hang    bool
	corrupt map[string]int // the next n requests for the blob get flipped bytes
	// ranges are the Range headers of blob requests, by digest
	ranges map[string][]string
	// user and password, when set, are required (basic authentication)
	user, password string
}

func newTestRegistry(t *testing.T) *testRegistry {
	r := &testRegistry{cut: map[string]int64{}, cuts: map[string]int{}, corrupt: map[string]int{},
		ranges: map[string][]string{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		user, password := r.user, r.password
		r.mu.Unlock()
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		i := strings.Index(req.URL.Path, "/blobs/sha256:")
		if req.Method != http.MethodGet || i < 0 {
			inner.ServeHTTP(w, req)
			return
		}
		digest := req.URL.Path[i+len("/blobs/"):]
		r.mu.Lock()
		r.ranges[digest] = append(r.ranges[digest], req.Header.Get("Range"))
		cutAt, cut := r.cut[digest]
		if cut && r.cuts[digest] > 0 {
			r.cuts[digest]--
		} else {
			cut = false
		}
		flip := r.corrupt[digest] > 0
		if flip {
			r.corrupt[digest]--
		}
		hang := r.hang
		r.mu.Unlock()
		if !cut && !flip {
			inner.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if flip {
			body = bytes.Clone(body)
			for j := range body {
				body[j] ^= 0x5a
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
			return
		}
		w.WriteHeader(rec.Code)
		w.Write(body[:min(int64(len(body)), cutAt)])
		w.(http.Flusher).Flush()
		if hang {
			<-req.Context().Done()
		}
		panic(http.ErrAbortHandler) // the connection is cut
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// push writes img to the registry as repo:tag and returns the reference.
func (r *testRegistry) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	ref := r.host + "/" + repoTag
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	user, password := r.user, r.password
	r.mu.Unlock()
	auth := authn.Anonymous
	if user != "" {
		auth = &authn.Basic{Username: user, Password: password}
	}
	if err := remote.Write(tag, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
	return ref
}

// noiseLayer is a layer holding one file of n incompressible bytes.
func noiseLayer(t *testing.T, path string, n int, seed uint64) v1.Layer {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return layer(t, dir(filepath.Dir(path)+"/"), file(path, string(b)))
}

func layerSizes(t *testing.T, img v1.Image) (sizes []int64, total int64) {
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
		total += n
	}
	return sizes, total
}

// TestPullSharesLayers: a second image on the first's base fetches only
// its own layer; the pulled image unpacks like any other; a reference
// pulled before is found with no registry at all.
func TestPullSharesLayers(t *testing.T) {
	needRoot(t)
	reg := newTestRegistry(t)
	base := testImage(t)
	extra := noiseLayer(t, "opt/extra.bin", 256<<10, 1)
	top, err := mutate.AppendLayers(base, extra)
	if err != nil {
		t.Fatal(err)
	}
	refA, refB := reg.push(t, "swe/base:1", base), reg.push(t, "swe/task:1", top)
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Pull(context.Background(), refA, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, baseBytes := layerSizes(t, base)
	if a.Layers != 2 || a.Shared != 0 || a.Bytes != baseBytes || a.Fetched != baseBytes {
		t.Errorf("the first image: %+v; want 2 layers, none shared, %d bytes fetched", a, baseBytes)
	}
	var progress int64
	b, err := s.Pull(context.Background(), refB, PullOptions{Progress: func(n int64) { progress += n }})
	if err != nil {
		t.Fatal(err)
	}
	extraBytes, _ := extra.Size()
	if b.Layers != 3 || b.Shared != 2 || b.Fetched != extraBytes || progress != extraBytes {
		t.Errorf("the second image: %+v (progress %d); want 3 layers, 2 shared, only its own %d bytes fetched", b,
			progress, extraBytes)
	}
	t.Logf("the second image fetched %d of its %d bytes (%.1f%%): its base was in the store", b.Fetched, b.Bytes,
		100*float64(b.Fetched)/float64(b.Bytes))
	if want, _ := top.Digest(); b.Digest != want {
		t.Errorf("digest %s, want the pushed %s", b.Digest, want)
	}
	img, err := b.Image()
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Unpack(img, []string{b.Ref}, "registry", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(u.Root, "opt/extra.bin")); err != nil || st.Size() != 256<<10 {
		t.Errorf("the pulled image's own file: %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(u.Root, "testbed/gone.txt")); !os.IsNotExist(err) {
		t.Errorf("the base's whiteout is not applied: %v", err)
	}
	reg.srv.Close()
	p, ok := s.Pulled(refB)
	if !ok || p.Digest != b.Digest {
		t.Fatalf("the pulled reference is not found with the registry gone: %v %v", p, ok)
	}
	if _, err := p.Image(); err != nil {
		t.Errorf("the stored pull does not read: %v", err)
	}
	if _, ok := s.Pulled(reg.host + "/swe/other:1"); ok {
		t.Error("a reference never pulled is found")
	}
}

// TestPullResumes: a download cut midway is resumed from where it stopped
// (a Range request), in the same pull and in the next one after the first
// was stopped, and the blob is whole.
func TestPullResumes(t *testing.T) {
	needRoot(t)
	reg := newTestRegistry(t)
	big := noiseLayer(t, "data/big.bin", 4<<20, 2)
	img, err := mutate.AppendLayers(empty.Image, big)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "swe/big:1", img)
	d, _ := big.Digest()
	size, _ := big.Size()

	// cut once: the same pull resumes
	reg.mu.Lock()
	reg.cut[d.String()], reg.cuts[d.String()] = 1<<20, 1
	reg.mu.Unlock()
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	ranges := append([]string{}, reg.ranges[d.String()]...)
	reg.mu.Unlock()
	if len(ranges) != 2 || ranges[0] != "" || ranges[1] != fmt.Sprintf("bytes=1048576-%d", size-1) {
		t.Errorf("the blob's requests had ranges %q; want the whole, then from 1 MiB", ranges)
	}
	if p.Fetched != size {
		t.Errorf("fetched %d, want the blob's %d once", p.Fetched, size)
	}
	verifyBlob(t, s, d)

	// stopped midway: the next pull resumes from the partial file
	s2, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	reg.cut[d.String()], reg.cuts[d.String()], reg.hang = 3<<20, 1, true
	reg.ranges = map[string][]string{}
	reg.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var got int64
	var once sync.Once
	_, err = s2.Pull(ctx, ref, PullOptions{Progress: func(n int64) {
		if got += n; got >= 3<<20 {
			once.Do(cancel) // as a run stopped by ^C
		}
	}})
	if err == nil {
		t.Fatal("a pull stopped midway did not fail")
	}
	if st, err := os.Stat(s2.blobPath(d) + ".partial"); err != nil || st.Size() != 3<<20 {
		t.Fatalf("the stopped pull kept %v (%v); want its 3 MiB", st, err)
	}
	if _, ok := s2.Pulled(ref); ok {
		t.Error("a stopped pull is recorded as pulled")
	}
	p, err = s2.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Fetched != size-3<<20 {
		t.Errorf("the resumed pull fetched %d, want the last %d", p.Fetched, size-3<<20)
	}
	reg.mu.Lock()
	ranges = reg.ranges[d.String()]
	reg.mu.Unlock()
	if last := ranges[len(ranges)-1]; last != fmt.Sprintf("bytes=3145728-%d", size-1) {
		t.Errorf("the resumed pull asked for %q, want bytes=3145728-%d", last, size-1)
	}
	verifyBlob(t, s2, d)
}

func verifyBlob(t *testing.T, s *Store, d v1.Hash) {
	t.Helper()
	f, err := os.Open(s.blobPath(d))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, _, err := v1.SHA256(f)
	if err != nil || h != d {
		t.Errorf("the stored blob has digest %v (%v), want %s", h, err, d)
	}
}

// TestPullRefusesCorrupt: a blob whose bytes do not match its digest is
// thrown away and fetched again; one the registry keeps serving wrong is
// refused, and nothing of it is kept or recorded.
func TestPullRefusesCorrupt(t *testing.T) {
	needRoot(t)
	reg := newTestRegistry(t)
	l := noiseLayer(t, "data/x.bin", 64<<10, 3)
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "swe/x:1", img)
	d, _ := l.Digest()
	size, _ := l.Size()
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	reg.corrupt[d.String()] = 100
	reg.mu.Unlock()
	_, err = s.Pull(context.Background(), ref, PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "do not match the digest") ||
		!strings.Contains(err.Error(), d.String()) {
		t.Fatalf("a corrupt layer: %v; want a refusal naming it", err)
	}
	for _, p := range []string{s.blobPath(d), s.blobPath(d) + ".partial"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is kept: %v", p, err)
		}
	}
	if _, ok := s.Pulled(ref); ok {
		t.Error("a refused image is recorded as pulled")
	}
	reg.mu.Lock()
	reg.corrupt[d.String()] = 1
	reg.mu.Unlock()
	p, err := s.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatalf("corrupt once, then whole: %v", err)
	}
	if p.Fetched != 2*size {
		t.Errorf("fetched %d; want the blob twice (%d)", p.Fetched, 2*size)
	}
	verifyBlob(t, s, d)
}

// TestPullPlatformAndAuth: an index is resolved to this machine's image;
// a registry that wants credentials gets them from PullOptions.Auth, and
// without them the error says so.
func TestPullPlatformAndAuth(t *testing.T) {
	needRoot(t)
	reg := newTestRegistry(t)
	mine := testImage(t)
	other, err := mutate.AppendLayers(empty.Image, noiseLayer(t, "data/other", 1024, 4))
	if err != nil {
		t.Fatal(err)
	}
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "amd64"
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux",
			Architecture: otherArch}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux",
			Architecture: runtime.GOARCH}}})
	reg.user, reg.password = "trainer", "s3cret"
	ref := reg.host + "/swe/multi:1"
	tag, _ := name.NewTag(ref)
	if err := remote.WriteIndex(tag, idx, remote.WithAuth(&authn.Basic{Username: "trainer",
		Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	empty := authn.NewMultiKeychain() // no Docker configuration of the machine's
	if _, err := s.Pull(context.Background(), ref, PullOptions{Keychain: empty}); err == nil ||
		!strings.Contains(err.Error(), "UNAUTHORIZED") && !strings.Contains(err.Error(), "401") {
		t.Errorf("no credentials: %v; want an unauthorized error", err)
	}
	p, err := s.Pull(context.Background(), ref, PullOptions{Keychain: empty, Auth: map[string]authn.Authenticator{
		reg.host: &authn.Basic{Username: "trainer", Password: "s3cret"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := mine.Digest(); p.Digest != want {
		t.Errorf("pulled %s; want linux/%s's %s", p.Digest, runtime.GOARCH, want)
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, "pull.json"))
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b),
		base64.StdEncoding.EncodeToString([]byte("trainer:s3cret"))) {
		t.Errorf("the store records the credentials: %s", b)
	}
}

// TestPullFromDistribution: the same pull against the real distribution
// server (Debian's docker-registry), behind a proxy that cuts the first
// download of the big layer: the pull resumes with a Range request that
// the real server answers, and the blob is whole.
func TestPullFromDistribution(t *testing.T) {
	needRoot(t)
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker-registry (Debian's distribution server) is not installed; .ci/run installs it")
		}
		t.Skip("SKIPPED LOUDLY: no docker-registry (apt-get install docker-registry)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(conf, []byte("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: "+
		filepath.Join(dir, "data")+"\nhttp:\n  addr: "+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	big := noiseLayer(t, "data/big.bin", 3<<20, 5)
	img, err := mutate.AppendLayers(testImage(t), big)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(addr + "/swe/real:1")
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	// the proxy cuts the first download of the big layer after 1 MiB
	d, _ := big.Digest()
	target, _ := url.Parse("http://" + addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var ranges []string
	cut := true
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) || r.Method != http.MethodGet {
			proxy.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		first := cut
		cut = false
		mu.Unlock()
		if !first {
			proxy.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:1<<20])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer front.Close()
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(front.URL, "http://") + "/swe/real:1"
	p, err := s.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size, _ := big.Size()
	mu.Lock()
	got := append([]string{}, ranges...)
	mu.Unlock()
	if len(got) != 2 || got[1] != fmt.Sprintf("bytes=1048576-%d", size-1) {
		t.Errorf("the big layer's requests had ranges %q; want the whole, then from 1 MiB", got)
	}
	if want, _ := img.Digest(); p.Digest != want {
		t.Errorf("pulled %s, pushed %s", p.Digest, want)
	}
	verifyBlob(t, s, d)
	pi, err := p.Image()
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Unpack(pi, []string{p.Ref}, "registry", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(u.Root, "data/big.bin")); err != nil || st.Size() != 3<<20 {
		t.Errorf("the big file unpacked: %v %v", st, err)
	}
}
