package testcases

import "testing"

func TestParseComparison(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Comparison
		err  bool
	}{
		{"", Comparison{Mode: CompareExact}, false},
		{"exact", Comparison{Mode: CompareExact}, false},
		{"Lines", Comparison{Mode: CompareLines}, false},
		{"tokens", Comparison{Mode: CompareTokens}, false},
		{"float", Comparison{Mode: CompareFloat, Tol: 1e-6}, false},
		{"float:1e-9", Comparison{Mode: CompareFloat, Tol: 1e-9}, false},
		{"float:-1", Comparison{}, true},
		{"float:x", Comparison{}, true},
		{"lines:1", Comparison{}, true},
		{"fuzzy", Comparison{}, true},
	} {
		got, err := ParseComparison(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseComparison(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil {
			back, err := ParseComparison(got.String())
			if err != nil || back != got {
				t.Errorf("%q: String() %q does not parse back: %+v %v", tc.in, got.String(), back, err)
			}
		}
	}
}

func TestMatch(t *testing.T) {
	exact := Comparison{}
	lines := Comparison{Mode: CompareLines}
	tokens := Comparison{Mode: CompareTokens}
	float := Comparison{Mode: CompareFloat, Tol: 1e-6}
	type want struct{ exact, lines, tokens, float bool }
	for _, tc := range []struct {
		name, out, exp string
		call           bool
		want           want
	}{
		{"equal", "1 2\n", "1 2", false, want{true, true, true, true}},
		{"trailing newlines", "1 2\n\n\n", "1 2\n", false, want{true, true, true, true}},
		{"trailing space in expected", "1 2\n3\n", "1 2 \n3 \n", false, want{false, true, true, true}},
		{"trailing blank line with spaces", "1\n", "1\n  \n", false, want{false, true, true, true}},
		{"CRLF", "1\r\n2\r\n", "1\n2\n", false, want{false, true, true, true}},
		{"leading tab", "3\n8\n", "\t3\n\t8\n", false, want{false, false, true, true}},
		{"line breaks differ", "0\n91\n", "0 91\n", false, want{false, false, true, true}},
		{"wrong token", "1 2\n", "1 3\n", false, want{false, false, false, false}},
		{"9th digit", "0.3333333333333333\n", "0.333333334\n", false, want{false, false, false, true}},
		{"5th digit", "0.33333\n", "0.33343\n", false, want{false, false, false, false}},
		{"relative", "1000000001\n", "1000000000.0\n", false, want{false, false, false, true}},
		{"int vs float", "2\n", "2.0\n", false, want{false, false, false, true}},
		{"nan is exact", "nan\n", "nan\n", false, want{true, true, true, true}},
		{"inf differs", "inf\n", "-inf\n", false, want{false, false, false, false}},
		{"json-quoted string", "efcfe\n", `"efcfe"`, true, want{false, false, true, true}},
		{"json-quoted not call-based", "efcfe\n", `"efcfe"`, false, want{false, false, false, false}},
		{"quoted string of digits", "001\n", `"001"`, true, want{false, false, true, true}},
		{"python bool", "true\n", "True", true, want{false, false, true, true}},
		{"python list", "[1, 2, \"a\"]\n", "[1, 2, 'a']", true, want{false, false, true, true}},
		{"tuple as list", "[1, 2]\n", "(1, 2)", true, want{false, false, true, true}},
		{"dict int keys", `{"1": 2}` + "\n", "{1: 2}", true, want{false, false, true, true}},
		{"float in list", "[0.30000000000000004]\n", "[0.3]", true, want{false, false, false, true}},
		{"wrong value", "[1, 3]\n", "[1, 2]", true, want{false, false, false, false}},
		{"string vs number", "\"1\"\n", "1", true, want{false, false, false, false}},
		{"big ints exact", "123456789012345678901\n", "123456789012345678902", true, want{false, false, false, false}},
		{"none", "null\n", "None", true, want{false, false, true, true}},
	} {
		got := want{
			exact.Match(tc.out, tc.exp, tc.call), lines.Match(tc.out, tc.exp, tc.call),
			tokens.Match(tc.out, tc.exp, tc.call), float.Match(tc.out, tc.exp, tc.call),
		}
		if got != tc.want {
			t.Errorf("%s: exact/lines/tokens/float = %v, want %v", tc.name, got, tc.want)
		}
		if got.exact != ExactMatch(tc.out, tc.exp) {
			t.Errorf("%s: exact mode is not ExactMatch", tc.name)
		}
	}
}

// Every mode accepts whatever the exact rule accepts: a compare mode can
// only turn a wrong answer into a pass, never the reverse.
func FuzzModesContainExact(f *testing.F) {
	f.Add("1 2\n", "1 2")
	f.Add("[1]", "[1]")
	f.Add("'a'", "'a'")
	f.Fuzz(func(t *testing.T, out, exp string) {
		if !ExactMatch(out, exp) {
			return
		}
		for _, c := range []Comparison{{Mode: CompareLines}, {Mode: CompareTokens}, {Mode: CompareFloat, Tol: 1e-6}} {
			if !c.Match(out, exp, true) || !c.Match(out, exp, false) {
				t.Fatalf("%s rejects %q for %q, which exact accepts", c, out, exp)
			}
		}
	})
}

func TestParseLiteral(t *testing.T) {
	for _, bad := range []string{"", "[1,", "{1 2}", "'open", "abc", "1 2", "[1] x"} {
		if _, err := ParseLiteral(bad); err == nil {
			t.Errorf("ParseLiteral(%q) succeeded", bad)
		}
	}
	v, err := ParseLiteral(`{"a": [1, 2.5, 'x\n', None, True]}`)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	list := m["a"].([]any)
	if len(list) != 5 || list[2] != "x\n" || list[3] != nil || list[4] != true {
		t.Errorf("got %#v", v)
	}
}

func TestCheckerField(t *testing.T) {
	gt := func(checker string) []byte {
		return []byte(`{"inputs": ["5"], "outputs": ["1 4"], "checker": ` + checker + `}`)
	}
	for _, tc := range []struct {
		field, code, lang, err string
	}{
		{`"import sys"`, "import sys", "python", ""},
		{`{"code": "int main(){}", "language": "cpp"}`, "int main(){}", "cpp", ""},
		{`{"code": "x"}`, "x", "python", ""},
		{`{"language": "cpp"}`, "", "python", `checker field "checker": "code" is not a non-empty string`},
		{`{"code": "x", "language": 3}`, "x", "python", `checker field "checker": "language" is not a non-empty string`},
		{`[1]`, "", "", `checker field "checker" is a list, not the code or {"code", "language"}`},
	} {
		set, err := ParseWith(gt(tc.field), "checker")
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		c := set.Checker
		if c == nil || c.Code != tc.code || c.Language != tc.lang || c.Err != tc.err {
			t.Errorf("%s: checker %+v, want code %q language %q error %q", tc.field, c, tc.code, tc.lang, tc.err)
		}
	}
	// Not asked for, or null: no checker.
	if set, _ := ParseWith(gt(`"x"`), ""); set.Checker != nil {
		t.Error("a checker was read without a checker key")
	}
	if set, _ := ParseWith(gt(`null`), "checker"); set.Checker != nil {
		t.Error("a null checker field gave a checker")
	}
}

// rows compares result sets: rows in any order, as a multiset, cells split
// at "|", numbers within the tolerance, text exactly.
func TestCompareRows(t *testing.T) {
	rows, err := ParseComparison("rows")
	if err != nil || rows.String() != "rows" {
		t.Fatalf("ParseComparison(rows) = %v, %v", rows, err)
	}
	tight, err := ParseComparison("rows:1e-9")
	if err != nil || tight.String() != "rows:1e-09" {
		t.Fatalf("ParseComparison(rows:1e-9) = %v, %v", tight, err)
	}
	cases := []struct {
		got, want string
		ok        bool
	}{
		{"a|1\nb|2\n", "a|1\nb|2\n", true},
		{"b|2\na|1\n", "a|1\nb|2\n", true},               // another order
		{"a|1\na|1\nb|2\n", "a|1\nb|2\nb|2\n", false},    // a multiset, not a set
		{"a|1\n", "a|1\nb|2\n", false},                   // a row missing
		{"a|1.0000001\n", "a|1\n", true},                 // within 1e-6
		{"a|1.001\n", "a|1\n", false},                    // beyond it
		{"A|1\n", "a|1\n", false},                        // text is exact
		{"a|1|x\n", "a|1\n", false},                      // another width
		{"NULL|3\n2.5|pen\n", "2.5|pen\nNULL|3\n", true}, // NULL is text
		{"a|1  \n\n\n", "a|1\n", true},                   // trailing whitespace and blank lines
		{"", "", true},                                   // two empty results
		{"\n", "a|1\n", false},
	}
	for _, c := range cases {
		if got := rows.Match(c.got, c.want, false); got != c.ok {
			t.Errorf("rows.Match(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
	if tight.Match("a|1.0000001\n", "a|1\n", false) {
		t.Error("rows:1e-9 accepted a difference of 1e-7")
	}
	if _, err := ParseComparison("lines:1e-3"); err == nil {
		t.Error("lines took a tolerance")
	}
}
