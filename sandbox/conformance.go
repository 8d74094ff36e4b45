package sandbox

import "github.com/verl-score/verl-score/sandboxclient"

// ConformanceCase is one program with its input, expected output and the
// verdict any SandboxFusion-compatible sandbox must give it. The same
// matrix runs through Local directly and through `verl-score serve`.
type ConformanceCase struct {
	Name       string
	Language   string
	Code       string
	Stdin      *string // nil sends "stdin": null
	Expected   *string // nil: any finished run passes (assert-style cases)
	RunTimeout float64 // seconds; 0 means 10
	MemoryMB   int     // memory_limit_MB; 0 means 1024
	Want       sandboxclient.Verdict
}

// Request is the request the case sends: 1024 MB and a compile timeout of
// 30 s (verl sends 10 s; the matrix runs many compiles at once on small
// test machines and is about verdicts, not compile speed).
func (c ConformanceCase) Request() *sandboxclient.Request {
	rt := c.RunTimeout
	if rt == 0 {
		rt = 10
	}
	mem := c.MemoryMB
	if mem == 0 {
		mem = 1024
	}
	return &sandboxclient.Request{
		CompileTimeout: 30,
		RunTimeout:     rt,
		Code:           c.Code,
		Stdin:          c.Stdin,
		MemoryLimitMB:  mem,
		Language:       c.Language,
		Files:          map[string]string{},
		FetchFiles:     []string{},
	}
}

// Judge gives the verdict of resp (or err) for this case.
func (c ConformanceCase) Judge(resp *sandboxclient.Response, err error) sandboxclient.CaseResult {
	in, exp := "", ""
	if c.Stdin != nil {
		in = *c.Stdin
	}
	if c.Expected != nil {
		exp = *c.Expected
	}
	return sandboxclient.Judge(0, in, exp, c.Expected, resp, err)
}

func optStr(s string) *string { return &s }

