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

// The verdicts, short, for the case tables.
const (
	wantT  = sandboxclient.VerdictTrue
	wantF  = sandboxclient.VerdictFalse
	wantRE = sandboxclient.VerdictRuntimeError
	wantTO = sandboxclient.VerdictTimeout
	wantCE = sandboxclient.VerdictCompileError
	wantSE = sandboxclient.VerdictAPIError
)

// LanguageCases returns, for every language the local sandbox runs, a
// correct program, a wrong answer, a runtime error, a timeout (run timeout
// 1 s) and, for compiled languages, a compile error.
func LanguageCases() []ConformanceCase {
	in, out := optStr("2 3\n"), optStr("5\n")
	return []ConformanceCase{
		{Name: "python/correct", Language: "python", Code: "a, b = map(int, input().split())\nprint(a + b)\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "python/wrong", Language: "python", Code: "a, b = map(int, input().split())\nprint(a - b)\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "python/runtime", Language: "python", Code: "raise ValueError('boom')\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "python/timeout", Language: "python", Code: "while True:\n    pass\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "python/syntax", Language: "python", Code: "def f(:\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "python/null-stdin", Language: "python", Code: "import sys\nprint(repr(sys.stdin.read()))\n", Expected: optStr("''"), Want: wantT},

		{Name: "cpp/correct", Language: "cpp", Code: "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "cpp/wrong", Language: "cpp", Code: "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a*b<<std::endl;}\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "cpp/runtime", Language: "cpp", Code: "#include <cassert>\nint main(){int x=0; assert(x==1); return 0;}\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "cpp/timeout", Language: "cpp", Code: "int main(){volatile unsigned long x=0; for(;;) x++;}\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "cpp/compile", Language: "cpp", Code: "int main(){ return undefined_name; }\n", Stdin: in, Expected: out, Want: wantCE},

		{Name: "perl/correct", Language: "perl", Code: "my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "perl/wrong", Language: "perl", Code: "my ($a, $b) = split ' ', <STDIN>;\nprint $a * $b, \"\\n\";\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "perl/runtime", Language: "perl", Code: "die \"boom\\n\";\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "perl/timeout", Language: "perl", Code: "1 while 1;\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "perl/syntax", Language: "perl", Code: "my $x = ;\n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "typescript/correct", Language: "typescript", Code: "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b);\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "typescript/wrong", Language: "typescript", Code: "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a * b);\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "typescript/runtime", Language: "typescript", Code: "throw new Error('boom');\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "typescript/timeout", Language: "typescript", Code: "while (true) {}\n", Stdin: in, Expected: out, RunTimeout: 2, Want: wantTO},

		{Name: "pytest/pass", Language: "pytest", Code: "def add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(2, 3) == 5\n", Want: wantT},
		{Name: "pytest/fail", Language: "pytest", Code: "def add(a, b):\n    return a - b\n\ndef test_add():\n    assert add(2, 3) == 5\n", Want: wantRE},
		{Name: "pytest/timeout", Language: "pytest", Code: "def test_forever():\n    while True:\n        pass\n", RunTimeout: 2, Want: wantTO},

		{Name: "php/correct", Language: "php", Code: "<?php\n[$a, $b] = array_map('intval', explode(' ', trim(fgets(STDIN))));\necho $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "php/no-tag", Language: "php", Code: "\n  [$a, $b] = array_map('intval', explode(' ', trim(fgets(STDIN))));\necho $a + $b, \"\\n\";\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "php/wrong", Language: "php", Code: "<?php\necho 6, \"\\n\";\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "php/runtime", Language: "php", Code: "<?php\nthrow new Exception('boom');\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "php/timeout", Language: "php", Code: "<?php\nwhile (true) {}\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "php/syntax", Language: "php", Code: "<?php\necho (;\n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "ruby/correct", Language: "ruby", Code: "a, b = gets.split.map(&:to_i)\nputs a + b\n", Stdin: in, Expected: out, MemoryMB: -1, Want: wantT},
		{Name: "ruby/wrong", Language: "ruby", Code: "a, b = gets.split.map(&:to_i)\nputs a * b\n", Stdin: in, Expected: out, MemoryMB: -1, Want: wantF},
		{Name: "ruby/runtime", Language: "ruby", Code: "raise 'boom'\n", Stdin: in, Expected: out, MemoryMB: -1, Want: wantRE},
		{Name: "ruby/timeout", Language: "ruby", Code: "loop {}\n", Stdin: in, Expected: out, RunTimeout: 1, MemoryMB: -1, Want: wantTO},
		{Name: "ruby/syntax", Language: "ruby", Code: "def f(\n", Stdin: in, Expected: out, MemoryMB: -1, Want: wantRE},

		// Under memory_limit_MB, SandboxFusion limits the stack to it too,
		// and Ruby cannot start in that address space: it segfaults there.
		{Name: "ruby/memory-limit", Language: "ruby", Code: "puts 5\n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "lua/correct", Language: "lua", Code: "local a, b = io.read('n', 'n')\nprint(a + b)\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "lua/wrong", Language: "lua", Code: "local a, b = io.read('n', 'n')\nprint(a * b)\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "lua/runtime", Language: "lua", Code: "error('boom')\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "lua/timeout", Language: "lua", Code: "while true do end\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "lua/syntax", Language: "lua", Code: "local x = \n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "go/correct", Language: "go", Code: "package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a+b)}\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "go/wrong", Language: "go", Code: "package main\nimport \"fmt\"\nfunc main(){var a,b int; fmt.Scan(&a,&b); fmt.Println(a*a+b)}\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "go/runtime", Language: "go", Code: "package main\nfunc main(){ var m map[string]int; m[\"x\"] = 1 }\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "go/timeout", Language: "go", Code: "package main\nfunc main(){ x := 0; for { x++ } }\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "go/compile", Language: "go", Code: "package main\nfunc main() { x := 1 }\n", Stdin: in, Expected: out, Want: wantCE},

		{Name: "go_test/pass", Language: "go_test", Code: goTestCode("if add(2, 3) != 5 { t.Fatal(\"wrong\") }"), Stdin: optStr(""), Want: wantT},
		{Name: "go_test/fail", Language: "go_test", Code: goTestCode("if add(2, 3) != 6 { t.Fatal(\"wrong\") }"), Stdin: optStr(""), Want: wantRE},
		// go test builds and runs in one step upstream: a build failure is
		// a failed run, not a compile error.
		{Name: "go_test/build", Language: "go_test", Code: goTestCode("y := 1"), Stdin: optStr(""), Want: wantRE},
		{Name: "go_test/timeout", Language: "go_test", Code: goTestCode("for add(1, 1) == 2 {}"), Stdin: optStr(""), RunTimeout: 1, Want: wantTO},

		{Name: "java/correct", Language: "java", Code: javaCode("System.out.println(a + b);"), Stdin: in, Expected: out, Want: wantT},
		{Name: "java/wrong", Language: "java", Code: javaCode("System.out.println(a - b);"), Stdin: in, Expected: out, Want: wantF},
		{Name: "java/runtime", Language: "java", Code: javaCode("int[] x = new int[1]; System.out.println(x[(int) (a + b)]);"), Stdin: in, Expected: out, Want: wantRE},
		{Name: "java/timeout", Language: "java", Code: javaCode("long x = 0; while (a + b > 0) { x++; }"), Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "java/compile", Language: "java", Code: javaCode("System.out.println(a + c);"), Stdin: in, Expected: out, Want: wantCE},

		{Name: "nodejs/correct", Language: "nodejs", Code: nodeCode("console.log(a + b);"), Stdin: in, Expected: out, Want: wantT},
		{Name: "nodejs/wrong", Language: "nodejs", Code: nodeCode("console.log(a * b);"), Stdin: in, Expected: out, Want: wantF},
		{Name: "nodejs/runtime", Language: "nodejs", Code: nodeCode("throw new Error('boom');"), Stdin: in, Expected: out, Want: wantRE},
		{Name: "nodejs/timeout", Language: "nodejs", Code: nodeCode("while (a + b > 0) {}"), Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},

		{Name: "bash/correct", Language: "bash", Code: "read a b\necho $((a + b))\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "bash/wrong", Language: "bash", Code: "read a b\necho $((a - b))\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "bash/runtime", Language: "bash", Code: "read a b\nexit 3\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "bash/timeout", Language: "bash", Code: "while :; do :; done\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},

		{Name: "rust/correct", Language: "rust", Code: rustCode("println!(\"{}\", a + b);"), Stdin: in, Expected: out, Want: wantT},
		{Name: "rust/wrong", Language: "rust", Code: rustCode("println!(\"{}\", a * b);"), Stdin: in, Expected: out, Want: wantF},
		{Name: "rust/runtime", Language: "rust", Code: rustCode("let v: Vec<i64> = Vec::new(); println!(\"{}\", v[(a + b) as usize]);"), Stdin: in, Expected: out, Want: wantRE},
		{Name: "rust/timeout", Language: "rust", Code: rustCode("let mut x = a; loop { x = x.wrapping_add(b); if x == 0 { println!(\"{}\", x); } }"), Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "rust/compile", Language: "rust", Code: rustCode("println!(\"{}\", a + c);"), Stdin: in, Expected: out, Want: wantCE},
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

// SlowLanguageCases is the matrix of LanguageCases for the languages whose
// toolchains are large or slow to start (R, Racket, D, Verilog and the JVM
// ones: Scala, Kotlin script, JUnit) and jest. Their tests carry the slowlangs build
// tag; .ci/run runs them apart from the README's test command.
func SlowLanguageCases() []ConformanceCase {
	in, out := optStr("2 3\n"), optStr("5\n")
	const rRead = "x <- scan(file(\"stdin\"), quiet = TRUE)\n"
	const rkt = "#lang racket\n(define a (read))\n(define b (read))\n"
	const dRead = "import std.stdio;\n\nvoid main() {\n    long a, b;\n    readf(\" %d %d\", &a, &b);\n    "
	const kts = "val (a, b) = readLine()!!.trim().split(\" \").map { it.toLong() }\n"
	return []ConformanceCase{
		{Name: "R/correct", Language: "R", Code: rRead + "cat(x[1] + x[2], \"\\n\", sep = \"\")\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "R/wrong", Language: "R", Code: rRead + "cat(x[1] * x[2], \"\\n\", sep = \"\")\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "R/runtime", Language: "R", Code: "stop(\"boom\")\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "R/assert", Language: "R", Code: "stopifnot(isTRUE(all.equal(1, 0)))\n", Want: wantRE},
		{Name: "R/timeout", Language: "R", Code: "repeat {}\n", Stdin: in, Expected: out, RunTimeout: 2, Want: wantTO},
		{Name: "R/syntax", Language: "R", Code: "x <- (\n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "racket/correct", Language: "racket", Code: rkt + "(displayln (+ a b))\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "racket/wrong", Language: "racket", Code: rkt + "(displayln (* a b))\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "racket/runtime", Language: "racket", Code: "#lang racket\n(error \"boom\")\n", Stdin: in, Expected: out, Want: wantRE},
		{Name: "racket/rackunit", Language: "racket", Code: "#lang racket\n(require rackunit)\n(check-equal? (string-length \"abc\") 4)\n", Want: wantT},
		{Name: "racket/timeout", Language: "racket", Code: "#lang racket\n(let loop () (loop))\n", Stdin: in, Expected: out, RunTimeout: 3, Want: wantTO},
		{Name: "racket/syntax", Language: "racket", Code: "#lang racket\n(define\n", Stdin: in, Expected: out, Want: wantRE},

		{Name: "D_ut/correct", Language: "D_ut", Code: dRead + "writeln(a + b);\n}\n", Stdin: in, Expected: out, Want: wantT},
		{Name: "D_ut/wrong", Language: "D_ut", Code: dRead + "writeln(a * b);\n}\n", Stdin: in, Expected: out, Want: wantF},
		{Name: "D_ut/unittest", Language: "D_ut", Code: "unittest\n{\n    assert(0 == 1);\n}\nvoid main() {}\n", Want: wantRE},
		{Name: "D_ut/unittest-pass", Language: "D_ut", Code: "unittest\n{\n    assert(1 == 1);\n}\nvoid main() {}\n", Want: wantT},
		{Name: "D_ut/timeout", Language: "D_ut", Code: "void main() {\n    ulong x;\n    while (true) { x++; }\n}\n", Stdin: in, Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "D_ut/compile", Language: "D_ut", Code: "void main() { undefinedName(); }\n", Stdin: in, Expected: out, Want: wantCE},

		{Name: "verilog/correct", Language: "verilog", Code: verilogTB("$display(\"%0d\", 2 + 3);"), Expected: out, Want: wantT},
		{Name: "verilog/wrong", Language: "verilog", Code: verilogTB("$display(\"%0d\", 2 * 3);"), Expected: out, Want: wantF},
		{Name: "verilog/fatal", Language: "verilog", Code: verilogTB("$fatal(1, \"boom\");"), Expected: out, Want: wantRE},
		{Name: "verilog/timeout", Language: "verilog", Code: "module tb;\n  reg clk = 0;\n  always #1 clk = ~clk;\nendmodule\n", Expected: out, RunTimeout: 1, Want: wantTO},
		{Name: "verilog/compile", Language: "verilog", Code: "module tb;\n  initial begin\n    x = ;\n  end\nendmodule\n", Expected: out, Want: wantCE},

		{Name: "scala/correct", Language: "scala", Code: scalaCode("println(a + b)"), Stdin: in, Expected: out, RunTimeout: 20, Want: wantT},
		{Name: "scala/wrong", Language: "scala", Code: scalaCode("println(a * b)"), Stdin: in, Expected: out, RunTimeout: 20, Want: wantF},
		{Name: "scala/runtime", Language: "scala", Code: scalaCode("assert(a == b)"), Stdin: in, Expected: out, RunTimeout: 20, Want: wantRE},
		{Name: "scala/timeout", Language: "scala", Code: scalaCode("while (a + b > 0) {}"), Stdin: in, Expected: out, RunTimeout: 3, Want: wantTO},
		{Name: "scala/compile", Language: "scala", Code: scalaCode("println(a + c)"), Stdin: in, Expected: out, Want: wantCE},
		// SandboxFusion refuses code without an object before compiling.
		{Name: "scala/no-object", Language: "scala", Code: "class Main {}\n", Stdin: in, Expected: out, Want: wantSE},

		{Name: "kotlin_script/correct", Language: "kotlin_script", Code: kts + "println(a + b)\n", Stdin: in, Expected: out, RunTimeout: 40, Want: wantT},
		{Name: "kotlin_script/wrong", Language: "kotlin_script", Code: kts + "println(a * b)\n", Stdin: in, Expected: out, RunTimeout: 40, Want: wantF},
		{Name: "kotlin_script/runtime", Language: "kotlin_script", Code: kts + "if (a != b) throw Exception(\"boom\")\n", Stdin: in, Expected: out, RunTimeout: 40, Want: wantRE},
		{Name: "kotlin_script/timeout", Language: "kotlin_script", Code: kts + "while (a + b > 0) {}\n", Stdin: in, Expected: out, RunTimeout: 8, Want: wantTO},
		// A script is compiled in its one step: a bad one fails the run.
		{Name: "kotlin_script/syntax", Language: "kotlin_script", Code: "val x = \n", Stdin: in, Expected: out, RunTimeout: 40, Want: wantRE},

		{Name: "jest/pass", Language: "jest", Code: jestCode("3"), RunTimeout: 30, Want: wantT},
		{Name: "jest/fail", Language: "jest", Code: jestCode("4"), RunTimeout: 30, Want: wantRE},
		{Name: "jest/timeout", Language: "jest", Code: jestCode("3); while (add(1, 2) === 3) {}; expect(0"), RunTimeout: 3, Want: wantTO},
		{Name: "jest/syntax", Language: "jest", Code: "test('x', () => { expect(1).toBe(1) ", RunTimeout: 30, Want: wantRE},

		{Name: "junit/pass", Language: "junit", Code: junitCode("assertEquals(3, Adder.add(1, 2));"), RunTimeout: 20, Want: wantT},
		{Name: "junit/fail", Language: "junit", Code: junitCode("assertEquals(4, Adder.add(1, 2));"), RunTimeout: 20, Want: wantRE},
		{Name: "junit/timeout", Language: "junit", Code: junitCode("while (Adder.add(1, 2) == 3) {}"), RunTimeout: 3, Want: wantTO},
		{Name: "junit/compile", Language: "junit", Code: junitCode("assertEquals(3, undefinedName);"), Want: wantCE},
	}
}

func verilogTB(body string) string {
	return "module tb;\n  initial begin\n    " + body + "\n    $finish;\n  end\nendmodule\n"
}

func scalaCode(body string) string {
	return "object Main {\n  def main(args: Array[String]): Unit = {\n" +
		"    val Array(a, b) = scala.io.StdIn.readLine().trim.split(\" \").map(_.toLong)\n    " + body + "\n  }\n}\n"
}

func junitCode(stmt string) string {
	return "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n\n" +
		"public class Adder {\n    public static int add(int a, int b) { return a + b; }\n}\n\n" +
		"class AdderTest {\n    @Test\n    void adds() {\n        " + stmt + "\n    }\n}\n"
}

func jestCode(want string) string {
	return "import { expect, test } from '@jest/globals';\n\nfunction add(a: number, b: number): number { return a + b; }\n\n" +
		"test('adds', () => {\n    expect(add(1, 2)).toBe(" + want + ");\n});\n"
}
