package worker

import (
	"bufio"
	"strings"
	"testing"
)

// TestReadLine: lines come without their endings, a last line may lack
// one, and a line past the bound is read to its end and reported, so the
// next line is read whole.
func TestReadLine(t *testing.T) {
	old := maxLine
	maxLine = 10
	defer func() { maxLine = old }()
	long := strings.Repeat("x", 70000) // past bufio's buffer too
	r := bufio.NewReaderSize(strings.NewReader("short\r\n"+long+"\nnext\nlast"), 16)
	type line struct {
		text    string
		tooLong bool
	}
	var got []line
	for {
		b, tooLong, err := readLine(r)
		got = append(got, line{string(b), tooLong})
		if err != nil {
			break
		}
	}
	want := []line{{"short", false}, {"", true}, {"next", false}, {"last", false}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
