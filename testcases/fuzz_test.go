package testcases

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Seeds only run under `go test`; run a real search with e.g.
// go test -run '^$' -fuzz FuzzParse -fuzztime 20s ./testcases/

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"inputs": ["1\n"], "outputs": ["2\n"]}`,
		quoteJSON(`{"inputs": ["1\n"], "outputs": ["2\n"], "fn_name": "f"}`),
		`{"assert_case": ["assert f(1) == 2"]}`,
		`{"inputs": [1, 2.5, null, [true]], "outputs": {"a": 1}}`,
		`{"inputs": "ab", "outputs": "cd", "assert_case": "xy"}`,
		`{"inputs": [], "outputs": 3}`,
		`null`, `"null"`, `[]`, `{}`, `"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		set, err := Parse(raw)
		if err != nil {
			if set != nil {
				t.Fatalf("Parse returned a set with error %v", err)
			}
			return
		}
		for i, c := range set.Cases {
			if c.Stdin == nil && c.Input != "None" {
				t.Fatalf("case %d: nil stdin with input %q", i, c.Input)
			}
			if c.Stdin != nil && *c.Stdin != c.Input {
				t.Fatalf("case %d: stdin %q differs from input %q", i, *c.Stdin, c.Input)
			}
			if c.Expected != nil && *c.Expected != c.ExpectedText {
				t.Fatalf("case %d: expected %q differs from its text %q", i, *c.Expected, c.ExpectedText)
			}
			p := set.Program("x = 1", i, "python")
			if !strings.Contains(p, "x = 1\n\n"+c.Assert) {
				t.Fatalf("case %d: program lacks the solution and assert", i)
			}
		}
	})
}

func FuzzPyStr(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	for _, s := range decodeCorpus {
		if len(s) < 200 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := Decode(text)
		if err == nil {
			_ = PyStr(v)
			r := PyRepr(v)
			if utf8.ValidString(text) && !utf8.ValidString(r) {
				t.Fatalf("repr of valid UTF-8 input is not UTF-8: %q", r)
			}
		}
		// Where both grammars apply, accept exactly what encoding/json
		// accepts (Python's extras and limits aside).
		if utf8.ValidString(text) && len(text) < 1000 && !strings.ContainsAny(text, "NI") &&
			!strings.HasPrefix(text, "\ufeff") {
			if got, want := err == nil, json.Valid([]byte(text)); got != want {
				t.Fatalf("Decode(%q) ok=%v (err %v), encoding/json valid=%v", text, got, err, want)
			}
		}
	})
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"```python\nprint(1)\n```", "```cpp\nint x;\n```", "```\nx\n```", "no code",
		"``` Java \r\nclass Main{}", "```código\nx", "a```b```c```python", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, completion string) {
		code, lang, ok := Extract(completion, RuleVerl)
		if ok != strings.Contains(completion, "```") {
			t.Fatalf("ok = %v for %q", ok, completion)
		}
		if ok && !strings.Contains(completion, code) {
			t.Fatalf("code %q is not part of the completion", code)
		}
		if strings.Contains(completion, "```python") && lang != "python" {
			t.Fatalf("lang = %q, want python", lang)
		}
		pcode, _, pok := Extract(completion, RulePRIME)
		if !pok || !strings.Contains(completion, pcode) || strings.Contains(pcode, "```") {
			t.Fatalf("PRIME code %q (ok %v) not a fence-free part of the completion", pcode, pok)
		}
	})
}
