package rollout

import (
	"encoding/hex"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReplaceInvalidUTF8Cases(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      int
	}{
		{"plain ascii", "plain ascii", 0},
		{"caf\xc3\xa9", "café", 0},
		{"a\xffb", "a\uFFFDb", 1},
		{"\xe2\x82", "\uFFFD", 2},                           // truncated € at the end
		{"\xe2\x82x", "\uFFFDx", 2},                         // truncated € before ASCII
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", 3},           // a surrogate: three bad bytes
		{"\xc0\xaf", "\uFFFD\uFFFD", 2},                     // overlong
		{"\xf0\x9f\x98", "\uFFFD", 3},                       // truncated emoji
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD", 4}, // above U+10FFFF
	} {
		got, bad := replaceInvalidUTF8([]byte(c.in))
		if string(got) != c.want || bad != c.bad {
			t.Errorf("%q: got %q (%d bad), want %q (%d bad)", c.in, got, bad, c.want, c.bad)
		}
	}
}

// Random byte strings decode as Python decodes them with errors="replace".
func TestReplaceInvalidUTF8MatchesPython(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][]byte
	for i := 0; i < 2000; i++ {
		b := make([]byte, 1+r.IntN(12))
		for j := range b {
			// Mostly bytes that start or continue multi-byte sequences.
			switch r.IntN(4) {
			case 0:
				b[j] = byte(0x20 + r.IntN(0x5f))
			case 1:
				b[j] = byte(0x80 + r.IntN(0x40))
			default:
				b[j] = byte(0xc0 + r.IntN(0x40))
			}
		}
		inputs = append(inputs, b)
	}
	var hexes []string
	for _, b := range inputs {
		hexes = append(hexes, hex.EncodeToString(b))
	}
	cmd := exec.Command(py, "-c", `import sys
for line in sys.stdin:
    sys.stdout.write(bytes.fromhex(line.strip()).decode("utf-8", "replace").encode("utf-8").hex() + "\n")`)
	cmd.Stdin = strings.NewReader(strings.Join(hexes, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("python gave %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, b := range inputs {
		got, _ := replaceInvalidUTF8(b)
		if !utf8.Valid(got) {
			t.Fatalf("%x: result %x is not valid UTF-8", b, got)
		}
		if hex.EncodeToString(got) != lines[i] {
			t.Fatalf("%x: got %x, python gives %s", b, got, lines[i])
		}
	}
}
