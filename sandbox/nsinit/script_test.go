package nsinit

import (
	"bytes"
	"math"
	"reflect"
	"strconv"
	"testing"
)

// A script parses back into the records it was built from, argument for
// argument, including empty, binary and long arguments.
func TestScriptRoundTrip(t *testing.T) {
	long := string(bytes.Repeat([]byte{0xff, 0, 'x'}, 70000)) // lengths over 2^14 need three varint bytes
	want := []Record{
		{Op: OpTmpfs, Args: []string{"/", "64"}},
		{Op: OpBind, Args: []string{"/usr", "/usr", Itoa(BindWritable | BindFile)}},
		{Op: OpFile, Args: []string{"/sandbox/a.py", "420", "-1", "-1", long}},
		{Op: OpEnv, Args: []string{"", "A=1", "B=\x00\n"}},
		{Op: OpExec},
		{Op: OpJoin, Args: []string{"5", "6"}},
	}
	var s Script
	for _, r := range want {
		s.Op(r.Op, r.Args...)
	}
	got, ok := Parse(s.Bytes())
	if !ok {
		t.Fatal("Parse refused a script Script built")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip: got %d records, want %d; first differs: %v", len(got), len(want), firstDiff(got, want))
	}
	// The encoding itself: op, count, then length-prefixed arguments.
	var one Script
	one.Op('b', "ab", "")
	if w := []byte{'b', 2, 2, 'a', 'b', 0}; !bytes.Equal(one.Bytes(), w) {
		t.Errorf("encoding of b(ab, \"\"): %v, want %v", one.Bytes(), w)
	}
}

func firstDiff(got, want []Record) string {
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			return "record " + strconv.Itoa(i) + ": op " + string(got[i].Op) + " vs " + string(want[i].Op)
		}
	}
	return "lengths"
}

// Truncated or overlong input is refused, never read past its end.
func TestParseRefusesBrokenScripts(t *testing.T) {
	var s Script
	s.Op(OpBind, "/usr", "/usr", "1")
	b := s.Bytes()
	for n := 1; n < len(b); n++ {
		if recs, ok := Parse(b[:n]); ok {
			t.Errorf("Parse accepted the first %d of %d bytes: %v", n, len(b), recs)
		}
	}
	for _, bad := range [][]byte{
		{'x', 1, 200},                       // an argument longer than what follows
		{'x', 0xff, 0xff, 0xff, 0xff, 0xff}, // a varint that never ends
		append([]byte{'x'}, bytes.Repeat([]byte{0x80}, 11)...), // more than 10 varint bytes
		{'x', 3, 0, 0}, // three arguments announced, two given
	} {
		if recs, ok := Parse(bad); ok {
			t.Errorf("Parse(%v) accepted: %v", bad, recs)
		}
	}
	if recs, ok := Parse(nil); !ok || len(recs) != 0 {
		t.Errorf("Parse(nil) = %v, %v; want no records", recs, ok)
	}
}

func TestItoaAtoi(t *testing.T) {
	for _, v := range []int{0, 1, -1, 9, 10, 4096, -65536, 1 << 40, -(1 << 40), math.MaxInt32} {
		s := Itoa(v)
		if s != strconv.Itoa(v) {
			t.Errorf("Itoa(%d) = %q", v, s)
		}
		if got, ok := Atoi(s); !ok || got != v {
			t.Errorf("Atoi(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "-", "1a", " 1", "+1", "1234567890123456789", "--1"} {
		if v, ok := Atoi(s); ok {
			t.Errorf("Atoi(%q) accepted: %d", s, v)
		}
	}
}

// FuzzParse: any bytes parse or are refused without a panic, and what
// parses re-encodes to the same bytes.
func FuzzParse(f *testing.F) {
	var s Script
	s.Op(OpTmpfs, "/", "64")
	s.Op(OpExec, "/sandbox", "1000", "1000", "/usr/bin/python3", "solution.py")
	f.Add(s.Bytes())
	f.Add([]byte{})
	f.Add([]byte{'x', 1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, ok := Parse(b)
		if !ok {
			return
		}
		var again Script
		for _, r := range recs {
			again.Op(r.Op, r.Args...)
		}
		// Varints may be written longer than needed (0x80 0x00 is 0), so
		// compare what they mean: the records.
		back, ok := Parse(again.Bytes())
		if !ok || !reflect.DeepEqual(back, recs) {
			t.Fatalf("records %v re-encode to %v, which parses to %v, %v", recs, again.Bytes(), back, ok)
		}
	})
}

// FuzzScriptRoundTrip: any records survive Script then Parse.
func FuzzScriptRoundTrip(f *testing.F) {
	f.Add(byte('b'), "/usr", "", "1")
	f.Fuzz(func(t *testing.T, op byte, a, b, c string) {
		var s Script
		s.Op(op, a, b, c)
		s.Op(op)
		recs, ok := Parse(s.Bytes())
		if !ok || len(recs) != 2 || recs[0].Op != op || !reflect.DeepEqual(recs[0].Args, []string{a, b, c}) ||
			len(recs[1].Args) != 0 {
			t.Fatalf("Op(%q, %q, %q, %q) parsed back as %v, %v", op, a, b, c, recs, ok)
		}
	})
}

// FuzzAtoi: Atoi accepts exactly what Itoa writes (and leading zeros).
func FuzzAtoi(f *testing.F) {
	f.Add("12")
	f.Add("-0")
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := Atoi(s)
		if !ok {
			return
		}
		if want, err := strconv.Atoi(s); err != nil || want != v {
			t.Fatalf("Atoi(%q) = %d; strconv says %d, %v", s, v, want, err)
		}
	})
}
