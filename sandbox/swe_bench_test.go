//go:build linux

package sandbox

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/swe"
)

// shellImage is an image of a shell and its libraries (from the test
// base) and fillerMB of files beside them, unpacked into the tests' store.
func shellImage(b *testing.B, fillerMB int) *image.Unpacked {
	b.Helper()
	base := imagetest.BaseRootfs(b)
	files := map[string]string{}
	for _, p := range []string{"usr/bin/dash", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/lib64/ld-linux-x86-64.so.2"} {
		data, err := os.ReadFile(filepath.Join(base, p))
		if err != nil {
			b.Skipf("SKIPPED LOUDLY: the test base has no %s (another architecture?)", p)
		}
		files[p] = string(data)
	}
	links := layerOf(b, func(tw *tar.Writer) error {
		for _, p := range []string{"usr/bin/dash", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/lib64/ld-linux-x86-64.so.2"} {
			if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(files[p])),
				ModTime: time.Unix(1700000000, 0)}); err != nil {
				return err
			}
			if _, err := tw.Write([]byte(files[p])); err != nil {
				return err
			}
		}
		for _, l := range [][2]string{{"bin", "usr/bin"}, {"lib64", "usr/lib64"}, {"usr/bin/sh", "dash"},
			{"lib", "usr/lib"}} {
			if err := tw.WriteHeader(&tar.Header{Name: l[0], Typeflag: tar.TypeSymlink, Linkname: l[1],
				ModTime: time.Unix(1700000000, 0)}); err != nil {
				return err
			}
		}
		for _, d := range []string{"tmp/", "proc/", "dev/", "etc/", "testbed/"} {
			if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777,
				ModTime: time.Unix(1700000000, 0)}); err != nil {
				return err
			}
		}
		return nil
	})
	// the filler: files of 1 MiB
	filler := layerOf(b, func(tw *tar.Writer) error {
		block := make([]byte, 1<<20)
		for i := range fillerMB {
			h := &tar.Header{Name: fmt.Sprintf("data/%03d/f%d", i/100, i), Typeflag: tar.TypeReg, Mode: 0o644,
				Size: int64(len(block)), ModTime: time.Unix(1700000000, 0)}
			block[0] = byte(i) // not all alike
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(block); err != nil {
				return err
			}
		}
		return nil
	})
	img := imagetest.Image(b, []string{"PATH=/usr/bin"}, "/", links, filler)
	store, err := image.OpenStore(filepath.Join(imagetest.CacheDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	u, err := store.Unpack(img, nil, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	return u
}

func layerOf(b *testing.B, write func(*tar.Writer) error) v1.Layer {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := write(tw)
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkSWEEnvStart: a rollout's environment start (the overlay, the
// namespaces, a first process) in a 20 MB image and in a 1 GB one, and the
// copy of the 1 GB tree it replaces, in one run. Reported: ms per start of
// each, big/small (want at most 1.2) and copy/start (want at least 50).
func BenchmarkSWEEnvStart(b *testing.B) {
	l := sharedSandbox(b)
	if !l.j.Iso.Contained {
		b.Skip("SKIPPED LOUDLY: no contained sandbox")
	}
	small, big := shellImage(b, 20), shellImage(b, 1024)
	start := func(u *image.Unpacked) time.Duration {
		t0 := time.Now()
		res, err := swerun.RunInImage(context.Background(), l.j, swerun.ImageStep{
			Root: jail.ImageRoot{Lower: u.Root, UpperMB: 64, IDBase: image.IDBase, IDRange: image.IDRange},
			Argv: []string{"/bin/sh", "-c", "echo ok > /testbed/x"}, Dir: "/", Env: []string{"PATH=/usr/bin"},
			Timeout: 30 * time.Second, MemoryMB: 512, Pids: 64,
		})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("start: %v %+v", err, res)
		}
		return time.Since(t0)
	}
	start(small) // warm
	start(big)
	var ts, tb time.Duration
	b.ResetTimer()
	for range b.N {
		ts += start(small)
		tb += start(big)
	}
	b.StopTimer()
	// the copy a per-rollout tree would cost, measured here
	var tc time.Duration
	copies := 2
	for range copies {
		dst := b.TempDir()
		t0 := time.Now()
		if out, err := exec.Command("cp", "-a", big.Root, filepath.Join(dst, "root")).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		tc += time.Since(t0)
	}
	perSmall, perBig := ts/time.Duration(b.N), tb/time.Duration(b.N)
	perCopy := tc / time.Duration(copies)
	b.ReportMetric(float64(perSmall.Microseconds())/1000, "ms/start-20MB")
	b.ReportMetric(float64(perBig.Microseconds())/1000, "ms/start-1GB")
	b.ReportMetric(float64(perCopy.Microseconds())/1000, "ms/copy-1GB")
	b.ReportMetric(float64(perBig)/float64(perSmall), "big/small")
	b.ReportMetric(float64(perCopy)/float64(perBig), "copy/start")
}

// BenchmarkSWERollouts: N rollouts of the calc fixture (the gold patch) at
// the sandbox's concurrency (2 by default), against the test command's own
// time measured inside the image. Reported: ms per rollout, the test's ms,
// and the fixed overhead per rollout (apply, scripts, git resets, the
// environment's start) that a rollout adds to its tests.
func BenchmarkSWERollouts(b *testing.B) {
	l := sharedSandbox(b)
	if !l.j.Iso.Contained {
		b.Skip("SKIPPED LOUDLY: no contained sandbox")
	}
	calc := imagetest.CalcFixture(b)
	cat, err := image.OpenCatalog(imagetest.CalcImages(b))
	if err != nil {
		b.Fatal(err)
	}
	store, err := image.OpenStore(filepath.Join(imagetest.CacheDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	gt := calc.Instance()
	gt["FAIL_TO_PASS"] = []any{"tests/test_ops.py::test_add"}
	gt["PASS_TO_PASS"] = []any{"tests/test_ops.py::test_mul"}
	inst, err := swe.ParseInstance(gt)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := swe.PlanFor(inst, "")
	if err != nil {
		b.Fatal(err)
	}
	r := &swerun.Runner{Jail: l.j, Catalog: cat, Store: store, Opts: swerun.DefaultOptions}
	env, err := r.Environment(context.Background(), inst)
	if err != nil {
		b.Fatal(err)
	}
	// the test command alone, timed inside the image
	res, err := swerun.RunInImage(context.Background(), l.j, swerun.ImageStep{
		Root: jail.ImageRoot{Lower: env.Root, UpperMB: 256, IDBase: image.IDBase, IDRange: image.IDRange},
		Argv: []string{"/bin/bash", "-c", "s=$(date +%s%N); pytest -rA tests/test_ops.py >/dev/null; e=$(date +%s%N); " +
			"echo $(( (e - s) / 1000 ))"}, Dir: "/testbed", Env: env.Config.Env, Timeout: 60 * time.Second,
		MemoryMB: 2048, Pids: 256,
	})
	if err != nil {
		b.Fatal(err)
	}
	var testUS int64
	fmt.Sscan(res.Stdout, &testUS)
	rollout := func() {
		o := r.Evaluate(context.Background(), inst, plan, imagetest.CalcGoldPatch)
		if o.Kind != swe.Resolved {
			b.Fatalf("%s: %s\n%s", o.Kind, o.Why, o.Log)
		}
	}
	rollout() // warm
	const n = 8
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		done := make(chan struct{}, n)
		for range n {
			go func() { rollout(); done <- struct{}{} }()
		}
		for range n {
			<-done
		}
	}
	wall := time.Since(t0)
	b.StopTimer()
	per := wall / time.Duration(b.N*n)
	conc := max(l.opts.Concurrency, 1)
	perOne := per * time.Duration(conc) // one rollout's own time, conc running at once
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/rollout")
	b.ReportMetric(float64(testUS)/1000, "ms/test-cmd")
	b.ReportMetric(float64(perOne.Microseconds()-testUS)/1000, "ms/overhead")
}
