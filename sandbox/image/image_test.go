//go:build linux

package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type entry struct {
	name, body, link string
	typ              byte
	mode             int64
	uid              int
}

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.uid, Linkname: e.link,
			ModTime: time.Unix(1700000000, 0)}
		if h.Mode == 0 {
			h.Mode = 0o644
			if e.typ == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
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

func dir(n string) entry        { return entry{name: n, typ: tar.TypeDir} }
func file(n, body string) entry { return entry{name: n, body: body, typ: tar.TypeReg} }
func fileAs(n, body string, uid int) entry {
	return entry{name: n, body: body, typ: tar.TypeReg, uid: uid}
}

// testImage is a two-layer image: a base, then a layer that deletes a file
// (a whiteout), empties a directory (an opaque one) and adds its own.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	base := layer(t, dir("usr/"), dir("usr/bin/"), file("usr/bin/tool", "#!/bin/sh\necho tool\n"),
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"}, dir("testbed/"),
		fileAs("testbed/calc.py", "def add(a, b):\n    return a - b\n", 1000), file("testbed/gone.txt", "x"),
		dir("testbed/cache/"), file("testbed/cache/old", "old"),
		entry{name: "usr/bin/tool2", typ: tar.TypeLink, link: "usr/bin/tool"},
		entry{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		entry{name: "usr/bin/su", body: "x", typ: tar.TypeReg, mode: 0o4755})
	top := layer(t, dir("testbed/"), file("testbed/.wh.gone.txt", ""), dir("testbed/cache/"),
		file("testbed/cache/.wh..wh..opq", ""), file("testbed/cache/new", "new"), file("etc/added", "1"))
	img, err := mutate.AppendLayers(empty.Image, base, top)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := img.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.Config.Env = []string{"PATH=/usr/bin", "FOO=bar"}
	cfg.Config.WorkingDir = "/testbed"
	cfg.OS, cfg.Architecture = "linux", "amd64"
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the image store writes owners: it needs root")
		}
		t.Skip("SKIPPED LOUDLY: the image store writes owners: it needs root")
	}
}

