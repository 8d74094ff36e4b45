//go:build linux

// Package imagetest builds the real images the tests of repository tasks
// run in: a small Debian root filesystem (python3, pytest, git, patch) made
// once per machine with debootstrap, and images of it with the tests' own
// files on top, as go-containerregistry images, OCI layouts and docker save
// archives. Tests only.
package imagetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/verl-score/verl-score/sandbox/image"
)

// Packages are what the base holds beside Debian's minimal base.
const Packages = "python3,python3-pytest,git,patch"

// recipe names the base: a change of it builds a new one.
const recipe = "bookworm-minbase-" + Packages + "-v1"

// CacheDir is where the base and the tests' image store live:
// $VERL_SCORE_TEST_CACHE, else /var/tmp/verl-score-test.
func CacheDir() string {
	if d := os.Getenv("VERL_SCORE_TEST_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/verl-score-test"
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED LOUDLY: " + msg)
}

// BaseRootfs is the base root filesystem's directory, built with
// debootstrap the first time (about a minute, from deb.debian.org) and kept.
func BaseRootfs(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "building the test image needs root (debootstrap)")
	}
	dir := filepath.Join(CacheDir(), recipe)
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/python3")); err == nil {
		return dir
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock := lockCache(t, recipe)
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/python3")); err == nil {
		return dir // another test process built it meanwhile
	}
	deb, err := exec.LookPath("debootstrap")
	if err != nil {
		skipOrFail(t, "debootstrap is not installed (apt-get install debootstrap): the SWE tests' image is built with it")
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	start := time.Now()
	out, err := exec.Command(deb, "--variant=minbase", "--include="+Packages, "bookworm", tmp,
		"http://deb.debian.org/debian").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(tmp)
		skipOrFail(t, "debootstrap failed (is deb.debian.org reachable?): "+err.Error()+"\n"+tail(out))
	}
	for _, d := range []string{"usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info",
		"var/cache/apt", "var/lib/apt/lists"} {
		_ = os.RemoveAll(filepath.Join(tmp, d))
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the test image's base with debootstrap in %v", time.Since(start).Round(time.Second))
	return dir
}

// lockCache takes the cache's lock of that name, across processes.
func lockCache(t testing.TB, name string) func() {
	t.Helper()
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(CacheDir(), name+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { lock.Close() }
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// DirLayer is a layer holding a directory's tree as it is on disk
// (owners, modes, links), its device nodes left out.
func DirLayer(t testing.TB, dir string) v1.Layer { return DirLayerAt(t, dir, "") }

// DirLayerAt is DirLayer with the tree under at ("testbed") in the image.
func DirLayerAt(t testing.TB, dir, at string) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(image.DirTar(pw, dir, at, fixedTime)) }()
		return pr, nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fixedTime is every file's time in a layer made here.
var fixedTime = time.Unix(1700000000, 0)

// FilesLayer is a layer of the given files (path → content; a path ending
// in "/" is a directory), owned by root, modes 0644 and 0755 (a name
// ending in ".sh" is executable).
func FilesLayer(t testing.TB, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, n := range names {
		parts := strings.Split(strings.TrimSuffix(n, "/"), "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
			}
		}
		if strings.HasSuffix(n, "/") {
			if !dirs[n] {
				dirs[n] = true
				_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755})
			}
			continue
		}
		mode := int64(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(files[n]))})
		_, _ = tw.Write([]byte(files[n]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Image is an image of layers with a configuration: Env, WorkingDir.
func Image(t testing.TB, env []string, workDir string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Env, cfg.Config.WorkingDir = env, workDir
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// WriteArchive writes img as a docker save archive tagged ref.
func WriteArchive(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
}