// LanguageCases returns, for every language the local sandbox runs, a
// correct program, a wrong answer, a runtime error, a timeout (run timeout
// 1 s) and, for compiled languages, a compile error.
func LanguageCases() []ConformanceCase {
	const (
		T  = sandboxclient.VerdictTrue
		F  = sandboxclient.VerdictFalse
		RE = sandboxclient.VerdictRuntimeError
		TO = sandboxclient.VerdictTimeout
		CE = sandboxclient.VerdictCompileError
	)
	in, out := optStr("2 3\n"), optStr("5\n")
	return []ConformanceCase{
		{Name: "python/correct", Language: "python", Code: "a, b = map(int, input().split())\nprint(a + b)\n", Stdin: in, Expected: out, Want: T},
		{Name: "python/wrong", Language: "python", Code: "a, b = map(int, input().split())\nprint(a - b)\n", Stdin: in, Expected: out, Want: F},
		{Name: "python/runtime", Language: "python", Code: "raise ValueError('boom')\n", Stdin: in, Expected: out, Want: RE},
		{Name: "python/timeout", Language: "python", Code: "while True:\n    pass\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "python/syntax", Language: "python", Code: "def f(:\n", Stdin: in, Expected: out, Want: RE},
		{Name: "python/null-stdin", Language: "python", Code: "import sys\nprint(repr(sys.stdin.read()))\n", Expected: optStr("''"), Want: T},

		{Name: "cpp/correct", Language: "cpp", Code: "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n", Stdin: in, Expected: out, Want: T},
		{Name: "cpp/wrong", Language: "cpp", Code: "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a*b<<std::endl;}\n", Stdin: in, Expected: out, Want: F},
		{Name: "cpp/runtime", Language: "cpp", Code: "#include <cassert>\nint main(){int x=0; assert(x==1); return 0;}\n", Stdin: in, Expected: out, Want: RE},
		{Name: "cpp/timeout", Language: "cpp", Code: "int main(){volatile unsigned long x=0; for(;;) x++;}\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "cpp/compile", Language: "cpp", Code: "int main(){ return undefined_name; }\n", Stdin: in, Expected: out, Want: CE},

		{Name: "perl/correct", Language: "perl", Code: "my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: T},
		{Name: "perl/wrong", Language: "perl", Code: "my ($a, $b) = split ' ', <STDIN>;\nprint $a * $b, \"\\n\";\n", Stdin: in, Expected: out, Want: F},
		{Name: "perl/runtime", Language: "perl", Code: "die \"boom\\n\";\n", Stdin: in, Expected: out, Want: RE},
		{Name: "perl/timeout", Language: "perl", Code: "1 while 1;\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "perl/syntax", Language: "perl", Code: "my $x = ;\n", Stdin: in, Expected: out, Want: RE},

		{Name: "typescript/correct", Language: "typescript", Code: "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b);\n", Stdin: in, Expected: out, Want: T},
		{Name: "typescript/wrong", Language: "typescript", Code: "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a * b);\n", Stdin: in, Expected: out, Want: F},
		{Name: "typescript/runtime", Language: "typescript", Code: "throw new Error('boom');\n", Stdin: in, Expected: out, Want: RE},
		{Name: "typescript/timeout", Language: "typescript", Code: "while (true) {}\n", Stdin: in, Expected: out, RunTimeout: 2, Want: TO},

		{Name: "pytest/pass", Language: "pytest", Code: "def add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(2, 3) == 5\n", Want: T},
		{Name: "pytest/fail", Language: "pytest", Code: "def add(a, b):\n    return a - b\n\ndef test_add():\n    assert add(2, 3) == 5\n", Want: RE},
		{Name: "pytest/timeout", Language: "pytest", Code: "def test_forever():\n    while True:\n        pass\n", RunTimeout: 2, Want: TO},

		{Name: "php/correct", Language: "php", Code: "<?php\n[$a, $b] = array_map('intval', explode(' ', trim(fgets(STDIN))));\necho $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: T},
		{Name: "php/no-tag", Language: "php", Code: "\n  [$a, $b] = array_map('intval', explode(' ', trim(fgets(STDIN))));\necho $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: T},
		{Name: "php/wrong", Language: "php", Code: "<?php\necho 6, \"\\n\";\n", Stdin: in, Expected: out, Want: F},
		{Name: "php/runtime", Language: "php", Code: "<?php\nthrow new Exception('boom');\n", Stdin: in, Expected: out, Want: RE},
		{Name: "php/timeout", Language: "php", Code: "<?php\nwhile (true) {}\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "php/syntax", Language: "php", Code: "<?php\necho (;\n", Stdin: in, Expected: out, Want: RE},

		{Name: "ruby/correct", Language: "ruby", Code: "a, b = gets.split.map(&:to_i)\nputs a + b\n", Stdin: in, Expected: out, MemoryMB: -1, Want: T},
		{Name: "ruby/wrong", Language: "ruby", Code: "a, b = gets.split.map(&:to_i)\nputs a * b\n", Stdin: in, Expected: out, MemoryMB: -1, Want: F},
		{Name: "ruby/runtime", Language: "ruby", Code: "raise 'boom'\n", Stdin: in, Expected: out, MemoryMB: -1, Want: RE},
		{Name: "ruby/timeout", Language: "ruby", Code: "loop {}\n", Stdin: in, Expected: out, RunTimeout: 1, MemoryMB: -1, Want: TO},
		{Name: "ruby/syntax", Language: "ruby", Code: "def f(\n", Stdin: in, Expected: out, MemoryMB: -1, Want: RE},

		// Under memory_limit_MB, SandboxFusion limits the stack to it too,
		// and Ruby cannot start in that address space: it segfaults there.
		{Name: "ruby/memory-limit", Language: "ruby", Code: "puts 5\n", Stdin: in, Expected: out, Want: RE},

		{Name: "lua/correct", Language: "lua", Code: "local a, b = io.read('n', 'n')\nprint(a + b)\n", Stdin: in, Expected: out, Want: T},
		{Name: "lua/wrong", Language: "lua", Code: "local a, b = io.read('n', 'n')\nprint(a * b)\n", Stdin: in, Expected: out, Want: F},
		{Name: "lua/runtime", Language: "lua", Code: "error('boom')\n", Stdin: in, Expected: out, Want: RE},
		{Name: "lua/timeout", Language: "lua", Code: "while true do end\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "lua/syntax", Language: "lua", Code: "local x = \n", Stdin: in, Expected: out, Want: RE},

		{Name: "go/correct", Language: "go", Code: "package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a+b)}\n", Stdin: in, Expected: out, Want: T},
		{Name: "go/wrong", Language: "go", Code: "package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a*a+b)}\n", Stdin: in, Expected: out, Want: F},
		{Name: "go/runtime", Language: "go", Code: "package main\nfunc main(){ var m map[string]int; m[\"x\"] = 1 }\n", Stdin: in, Expected: out, Want: RE},
		{Name: "go/timeout", Language: "go", Code: "package main\nfunc main(){ x := 0; for { x++ } }\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "go/compile", Language: "go", Code: "package main\nfunc main() { x := 1 }\n", Stdin: in, Expected: out, Want: CE},

		{Name: "go_test/pass", Language: "go_test", Code: goTestCode("if add(2, 3) != 5 { t.Fatal(\"wrong\") }"), Stdin: optStr(""), Want: T},
		{Name: "go_test/fail", Language: "go_test", Code: goTestCode("if add(2, 3) != 6 { t.Fatal(\"wrong\") }"), Stdin: optStr(""), Want: RE},
		// go test builds and runs in one step upstream: a build failure is
		// a failed run, not a compile error.
		{Name: "go_test/build", Language: "go_test", Code: goTestCode("y := 1"), Stdin: optStr(""), Want: RE},
		{Name: "go_test/timeout", Language: "go_test", Code: goTestCode("for add(1, 1) == 2 {}"), Stdin: optStr(""), RunTimeout: 1, Want: TO},

		{Name: "java/correct", Language: "java", Code: javaCode("System.out.println(a + b);"), Stdin: in, Expected: out, Want: T},
		{Name: "java/wrong", Language: "java", Code: javaCode("System.out.println(a - b);"), Stdin: in, Expected: out, Want: F},
		{Name: "java/runtime", Language: "java", Code: javaCode("int[] x = new int[1]; System.out.println(x[(int) (a + b)]);"), Stdin: in, Expected: out, Want: RE},
		{Name: "java/timeout", Language: "java", Code: javaCode("long x = 0; while (a + b > 0) { x++; }"), Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "java/compile", Language: "java", Code: javaCode("System.out.println(a + c);"), Stdin: in, Expected: out, Want: CE},

		{Name: "nodejs/correct", Language: "nodejs", Code: nodeCode("console.log(a + b);"), Stdin: in, Expected: out, Want: T},
		{Name: "nodejs/wrong", Language: "nodejs", Code: nodeCode("console.log(a * b);"), Stdin: in, Expected: out, Want: F},
		{Name: "nodejs/runtime", Language: "nodejs", Code: nodeCode("throw new Error('boom');"), Stdin: in, Expected: out, Want: RE},
		{Name: "nodejs/timeout", Language: "nodejs", Code: nodeCode("while (a + b > 0) {}"), Stdin: in, Expected: out, RunTimeout: 1, Want: TO},

		{Name: "bash/correct", Language: "bash", Code: "read a b\necho $((a + b))\n", Stdin: in, Expected: out, Want: T},
		{Name: "bash/wrong", Language: "bash", Code: "read a b\necho $((a - b))\n", Stdin: in, Expected: out, Want: F},
		{Name: "bash/runtime", Language: "bash", Code: "read a b\nexit 3\n", Stdin: in, Expected: out, Want: RE},
		{Name: "bash/timeout", Language: "bash", Code: "while :; do :; done\n", Stdin: in, Expected: out, RunTimeout: 1, Want: TO},

		{Name: "rust/correct", Language: "rust", Code: rustCode("println!(\"{}\", a + b);"), Stdin: in, Expected: out, Want: T},
		{Name: "rust/wrong", Language: "rust", Code: rustCode("println!(\"{}\", a * b);"), Stdin: in, Expected: out, Want: F},
		{Name: "rust/runtime", Language: "rust", Code: rustCode("let v: Vec<i64> = Vec::new(); println!(\"{}\", v[(a + b) as usize]);"), Stdin: in, Expected: out, Want: RE},
		{Name: "rust/timeout", Language: "rust", Code: rustCode("let mut x = a; loop { x = x.wrapping_add(b); if x == 0 { println!(\"{}\", x); } }"), Stdin: in, Expected: out, RunTimeout: 1, Want: TO},
		{Name: "rust/compile", Language: "rust", Code: rustCode("println!(\"{}\", a + c);"), Stdin: in, Expected: out, Want: CE},
	}
}

func goTestCode(body string) string {
	return "package add_test\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\nfunc TestAdd(t *testing.T) {\n\t" + body + "\n}\n"
}

func javaCode(body string) string {
	return "import java.util.*;\n\npublic class Main {\n    public static void main(String[] args) {\n" +
		"        Scanner sc = new Scanner(System.in);\n        long a = sc.nextLong(), b = sc.nextLong();\n        " +
		body + "\n    }\n}\n"
}

func nodeCode(body string) string {
	return "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n" + body + "\n"
}

func rustCode(body string) string {
	return "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n" +
		"    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    let (a, b) = (v[0], v[1]);\n    " +
		body + "\n}\n"
}