// writeImages writes img as an OCI layout (annotated with a full reference,
// a containerd name and, in a second layout, a bare tag) and a docker save
// archive, all in one --images directory.
func writeImages(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		annotationRefName: "registry.example/team/fixture:v1", annotationContainerd: "docker.io/library/fixture:c1"})); err != nil {
		t.Fatal(err)
	}
	p2, err := layout.Write(filepath.Join(dir, "tagged"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.AppendImage(img, layout.WithAnnotations(map[string]string{annotationRefName: "t7"})); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("swebench/sweb.eval.x86_64.fixture_1776_calc-1:latest")
	if err := tarball.WriteToFile(filepath.Join(dir, "calc.tar"), tag, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.tar"), []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCatalogFindsByEveryName(t *testing.T) {
	img := testImage(t)
	dir := writeImages(t, img)
	c, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ID(img)
	for _, ref := range []string{"registry.example/team/fixture:v1", "fixture:c1", "docker.io/fixture:c1",
		"index.docker.io/library/fixture:c1", "swebench/sweb.eval.x86_64.fixture_1776_calc-1:latest",
		"swebench/sweb.eval.x86_64.fixture_1776_calc-1", "someone/tagged:t7"} {
		e, err := c.Find(ref)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		im, err := e.Open()
		if err != nil {
			t.Errorf("%s: open: %v", ref, err)
			continue
		}
		if id, _ := ID(im); id != want {
			t.Errorf("%s: image %s, want %s", ref, id, want)
		}
	}
	_, err = c.Find("registry.example/team/fixture:v2")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "registry.example/team/fixture:v1") ||
		!strings.Contains(err.Error(), "broken.tar") {
		t.Errorf("not found: %v", err)
	}
}

func TestUnpackAppliesLayersAndShiftsOwners(t *testing.T) {
	needRoot(t)
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Unpack(testImage(t), []string{"x"}, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(u.Root, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if got := read("testbed/calc.py"); !strings.Contains(got, "return a - b") {
		t.Errorf("calc.py: %q", got)
	}
	for _, gone := range []string{"testbed/gone.txt", "testbed/cache/old", "testbed/.wh.gone.txt", "dev/null"} {
		if _, err := os.Lstat(filepath.Join(u.Root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is there (%v)", gone, err)
		}
	}
	if read("testbed/cache/new") != "new" || read("etc/added") != "1" || read("bin/tool") != "#!/bin/sh\necho tool\n" {
		t.Errorf("files of the top layer or through the link missing")
	}
	owner := func(p string) (int, os.FileMode) {
		fi, err := os.Lstat(filepath.Join(u.Root, p))
		if err != nil {
			t.Fatal(err)
		}
		return int(fi.Sys().(*syscall.Stat_t).Uid), fi.Mode()
	}
	if uid, _ := owner("testbed/calc.py"); uid != IDBase+1000 {
		t.Errorf("calc.py owned by %d, want %d", uid, IDBase+1000)
	}
	if uid, _ := owner("usr/bin/tool"); uid != IDBase {
		t.Errorf("tool owned by %d", uid)
	}
	if _, mode := owner("usr/bin/su"); mode&os.ModeSetuid == 0 {
		t.Errorf("su lost its set-uid bit: %v", mode)
	}
	a, _ := os.Stat(filepath.Join(u.Root, "usr/bin/tool"))
	b, _ := os.Stat(filepath.Join(u.Root, "usr/bin/tool2"))
	if !os.SameFile(a, b) {
		t.Error("the hard link is a copy")
	}
	if u.Config.WorkingDir != "/testbed" || len(u.Config.Env) != 2 || u.Meta.Files == 0 || len(u.Meta.Skipped) != 1 {
		t.Errorf("config %+v meta %+v", u.Config, u.Meta)
	}
}

// The same image from a layout and from an archive, asked for at once by
// several callers, is unpacked once.
func TestUnpackOnce(t *testing.T) {
	needRoot(t)
	img := testImage(t)
	c, err := OpenCatalog(writeImages(t, img))
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]*Unpacked, 8)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ref := []string{"fixture:c1", "swebench/sweb.eval.x86_64.fixture_1776_calc-1"}[i%2]
			e, err := c.Find(ref)
			if err != nil {
				t.Error(err)
				return
			}
			im, err := e.Open()
			if err != nil {
				t.Error(err)
				return
			}
			if got[i], err = s.Unpack(im, e.Names, e.Where, nil); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	for _, u := range got[1:] {
		if u == nil || got[0] == nil || u.Root != got[0].Root || !u.Meta.Unpacked.Equal(got[0].Meta.Unpacked) {
			t.Fatalf("unpacked more than once: %+v vs %+v", u, got[0])
		}
	}
	items, _ := os.ReadDir(filepath.Join(s.Dir(), "images"))
	if len(items) != 1 {
		t.Errorf("%d images in the store", len(items))
	}
}

// rawTar is a tar stream of entries as given, not through a layer.
func rawTar(t *testing.T, entries ...entry) io.Reader {
	l := layer(t, entries...)
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// Paths that climb out, pass through a symbolic link or hard-link outside
// fail the unpack, whether go-containerregistry's Extract or our writer
// catches them, and a failed unpack leaves nothing in the store.
func TestUnpackRefusesEscapes(t *testing.T) {
	needRoot(t)
	outside := t.TempDir()
	for name, tr := range map[string]io.Reader{
		"climbs":        rawTar(t, file("../../escaped", "x")),
		"through links": rawTar(t, entry{name: "out", typ: tar.TypeSymlink, link: outside}, file("out/escaped", "x")),
		"hard link out": rawTar(t, entry{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}),
		"links deep":    rawTar(t, dir("a/"), entry{name: "a/b", typ: tar.TypeSymlink, link: outside}, dir("a/b/c/")),
	} {
		if _, err := extract(tr, t.TempDir(), nil); err == nil {
			t.Errorf("%s: written", name)
		}
		if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
			t.Fatalf("%s: wrote outside the root", name)
		}
	}
	img, err := mutate.AppendLayers(empty.Image, layer(t, file("ok", "1"), file("../../escaped", "x")))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := OpenStore(t.TempDir())
	if _, err := s.Unpack(img, nil, "", nil); err == nil || !strings.Contains(err.Error(), "unsafe") {
		t.Errorf("unpacked an image that climbs out: %v", err)
	}
	for _, sub := range []string{"images", "tmp"} {
		if items, _ := os.ReadDir(filepath.Join(s.Dir(), sub)); len(items) != 0 {
			t.Errorf("a failed unpack left %v in %s", items, sub)
		}
	}
}

// TestKilledUnpackLeavesNoHalfImage kills a process (this test binary)
// part way through unpacking a large image with SIGKILL: the store then
// holds no image, and the next to open it removes the partial directory.
func TestKilledUnpackLeavesNoHalfImage(t *testing.T) {
	needRoot(t)
	if dir := os.Getenv("VERL_SCORE_TEST_UNPACK_INTO"); dir != "" {
		s, err := OpenStore(dir)
		if err != nil {
			os.Exit(3)
		}
		_, _ = s.Unpack(bigImage(t), nil, "", nil)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledUnpackLeavesNoHalfImage$")
	cmd.Env = append(os.Environ(), "VERL_SCORE_TEST_UNPACK_INTO="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// wait until the unpack is under way
	deadline := time.Now().Add(60 * time.Second)
	for {
		items, _ := os.ReadDir(filepath.Join(dir, "tmp"))
		if len(items) > 0 {
			sub, _ := os.ReadDir(filepath.Join(dir, "tmp", items[0].Name(), "rootfs"))
			if len(sub) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the unpack never started")
		}
		time.Sleep(2 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if items, _ := os.ReadDir(filepath.Join(dir, "images")); len(items) != 0 {
		t.Fatalf("a killed unpack left %d images", len(items))
	}
	if items, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(items) == 0 {
		t.Fatal("the kill came after the unpack: the test tests nothing")
	}
	if _, err := OpenStore(dir); err != nil {
		t.Fatal(err)
	}
	if items, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(items) != 0 {
		t.Errorf("the leftover is still there: %v", items)
	}
}

// bigImage has 4000 files of 16 KiB.
func bigImage(t *testing.T) v1.Image {
	var es []entry
	body := strings.Repeat("x", 16<<10)
	for i := 0; i < 4000; i++ {
		es = append(es, file("data/f"+strings.Repeat("0", 4)+string(rune('a'+i%26))+time.Duration(i).String(), body))
	}
	img, err := mutate.AppendLayers(empty.Image, layer(t, es...))
	if err != nil {
		t.Fatal(err)
	}
	return img
}
