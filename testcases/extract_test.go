package testcases

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name       string
		completion string
		rule       Rule
		code, lang string
		ok         bool
	}{
		{"python fence", "Here:\n```python\nprint(1)\n```\nDone", RuleVerl, "\nprint(1)\n", "python", true},
		{"last python fence wins", "```python\na\n```\n```python\nb\n```", RuleVerl, "\nb\n", "python", true},
		{"python fence without end", "```python\nprint(2)", RuleVerl, "\nprint(2)", "python", true},
		{"python3 tag keeps its 3", "```python3\nx\n```", RuleVerl, "3\nx\n", "python", true},
		{
			"python fence beats an earlier plain one",
			"```\nfirst\n```\n```python\nsecond\n```",
			RuleVerl,
			"\nsecond\n",
			"python",
			true,
		},
		{"cpp tag dropped", "```cpp\nint main(){}\n```", RuleVerl, "int main(){}\n", "cpp", true},
		{"tag trimmed and lowered", "``` Java \r\nclass Main{}\n```", RuleVerl, "class Main{}\n", "java", true},
		{"no tag", "```\nx = 1\n```", RuleVerl, "\nx = 1\n", "", true},
		{"c++ is not alphabetic", "```c++\nint x;\n```", RuleVerl, "c++\nint x;\n", "", true},
		{"unicode letters count", "```código\nx\n```", RuleVerl, "x\n", "código", true},
		{"code on the fence line", "```x = 1```", RuleVerl, "x = 1", "", true},
		{"single-line alphabetic text is kept", "```print```", RuleVerl, "print", "", true},
		{"first line alphabetic word is dropped", "```\nprint\nmore\n```", RuleVerl, "\nprint\nmore\n", "", true},
		{"word then code", "```go\npackage main\n```", RuleVerl, "package main\n", "go", true},
		{"only an opening fence", "text ```rust\nfn main(){}", RuleVerl, "fn main(){}", "rust", true},
		{"between first and second fence only", "```\na\n```\nmid\n```\nb\n```", RuleVerl, "\na\n", "", true},
		{"empty block", "``````", RuleVerl, "", "", true},
		{"no fence", "def f(): pass", RuleVerl, "", "", false},
		{"empty completion", "", RuleVerl, "", "", false},
		{"PRIME python fence", "a\n```python\nx\n```", RulePRIME, "\nx\n", "python", true},
		{"PRIME no fence: whole completion", "def f(): pass", RulePRIME, "def f(): pass", "", true},
		{"PRIME other fence: text before it", "intro\n```cpp\nint x;\n```", RulePRIME, "intro\n", "", true},
	}
	for _, tt := range tests {
		code, lang, ok := Extract(tt.completion, tt.rule)
		if code != tt.code || lang != tt.lang || ok != tt.ok {
			t.Errorf("%s: Extract(%q) = %q, %q, %v, want %q, %q, %v",
				tt.name, tt.completion, code, lang, ok, tt.code, tt.lang, tt.ok)
		}
	}
}

// extractOracle is docs/semantics.md §2 written with Python's own string methods; it
// prints [code, ok] for RuleVerl and the PRIME code, per completion.
const extractOracle = `import sys, json
def verl(c):
    if "` + "```" + `python" in c:
        return c.split("` + "```" + `python")[-1].split("` + "```" + `")[0], True
    if "` + "```" + `" not in c:
        return "", False
    body = c.split("` + "```" + `")[1]
    if "\n" in body:
        head, tail = body.split("\n", 1)
        if head.strip().isalpha():
            return tail, True
    return body, True
res = []
for c in json.loads(sys.stdin.read()):
    code, ok = verl(c)
    res.append([code, ok, c.split("` + "```" + `python")[-1].split("` + "```" + `")[0]])
sys.stdout.write(json.dumps(res))
`

// TestExtractMatchesPython builds random completions out of fences, tags,
// whitespace and letters and wants Extract to agree with the Python oracle.
func TestExtractMatchesPython(t *testing.T) {
	needPython(t)
	pieces := []string{"```", "```python", "```py", "```cpp", "\n", "\r\n", " ", "\t", "\x1c", "\u00a0",
		"\u2003", "cpp", "Java", "é", "中", "x = 1", "c++", "3", "print(1)", "_", "```python\n", "``", "`"}
	r := rand.New(rand.NewPCG(3, 4))
	var corpus []string
	for range 4000 {
		var b strings.Builder
		for range r.IntN(10) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		corpus = append(corpus, b.String())
	}
	in, _ := json.Marshal(corpus)
	type answer struct {
		code  string
		ok    bool
		prime string
	}
	var raw [][3]json.RawMessage
	if err := json.Unmarshal([]byte(runPython(t, extractOracle, string(in))), &raw); err != nil {
		t.Fatal(err)
	}
	res := make([]answer, len(raw))
	for i, x := range raw {
		if json.Unmarshal(x[0], &res[i].code) != nil || json.Unmarshal(x[1], &res[i].ok) != nil ||
			json.Unmarshal(x[2], &res[i].prime) != nil {
			t.Fatalf("bad oracle answer %d: %s", i, x)
		}
	}
	for i, c := range corpus {
		code, _, ok := Extract(c, RuleVerl)
		if code != res[i].code || ok != res[i].ok {
			t.Errorf("Extract(%q, RuleVerl) = %q, %v, want %q, %v", c, code, ok, res[i].code, res[i].ok)
		}
		if code, _, _ := Extract(c, RulePRIME); code != res[i].prime {
			t.Errorf("Extract(%q, RulePRIME) = %q, want %q", c, code, res[i].prime)
		}
	}
}
