package testcases

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeKeepsOrderAndKinds(t *testing.T) {
	v, err := Decode(`{"z": 1, "a": 2.0, "m": [3, "x", null], "z": 4}`)
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := v.(*Object)
	if !ok {
		t.Fatalf("got %T, want *Object", v)
	}
	if got, want := strings.Join(obj.Keys, ","), "z,a,m"; got != want {
		t.Errorf("keys = %s, want %s", got, want)
	}
	if z, _ := obj.Get("z"); z != Int("4") {
		t.Errorf("z = %#v, want Int(4)", z)
	}
	if a, _ := obj.Get("a"); a != 2.0 {
		t.Errorf("a = %#v, want float64 2", a)
	}
	if _, ok := obj.Get("missing"); ok {
		t.Errorf("Get(missing) found a value")
	}
}

func TestDecodeLargeObjectIndex(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `": ` + string(rune('0'+i%10)))
	}
	b.WriteString(`, "k": 7}`) // duplicate of the first key
	v, err := Decode(b.String())
	if err != nil {
		t.Fatal(err)
	}
	obj := v.(*Object)
	if obj.Len() != 100 {
		t.Errorf("Len() = %d, want 100", obj.Len())
	}
	if got, _ := obj.Get("k"); got != Int("7") {
		t.Errorf(`Get("k") = %#v, want Int("7")`, got)
	}
	if obj.Keys[0] != "k" {
		t.Errorf("first key = %q, want k", obj.Keys[0])
	}
	if got, _ := obj.Get("k" + strings.Repeat("x", 99)); got != Int("9") {
		t.Errorf("last key value = %#v, want Int(9)", got)
	}
}

// decodeCorpus holds documents that json.loads accepts or rejects, chosen
// at the edges of the grammar.
var decodeCorpus = []string{
	"01", "1.", ".5", "-", "-a", "+1", "[1,]", `{"a":1,}`, `{"a" 1}`, `{1: 2}`, `{'a': 1}`,
	`"\x"`, "\"\t\"", "\"\x7f\"", "\ufeff1", "1 2", " 1 ", "\t[\r\n]\n", "", " ",
	"NaN", "nan", "-NaN", "Infinity", "-Infinity", "+Infinity", "Infinity1", "[1e]", "[1e+]", "1E+2",
	"tru", "nul", "true false", `"\u12"`, `"\uZZZZ"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\/"`,
	`"unterminated`, `"a\`, "[", "]", "{", "}", "[1 2]", `["a" "b"]`, `{"a":1 "b":2}`,
	"-0", "-0.0", "0e0", "0.0e-0", "1.5e308", "1e-400", "[-]", "[0x10]", "[00]", "1_000",
	strings.Repeat("[", 900) + strings.Repeat("]", 900),
	strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
	strings.Repeat("9", 4300), strings.Repeat("9", 4301), "-" + strings.Repeat("9", 4301),
	"1." + strings.Repeat("9", 5000),
	`{"inputs": ["1\n2\n"], "outputs": ["3\n"], "fn_name": "f"}`,
}

// TestDecodeMatchesPython wants Decode to accept exactly what json.loads
// accepts and to produce the same value (compared through str()).
func TestDecodeMatchesPython(t *testing.T) {
	needPython(t)
	const script = `import sys, json
docs = json.loads(sys.stdin.read())
res = []
for d in docs:
    try:
        res.append(["ok", str(json.loads(d))])
    except Exception as e:
        res.append(["error", type(e).__name__])
sys.stdout.write(json.dumps(res))
`
	in, err := json.Marshal(decodeCorpus)
	if err != nil {
		t.Fatal(err)
	}
	var res [][2]string
	if err := json.Unmarshal([]byte(runPython(t, script, string(in))), &res); err != nil {
		t.Fatal(err)
	}
	for i, doc := range decodeCorpus {
		v, err := Decode(doc)
		short := doc
		if len(short) > 40 {
			short = short[:40] + "..."
		}
		switch {
		case res[i][0] == "ok" && err != nil:
			t.Errorf("Decode(%q): %v, want %s", short, err, res[i][1])
		case res[i][0] == "error" && err == nil:
			t.Errorf("Decode(%q) = %s, want an error (Python: %s)", short, PyRepr(v), res[i][1])
		case err == nil && PyStr(v) != res[i][1]:
			t.Errorf("Decode(%q) = %q, want %q", short, PyStr(v), res[i][1])
		case err != nil && !errors.Is(err, errDecode):
			t.Errorf("Decode(%q) error %v does not wrap errDecode", short, err)
		}
	}
}
