package resultcache

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

func answer(out string) *sandboxclient.Response {
	rc := 0
	return &sandboxclient.Response{Status: sandboxclient.StatusSuccess, Files: map[string]string{},
		RunResult: &sandboxclient.StepResult{
			Status:        sandboxclient.StepFinished,
			ReturnCode:    &rc,
			Stdout:        out,
			ExecutionTime: 0.01,
		}}
}

func key(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func open(t *testing.T, dir, identity string, max int64) *Dir {
	t.Helper()
	d, err := Open(dir, identity, max)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An answer comes back as it went in, for the same sandbox only.
func TestPutGet(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir, "sandbox A", 1<<20)
	if _, ok := d.Get(key("x")); ok {
		t.Fatal("a hit in an empty cache")
	}
	if err := d.Put(key("x"), answer("<42>\n")); err != nil {
		t.Fatal(err)
	}
	got, ok := open(t, dir, "sandbox A", 1<<20).Get(key("x"))
	if !ok || got.RunResult.Stdout != "<42>\n" || *got.RunResult.ReturnCode != 0 {
		t.Fatalf("got %+v, %v", got, ok)
	}
	if _, ok := open(t, dir, "sandbox B", 1<<20).Get(key("x")); ok {
		t.Error("another sandbox's answer was reused")
	}
}

// A damaged entry is a miss, and is removed.
func TestCorruptEntriesAreIgnored(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir, "s", 1<<20)
	for i, damage := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] },                      // torn
		func(b []byte) []byte { return []byte("not json") },                // garbage
		func(b []byte) []byte { b[len(b)-10] ^= 1; return b },              // a flipped bit inside the answer
		func(b []byte) []byte { return append([]byte(`{"key":"x"`), '}') }, // wrong key
	} {
		k := key(fmt.Sprint("entry", i))
		if err := d.Put(k, answer(fmt.Sprint("out ", i))); err != nil {
			t.Fatal(err)
		}
		p, _ := d.path(k)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, damage(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := d.Get(k); ok {
			t.Errorf("damage %d: got a hit %+v", i, got)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("damage %d: the entry was left in place", i)
		}
	}
	if d.Corrupt() != 4 {
		t.Errorf("counted %d corrupt entries, want 4", d.Corrupt())
	}
}

// The directory stays under its bound: the oldest entries go.
func TestSizeBound(t *testing.T) {
	dir := t.TempDir()
	const bound = 64 << 10
	d := open(t, dir, "s", bound)
	big := string(make([]byte, 1000))
	for i := range 400 {
		if err := d.Put(key(fmt.Sprint(i)), answer(big)); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	if total > bound {
		t.Errorf("the cache holds %d bytes, over its bound of %d", total, bound)
	}
	if _, ok := d.Get(key("399")); !ok {
		t.Error("the newest entry was removed")
	}
	if _, ok := d.Get(key("0")); ok {
		t.Error("the oldest entry is still there")
	}
}

// Runs sharing the directory, writing and reading the same entries at
// once, never read a half-written entry.
func TestConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, "s", 64<<20), open(t, dir, "s", 64<<20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	for w := range 8 {
		d := a
		if w%2 == 1 {
			d = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := key(fmt.Sprint(i % 50))
				want := fmt.Sprint("out ", i%50)
				if got, ok := d.Get(k); ok && got.RunResult.Stdout != want {
					mu.Lock()
					bad++
					mu.Unlock()
				}
				if err := d.Put(k, answer(want)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if bad > 0 || a.Corrupt()+b.Corrupt() > 0 {
		t.Errorf("%d wrong answers, %d corrupt entries read", bad, a.Corrupt()+b.Corrupt())
	}
}
