//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
)

// TestJavacArchiveSameResults compiles Java programs with and without
// javac's class-data archive and requires the same answers, and requires
// the archive to be one this JVM maps (-Xshare:on fails where it cannot).
func TestJavacArchiveSameResults(t *testing.T) {
	fast := newLocal(t, Options{Concurrency: 2})
	plain := newLocal(t, Options{Concurrency: 2, NoFastPaths: true})
	needTools(t, fast, "java")
	fast.caches.WaitJavacArchive(context.Background())
	using, why := fast.caches.JavacArchiveState()
	if !using {
		t.Fatalf("no javac archive: %s", why)
	}
	dir := fast.caches.JavacArchive()
	if out, err := exec.Command(fast.tools["java"], "-Xshare:on", "-XX:SharedArchiveFile="+filepath.Join(dir,
		toolchain.JavacArchiveName),
		"-XX:+UseSerialGC", "-version").CombinedOutput(); err != nil {
		t.Fatalf("the archive does not map: %v: %s", err, out)
	}
	if _, err := plain.Run(context.Background(), &sandboxclient.Request{Language: "python", Code: "pass",
		RunTimeout: 5}); err != nil {
		t.Fatal(err)
	}
	if using, _ := plain.caches.JavacArchiveState(); using {
		t.Errorf("a sandbox without fast paths uses the archive")
	}
	in := "3 4 1 7\n"
	programs := map[string]string{
		"sample":  toolchain.JavacArchiveSample,
		"scanner": "import java.util.*;\npublic class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in); int n = s.nextInt(); long t = 0; for (int i = 0; i < n; i++) t += s.nextLong(); System.out.println(t); } }\n",
		"assert":  "public class Main { public static void main(String[] a) { assert 1 > 2 : \"no\"; System.out.println(\"unreached\"); } }\n",
		"error":   "public class Main { public static void main(String[] a) { undefinedName(); } }\n",
		"warning": "import java.util.*;\npublic class Main { public static void main(String[] a) { List l = new ArrayList(); l.add(1); System.out.println(l); } }\n",
	}
	for name, code := range programs {
		t.Run(name, func(t *testing.T) {
			req := &sandboxclient.Request{
				Language:       "java",
				Code:           code,
				Stdin:          &in,
				CompileTimeout: 60,
				RunTimeout:     10,
				MemoryLimitMB:  1024,
			}
			a, errA := plain.Run(context.Background(), req)
			b, errB := fast.Run(context.Background(), req)
			if errA != nil || errB != nil {
				t.Fatalf("plain %v, fast %v", errA, errB)
			}
			if a.Status != b.Status || (a.RunResult == nil) != (b.RunResult == nil) ||
				(a.CompileResult == nil) != (b.CompileResult == nil) {
				t.Fatalf("plain %s\nfast %s", respText(a, nil), respText(b, nil))
			}
			if a.CompileResult != nil &&
				(a.CompileResult.Stdout != b.CompileResult.Stdout || a.CompileResult.Stderr != b.CompileResult.Stderr ||
					*a.CompileResult.ReturnCode != *b.CompileResult.ReturnCode) {
				t.Errorf("compiles differ:\nplain %s\nfast %s", respText(a, nil), respText(b, nil))
			}
			if a.RunResult != nil && (a.RunResult.Stdout != b.RunResult.Stdout || a.RunResult.Stderr != b.RunResult.Stderr ||
				*a.RunResult.ReturnCode != *b.RunResult.ReturnCode) {
				t.Errorf("runs differ:\nplain %s\nfast %s", respText(a, nil), respText(b, nil))
			}
			switch name {
			case "sample":
				if b.RunResult == nil || b.RunResult.Stdout != "1 4 7 14 Pair[a=1, b=1] zero 3\n" {
					t.Errorf("got %s", respText(b, nil))
				}
			case "scanner":
				if b.RunResult == nil || b.RunResult.Stdout != "12\n" {
					t.Errorf("got %s", respText(b, nil))
				}
			case "assert":
				if b.RunResult == nil || !strings.Contains(b.RunResult.Stderr, "AssertionError") {
					t.Errorf("got %s", respText(b, nil))
				}
			case "error":
				if b.CompileResult == nil || !strings.Contains(b.CompileResult.Stderr, "undefinedName") {
					t.Errorf("got %s", respText(b, nil))
				}
			}
		})
	}
}

// TestJavacArchiveRemoved: a cache cleaned under a running sandbox. The
// next compiles take the plain way instead of failing, and the archive is
// built again.
func TestJavacArchiveRemoved(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a cache of its own, not the one other tests use
	l := newLocal(t, Options{Concurrency: 1})
	needTools(t, l, "java")
	ctx := context.Background()
	l.caches.WaitJavacArchive(ctx)
	dir := l.caches.JavacArchive()
	if dir == "" {
		_, why := l.caches.JavacArchiveState()
		t.Fatalf("no javac archive: %s", why)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	in := "2 3 4"
	code := "import java.util.*;\npublic class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in); int n = s.nextInt(); long t = 0; for (int i = 0; i < n; i++) t += s.nextLong(); System.out.println(t); } }\n"
	resp, err := l.Run(
		ctx,
		&sandboxclient.Request{
			Language:       "java",
			Code:           code,
			Stdin:          &in,
			CompileTimeout: 60,
			RunTimeout:     10,
			MemoryLimitMB:  1024,
		},
	)
	if err != nil || resp.Status != sandboxclient.StatusSuccess || resp.RunResult.Stdout != "7\n" {
		t.Fatalf("after the archive was removed: %s", respText(resp, err))
	}
	l.caches.WaitJavacArchive(ctx)
	if again := l.caches.JavacArchive(); again == "" {
		_, why := l.caches.JavacArchiveState()
		t.Errorf("the archive was not built again: %s", why)
	} else if _, err := os.Stat(filepath.Join(again, toolchain.JavacArchiveName)); err != nil {
		t.Error(err)
	}
}
