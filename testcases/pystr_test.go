package testcases

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

func TestPyStr(t *testing.T) {
	tests := []struct {
		json string
		want string
	}{
		{`"5 7\n3\n"`, "5 7\n3\n"},
		{`null`, "None"},
		{`true`, "True"},
		{`false`, "False"},
		{`3`, "3"},
		{`-0`, "0"},
		{`3.0`, "3.0"},
		{`-0.0`, "-0.0"},
		{`1e-05`, "1e-05"},
		{`0.0001`, "0.0001"},
		{`0.1`, "0.1"},
		{`1e16`, "1e+16"},
		{`1e15`, "1000000000000000.0"},
		{`1.5E16`, "1.5e+16"},
		{`123456789012345678901234567890`, "123456789012345678901234567890"},
		{`1e400`, "inf"},
		{`-1e400`, "-inf"},
		{`NaN`, "nan"},
		{`-Infinity`, "-inf"},
		{`[1, "a", 2.5, null, true]`, "[1, 'a', 2.5, None, True]"},
		{`{"b": 1, "a": [1, {"x": "y'z"}]}`, `{'b': 1, 'a': [1, {'x': "y'z"}]}`},
		{`{"dup": 1, "x": 2, "dup": 3}`, "{'dup': 3, 'x': 2}"},
		{`["both ' and \""]`, `['both \' and "']`},
		{`["tab\t\n\r\u0000\u007f\\"]`, `['tab\t\n\r\x00\x7f\\']`},
		{`["é中😀", "\u00a0\u200b\u2028\ufeff"]`, `['é中😀', '\xa0\u200b\u2028\ufeff']`},
		{`[]`, "[]"},
		{`{}`, "{}"},
	}
	for _, tt := range tests {
		v, err := Decode(tt.json)
		if err != nil {
			t.Errorf("Decode(%q): %v", tt.json, err)
			continue
		}
		if got := PyStr(v); got != tt.want {
			t.Errorf("PyStr(%s) = %q, want %q", tt.json, got, tt.want)
		}
	}
}

