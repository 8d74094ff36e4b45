//go:build linux

package forkserver

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeLoopBytes: the machine code forkserver.py runs is what GNU as
// makes of serveloop_x86_64.asm, byte for byte, so that the source read
// and reviewed is the code the server runs.
func TestServeLoopBytes(t *testing.T) {
	for _, tool := range []string{"as", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s (binutils) is not installed on a CI machine", tool)
			}
			t.Skipf("SKIPPED: %s (binutils) is not installed: the loop's bytes go unchecked", tool)
		}
	}
	// Read here, not by as alone, so that go test's cache sees the file.
	src, err := os.ReadFile("serveloop_x86_64.asm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	asm, obj, bin := filepath.Join(dir, "loop.s"), filepath.Join(dir, "loop.o"), filepath.Join(dir, "loop.bin")
	if err := os.WriteFile(asm, src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"as", "--64", "-o", obj, asm},
		{"objcopy", "-O", "binary", "-j", ".text", obj, bin},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := serveLoopBytes(forkServerSource)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf(
			"forkserver.py's SERVE_LOOP (%d bytes) is not what serveloop_x86_64.asm assembles to (%d bytes); its hex is:\n%s",
			len(got),
			len(want),
			hex.EncodeToString(want),
		)
	}
}

// serveLoopBytes is the x86-64 loop forkserver.py holds: the hex strings
// of its SERVE_LOOP, decoded.
func serveLoopBytes(src string) ([]byte, error) {
	start := strings.Index(src, `SERVE_LOOP = {"x86_64": bytes.fromhex(`)
	if start < 0 {
		return nil, errNoLoop
	}
	end := strings.Index(src[start:], ")}")
	if end < 0 {
		return nil, errNoLoop
	}
	var h strings.Builder
	for _, m := range regexp.MustCompile(`"([0-9a-f]+)"`).FindAllStringSubmatch(src[start:start+end], -1) {
		h.WriteString(m[1])
	}
	return hex.DecodeString(h.String())
}

var errNoLoop = errors.New("forkserver.py holds no SERVE_LOOP for x86_64")
