//go:build slowlangs && linux

// The tests of the languages with large or slow toolchains; .ci/run runs
// them with -tags slowlangs after the README's test command.

package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandboxclient"
)

func TestSlowLanguageCases(t *testing.T) {
	serveMatrix(t, lang.CasesOf(true))
}

const (
	sfSuccess  = sandboxclient.StatusSuccess
	sfFailed   = sandboxclient.StatusFailed
	sfFinished = sandboxclient.StepFinished
	sfTLE      = sandboxclient.StepTimeLimitExceeded
)

// slowSFRunnerCases are SandboxFusion's runner tests of these languages
// (sandbox/tests/runners/test_<language>.py there), with its answers.
var slowSFRunnerCases = []sfRunnerCase{
	{name: "R print", language: "R", code: "\nmyString <- \"Hello, World!\"\nprint ( myString )\n    ", runTimeout: 5,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Hello, World!"},
	{
		name:       "R timeout",
		language:   "R",
		code:       "\nSys.sleep(5)\nprint(\"Finished waiting for 5 seconds.\")\n    ",
		runTimeout: 5,
		status:     sfFailed,
		runStatus:  sfTLE,
	},
	{name: "R assertion success", language: "R", code: "\nstopifnot(isTRUE(all.equal(0, 0)))\n    ",
		status: sfSuccess, runStatus: sfFinished},
	{name: "R assertion error", language: "R", code: "\nstopifnot(isTRUE(all.equal(1, 0)))\n    ",
		status: sfFailed, runStatus: sfFinished, outputHas: "Execution halted"},

	{name: "scala print", language: "scala", code: scalaObjectMain("println(\"Hello, World!\")", ": Unit"), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Hello, World!"},
	{
		name:       "scala timeout",
		language:   "scala",
		code:       scalaObjectMain("Thread.sleep(5 * 1000)\n        println(\"Hello, World!\")", ": Unit"),
		runTimeout: 5,
		status:     sfFailed,
		runStatus:  sfTLE,
	},
	{
		name:       "scala assertion success",
		language:   "scala",
		code:       scalaObjectMain("assert((0l) == (0l));", ""),
		runTimeout: 20,
		status:     sfSuccess,
		runStatus:  sfFinished,
	},
	{name: "scala App assertion success", language: "scala", code: scalaApp("0l"), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished},
	{name: "scala assertion error", language: "scala", code: scalaObjectMain("assert((1l) == (0l));", ""), runTimeout: 20,
		status: sfFailed, runStatus: sfFinished, outputHas: "assertion failed"},
	{name: "scala App assertion error", language: "scala", code: scalaApp("1l"), runTimeout: 20,
		status: sfFailed, runStatus: sfFinished},

	{name: "kotlin_script print", language: "kotlin_script", code: "\nprintln(\"Hello, World!\")\n    ", runTimeout: 30,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Hello, World!"},
	{name: "kotlin_script timeout", language: "kotlin_script",
		code:       "\nfun main() {\n    println(\"Starting...\")\n    Thread.sleep(2000)\n    println(\"Finished!\")\n}\n\nmain()\n    ",
		runTimeout: 1, status: sfFailed, runStatus: sfTLE},
	{name: "kotlin_script assertion success", language: "kotlin_script", code: kotlinMinCost("0"), runTimeout: 40,
		status: sfSuccess, runStatus: sfFinished},
	{name: "kotlin_script assertion error", language: "kotlin_script", code: kotlinMinCost("1"), runTimeout: 40,
		status: sfFailed, runStatus: sfFinished, outputHas: "java.lang.Exception"},

	{name: "racket print", language: "racket", code: "\n#lang racket\n\n(display \"Hello, World!\")\n    ", runTimeout: 5,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Hello, World!"},
	{
		name:       "racket timeout",
		language:   "racket",
		code:       "\n#lang racket\n\n(display \"Starting sleep...\")\n(sleep 10)\n(display \"Sleep complete!\")\n    ",
		runTimeout: 5,
		status:     sfFailed,
		runStatus:  sfTLE,
	},
	{name: "racket assertion success", language: "racket",
		code: "\n#lang racket\n\n(define (strlen string)\n  (string-length string))\n\n(require rackunit)\n\n(define (test-humaneval)\n" +
			"  (let (( candidate strlen))\n    (check-within (candidate \"\") 0 0.001)\n    (check-within (candidate \"x\") 1 0.001)\n" +
			"    (check-within (candidate \"asdasnakj\") 9 0.001)\n))\n\n(test-humaneval)\n    ",
		status: sfSuccess, runStatus: sfFinished},

	{
		name:       "D_ut print",
		language:   "D_ut",
		code:       "\nimport std.stdio; \n \nvoid main(string[] args) { \n   writeln(\"Hello, World!\"); \n}\n    ",
		runTimeout: 5,
		status:     sfSuccess,
		runStatus:  sfFinished,
		stdoutHas:  "Hello, World!",
	},
	{name: "D_ut timeout", language: "D_ut",
		code:       "\nimport core.thread;\nimport std.stdio;\n\nvoid sleepSeconds() {\n    Thread.sleep( dur!(\"seconds\")( 5 ) );\n}\n\nvoid main() {\n    sleepSeconds();\n    writeln(\"5 seconds have passed.\");\n}\n    ",
		runTimeout: 1, status: sfFailed, runStatus: sfTLE},
	{name: "D_ut assertion success", language: "D_ut", code: "\nunittest\n{\n    assert(0 == 0);\n}\nvoid main(){}\n    ",
		status: sfSuccess, runStatus: sfFinished},
	{name: "D_ut assertion error", language: "D_ut", code: "\nunittest\n{\n    assert(0 == 1);\n}\nvoid main(){}\n    ",
		status: sfFailed, runStatus: sfFinished},

	{name: "junit pass", language: "junit", code: phoneNumberTests("3", "6"), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished, compileStatus: sfFinished},
	{name: "junit fail", language: "junit", code: phoneNumberTests("9", "2"), runTimeout: 20,
		status: sfFailed, runStatus: sfFinished, compileStatus: sfFinished},

	{name: "jest pass", language: "jest", code: minSubArrayLenTests(false), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished, outputHas: "Tests:       3 passed, 3 total"},
	{name: "jest fail", language: "jest", code: minSubArrayLenTests(true), runTimeout: 20,
		status: sfFailed, runStatus: sfFinished, outputHas: "Tests:       2 failed, 1 passed, 3 total"},

	{name: "verilog basic", language: "verilog", code: verilogAndGate("a & b"), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Mismatches: 0 in 4 samples"},
	{name: "verilog wrong module", language: "verilog", code: verilogAndGate("a | b"), runTimeout: 20,
		status: sfSuccess, runStatus: sfFinished, stdoutHas: "Mismatches: 2 in 4 samples"},
}

// minSubArrayLenTests is SandboxFusion's jest case; broken returns 0.
func minSubArrayLenTests(broken bool) string {
	body := "    let n = nums.length;\n    let minLength = Infinity;\n    let sum = 0;\n    let start = 0;\n" +
		"    for (let end = 0; end < n; end++) {\n        sum += nums[end];\n        while (sum >= target) {\n" +
		"            minLength = Math.min(minLength, end - start + 1);\n            sum -= nums[start];\n            start++;\n" +
		"        }\n    }\n    return minLength === Infinity ? 0 : minLength;\n"
	if broken {
		body = "    return 0\n"
	}
	return "\nimport { describe, expect, test } from '@jest/globals';\n\nfunction MinSubArrayLen(target: number, nums: number[]): number {\n" + body + "}\n\n" +
		"describe('MinSubArrayLen', () => {\n    test('finds minimum length of a subarray with sum >= target', () => {\n" +
		"        expect(MinSubArrayLen(7, [2, 3, 1, 2, 4, 3])).toBe(2);\n        expect(MinSubArrayLen(15, [1, 2, 3, 4, 5])).toBe(5);\n" +
		"        expect(MinSubArrayLen(4, [1, 4, 4])).toBe(1);\n        expect(MinSubArrayLen(11, [1, 1, 1, 1, 1, 1, 1, 1])).toBe(0);\n    });\n\n" +
		"    test('returns 0 if no such subarray exists', () => {\n        expect(MinSubArrayLen(100, [1, 2, 3, 4, 5])).toBe(0);\n" +
		"        expect(MinSubArrayLen(7, [2, 1])).toBe(0);\n    });\n\n    test('works with single element array', () => {\n" +
		"        expect(MinSubArrayLen(3, [3])).toBe(1);\n        expect(MinSubArrayLen(3, [1])).toBe(0);\n    });\n});\n"
}

func scalaObjectMain(body, unit string) string {
	return "\nobject HelloWorld {\n    def main(args: Array[String])" + unit + " = {\n        " + body + "\n    }\n}\n    "
}

func scalaApp(left string) string {
	return "\n    object Main extends App {\n        def foo() = {\n            assert((" + left + ") == (0l));\n        }\n\n        foo()\n    }\n        "
}

func kotlinMinCost(want string) string {
	return "\nfun minCost() : Int {\n    return 0\n}\n\nfun main() {\n    var x : Int = minCost();\n    var y : Int = " + want +
		";\n    if (x != y) {\n        throw Exception(\"Exception -- test case did not pass. x = \" + x)\n    }\n}\n\nmain()\n    "
}

// phoneNumberTests is SandboxFusion's junit case: the formatter breaks
// after index first and second; 3 and 6 are right.
func phoneNumberTests(first, second string) string {
	tests := ""
	for i, c := range [][2]string{{"(987) 654-3210", "9,8,7,6,5,4,3,2,1,0"}, {"(111) 111-1111", "1,1,1,1,1,1,1,1,1,1"},
		{"(123) 456-7890", "1,2,3,4,5,6,7,8,9,0"}, {"(000) 000-0000", "0,0,0,0,0,0,0,0,0,0"}} {
		tests += "\n    @Test\n    void testCreatePhoneNumber" + string(
			rune('2'+i),
		) + "() {\n        assertEquals(\"" + c[0] +
			"\", PhoneNumberCreator.createPhoneNumber(new int[]{" + c[1] + "}));\n    }\n"
	}
	return "\nimport org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n\npublic class PhoneNumberCreator {\n" +
		"    public static String createPhoneNumber(int[] numbers) {\n        StringBuilder phoneNumber = new StringBuilder(\"(\");\n" +
		"        for (int i = 0; i < numbers.length; i++) {\n            if (i == " + first + ") {\n                phoneNumber.append(\") \");\n" +
		"            } else if (i == " + second + ") {\n                phoneNumber.append(\"-\");\n            }\n" +
		"            phoneNumber.append(numbers[i]);\n        }\n        return phoneNumber.toString();\n    }\n}\n\n" +
		"class PhoneNumberCreatorTest {" + tests + "}\n    "
}

// verilogAndGate is a verilog-eval style problem in the shape of
// SandboxFusion's test: a reference module, a testbench tb that drives
// both and counts mismatches, and the solution's top_module.
func verilogAndGate(expr string) string {
	return "`timescale 1 ps/1 ps\nmodule reference_module(input a, input b, output out);\n  assign out = a & b;\nendmodule\n\n" +
		"module tb();\n  reg a, b;\n  wire ref_out, dut_out;\n  integer errors = 0, samples = 0, i;\n" +
		"  reference_module ref_m(.a(a), .b(b), .out(ref_out));\n  top_module dut(.a(a), .b(b), .out(dut_out));\n" +
		"  initial begin\n    for (i = 0; i < 4; i = i + 1) begin\n      {a, b} = i;\n      #1;\n      samples = samples + 1;\n" +
		"      if (ref_out !== dut_out) errors = errors + 1;\n    end\n    $display(\"Mismatches: %1d in %1d samples\", errors, samples);\n" +
		"    $finish;\n  end\nendmodule\n\nmodule top_module(input a, input b, output out);\n  assign out = " + expr + ";\nendmodule\n"
}

func TestSlowSandboxFusionRunnerCases(t *testing.T) {
	serveSFRunnerCases(t, slowSFRunnerCases)
}

// TestSlowRunnersAreContained: a host write in each of these languages is
// refused, as in the others.
func TestSlowRunnersAreContained(t *testing.T) {
	l := newLocal(t, Options{Concurrency: 2})
	needPerRunUser(t, l)
	target := filepath.Join(t.TempDir(), "pwned")
	writers := map[string]string{
		"R": "for (p in c(\"" + target + "\", \"/usr/pwned\", \"/etc/pwned\")) { r <- tryCatch({ writeLines(\"x\", p); \"wrote\" }, " +
			"error = function(e) \"refused\", warning = function(w) \"refused\"); cat(r, p, \"\\n\") }\n",
		"racket": "#lang racket\n(for ([p (list \"" + target + "\" \"/usr/pwned\" \"/etc/pwned\")])\n" +
			"  (with-handlers ([exn:fail? (lambda (e) (printf \"refused ~a\\n\" p))])\n" +
			"    (with-output-to-file p (lambda () (display \"x\")))\n    (printf \"wrote ~a\\n\" p)))\n",
		"kotlin_script": "for (p in listOf(\"" + target + "\", \"/usr/pwned\", \"/etc/pwned\")) {\n" +
			"  try { java.io.File(p).writeText(\"x\"); println(\"wrote \" + p) } catch (e: Exception) { println(\"refused \" + p) }\n}\n",
	}
	checkHostWrites(t, l, writers, target, 40)
}

// TestSlowSandboxFusionCasesAreSlowLanguages: the slow matrix's
// SandboxFusion cases name only slow languages of the registry.
func TestSlowSandboxFusionCasesAreSlowLanguages(t *testing.T) {
	for _, c := range slowSFRunnerCases {
		if l := lang.Get(c.language); l == nil || !l.Runnable() || !l.Slow {
			t.Errorf("case %q: %s is not a slow language of the registry", c.name, c.language)
		}
	}
}