func TestPyStrOtherTypes(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{7, "7"},
		{int64(-8), "-8"},
		{json.Number("12"), "12"},
		{json.Number("12.0"), "12.0"},
		{json.Number("1e2"), "100.0"},
		{(*Object)(nil), "None"},
		{[]any{json.Number("-0"), 1.5}, "[0, 1.5]"},
	}
	for _, tt := range tests {
		if got := PyStr(tt.v); got != tt.want {
			t.Errorf("PyStr(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// pyStrScript prints, for each JSON document on stdin (one per line),
// str(json.loads(line)) as a JSON string on one line.
const pyStrScript = `import sys, json
for line in sys.stdin.buffer:
    sys.stdout.write(json.dumps(str(json.loads(line))) + "\n")
`

// handCorpus holds JSON documents chosen for their corner cases.
var handCorpus = []string{
	`3`, `-17`, `0`, `-0`, `3.0`, `-0.0`, `1e-05`, `1E-5`, `0.0001`, `0.00012345`, `0.1`, `0.3`,
	`1e16`, `1e15`, `1.5e16`, `9999999999999998.0`, `12345678901234567.0`, `1e22`, `1e-7`, `100.0`,
	`123456789012345678901234567890`, `-123456789012345678901234567890`, `9007199254740993`,
	`9007199254740993.0`, `1.7976931348623157e308`, `5e-324`, `2.5e-300`, `1e308`, `1e309`,
	`-1e400`, `NaN`, `Infinity`, `-Infinity`, `123456789.123456789`, `0.5e1`, `10E+2`,
	`null`, `true`, `false`, `""`, `"plain"`, `"it's"`, `"say \"hi\""`,
	`["it's"]`, `["say \"hi\""]`, `["both ' and \""]`, `["back\\slash"]`, `[""]`,
	`["tab\tnl\ncr\r\b\f"]`, `["\u0000\u0001\u001f\u007f\u0080\u009f"]`,
	`["é ü ñ 中文 😀 \ud83d\ude00"]`, `["\u00a0\u00ad\u2028\u2029\u200b\ufeff\u0085\u00ff\u0100"]`,
	`["\ue000\uf8ff\udb80\udc00\u0378\ufffe\uffff"]`, `["\u0301\u0644\u0627 \u05d0"]`,
	`[1, "a", 2.5, null, true, false]`, `{"b": 1, "a": [1, {"x": "y'z"}]}`, `[]`, `{}`,
	`[[["deep", [{}]]]]`, `{"k": "it's \"q\""}`, `{"dup": 1, "x": 2, "dup": 3}`,
	`{"it's": 1, "say \"x\"": 2, "\n": [3.0, -0.0, 1e100]}`, ` [ 1 , 2 ] `,
	`"[1, 2]\n3"`, `{"inputs": ["1\n"], "outputs": [null]}`,
}

// randomJSON returns a random JSON document and descends at most depth
// levels. Strings use characters that exist in every recent Unicode
// version, so that the host Python's tables agree with Go's.
func randomJSON(r *rand.Rand, depth int) string {
	k := r.IntN(9)
	if depth <= 0 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2: // integers, some huge
		n := 1 + r.IntN(40)
		var b strings.Builder
		if r.IntN(3) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + r.IntN(9)))
		for i := 1; i < n; i++ {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	case 3: // floats from random bits
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "NaN"
		}
		return jsonFloat(f)
	case 4: // short decimals, like real test data
		f := float64(r.IntN(2000000)-1000000) / math.Pow(10, float64(r.IntN(12)))
		return jsonFloat(f * math.Pow(10, float64(r.IntN(30)-10)))
	case 5, 6:
		return randomJSONString(r)
	case 7:
		n := r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSON(r, depth-1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		n := r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSONString(r) + ": " + randomJSON(r, depth-1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}

func jsonFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// stringAlphabet mixes quotes, escapes, controls and long-assigned
// printable and non-printable characters.
var stringAlphabet = []rune("ab Z09'\"\\\t\n\r\x00\x01\x1b\x7f\u0080\u0085\u009f\u00a0\u00ad\u00e9\u00ff" +
	"\u0100\u0378\u0301\u05d0\u0644\u200b\u200e\u2028\u2029\u3000\u4e2d\ue000\ufeff\ufffd\uffff" +
	"\U0001F600\U0001D11E\U000E0001\U000F0000\U0010FFFF")

func randomJSONString(r *rand.Rand) string {
	n := r.IntN(8)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = stringAlphabet[r.IntN(len(stringAlphabet))]
	}
	b, _ := json.Marshal(string(rs))
	// encoding/json escapes <, >, & and U+2028/9 as \u....; all valid JSON.
	return string(b)
}

// TestPyStrMatchesPython renders a corpus of JSON documents with PyStr and
// with the real Python's str(json.loads(...)) and wants identical text.
func TestPyStrMatchesPython(t *testing.T) {
	needPython(t)
	corpus := append([]string(nil), handCorpus...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		corpus = append(corpus, randomJSON(r, 3))
	}
	out := runPython(t, pyStrScript, strings.Join(corpus, "\n")+"\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(corpus) {
		t.Fatalf("python printed %d lines, want %d", len(lines), len(corpus))
	}
	for i, doc := range corpus {
		var want string
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatalf("python line %d %q: %v", i, lines[i], err)
		}
		v, err := Decode(doc)
		if err != nil {
			t.Errorf("Decode(%s): %v", doc, err)
			continue
		}
		if got := PyStr(v); got != want {
			t.Errorf("PyStr(%s) = %q, want %q", doc, got, want)
		}
	}
}

// TestCharClassesMatchPython compares, for every code point, Go's view of
// printable (repr), whitespace (strip) and letter (isalpha) with Python's.
// Code points unassigned in the host Python's Unicode version may differ
// (Go's tables are newer); any other difference fails.
func TestCharClassesMatchPython(t *testing.T) {
	needPython(t)
	const script = `import sys, unicodedata
out = []
for cp in range(0x110000):
    c = chr(cp)
    if unicodedata.category(c) == "Cn":
        out.append("?")
        continue
    out.append(chr(ord("a") + c.isprintable() + 2 * c.isspace() + 4 * c.isalpha()))
sys.stdout.write("".join(out))
`
	out := runPython(t, script, "")
	if len(out) != 0x110000 {
		t.Fatalf("python printed %d classes, want %d", len(out), 0x110000)
	}
	unassigned, bad := 0, 0
	for cp := rune(0); cp < 0x110000; cp++ {
		c := out[cp]
		if c == '?' {
			unassigned++
			continue
		}
		bits := c - 'a'
		wantPrint, wantSpace, wantAlpha := bits&1 != 0, bits&2 != 0, bits&4 != 0
		gotPrint := cp >= 0x20 && cp < 0x7f || cp > 0x7f && unicode.IsPrint(cp) && !(cp >= 0xd800 && cp <= 0xdfff)
		gotSpace := isPySpace(cp)
		gotAlpha := isPyAlpha(string(cp)) && !(cp >= 0xd800 && cp <= 0xdfff)
		if gotPrint != wantPrint || gotSpace != wantSpace || gotAlpha != wantAlpha {
			bad++
			if bad <= 20 {
				t.Errorf("U+%04X: printable/space/alpha = %v/%v/%v, want %v/%v/%v",
					cp, gotPrint, gotSpace, gotAlpha, wantPrint, wantSpace, wantAlpha)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d code points differ", bad)
	}
	t.Logf("%d code points unassigned in the host Python's Unicode tables were not compared", unassigned)
}
