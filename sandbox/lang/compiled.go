package lang

import "path/filepath"

// Rust, D and Verilog: a compile, then the built program.

func rustCode(body string) string {
	return "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut " +
		"s).unwrap();\n" +
		"let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    let (a, b) = (v[0], v[1]);\n   " +
		"" +
		body + "\n}\n"
}

func verilogTB(body string) string {
	return "module tb;\n  initial begin\n    " + body + "\n    $finish;\n  end\nendmodule\n"
}

func init() {
	Register(&Language{
		Name: "rust", Compiled: true,
		Fences: []string{"rust", "rs"},
		Tools:  []Tool{{"rustc", "rustc"}},
		Runner: &Runner{
			Source: "solution.rs",
			Compile: func(h Host, _ Args) []string {
				// Optimised, but with the overflow checks and debug
				// assertions of the plain `rustc file.rs` the server runs,
				// so that the same programs panic.
				return []string{h.Tool("rustc"), "-C", "opt-level=2", "-C", "overflow-checks=on",
					"-C", "debug-assertions=on", "solution.rs", "-o", "test"}
			},
			Run: built("test"),
		},
		Cases: func() []Case {
			return []Case{
				sumCase("rust", "correct", rustCode("println!(\"{}\", a + b);"), wantT),
				sumCase("rust", "wrong", rustCode("println!(\"{}\", a * b);"), wantF),
				sumCase(
					"rust",
					"runtime",
					rustCode("let v: Vec<i64> = Vec::new(); println!(\"{}\", v[(a + b) as usize]);"),
					wantRE,
				),
				timeoutCase(
					"rust",
					rustCode("let mut x = a; loop { x = x.wrapping_add(b); if x == 0 { println!(\"{}\", x); } }"),
					1,
				),
				sumCase("rust", "compile", rustCode("println!(\"{}\", a + c);"), wantCE),
			}
		},
	})
	// SandboxFusion builds D_ut with `dmd file.d -unittest -of=test`;
	// ldmd2 is LDC's driver that takes dmd's options (Debian has no dmd).
	Register(&Language{
		Name: "D_ut", Compiled: true,
		Fences: []string{"d", "dlang"},
		Tools:  []Tool{{"ldmd2", "ldc"}},
		Slow:   true,
		Runner: &Runner{
			Source: "solution.d",
			Compile: func(h Host, _ Args) []string {
				return []string{h.Tool("ldmd2"), "solution.d", "-unittest", "-of=test"}
			},
			Run: built("test"),
		},
		Cases: func() []Case {
			const dRead = "import std.stdio;\n\nvoid main() {\n    long a, b;\n    readf(\" %d %d\", &a, &b);\n    "
			return []Case{
				sumCase("D_ut", "correct", dRead+"writeln(a + b);\n}\n", wantT),
				sumCase("D_ut", "wrong", dRead+"writeln(a * b);\n}\n", wantF),
				{
					Name:     "D_ut/unittest",
					Language: "D_ut",
					Code:     "unittest\n{\n    assert(0 == 1);\n}\nvoid main() {}\n",
					Want:     wantRE,
				},
				{
					Name:     "D_ut/unittest-pass",
					Language: "D_ut",
					Code:     "unittest\n{\n    assert(1 == 1);\n}\nvoid main() {}\n",
					Want:     wantT,
				},
				timeoutCase("D_ut", "void main() {\n    ulong x;\n    while (true) { x++; }\n}\n", 1),
				sumCase("D_ut", "compile", "void main() { undefinedName(); }\n", wantCE),
			}
		},
	})
	// verilog-eval's commands, as SandboxFusion runs them: the testbench
	// module is tb.
	Register(&Language{
		Name: "verilog", Compiled: true,
		Fences: []string{"verilog", "v", "sv", "systemverilog"},
		Tools:  []Tool{{"iverilog", "iverilog"}, {"vvp", "iverilog"}},
		Slow:   true,
		Runner: &Runner{
			RunProgram: "vvp",
			Source:     "solution.sv",
			Compile: func(h Host, _ Args) []string {
				return []string{
					h.Tool("iverilog"),
					"-Wall",
					"-Winfloop",
					"-Wno-timescale",
					"-g2012",
					"-s",
					"tb",
					"-o",
					"test.vvp",
					"solution.sv",
				}
			},
			Run: func(h Host, a Args) []string {
				return []string{h.Tool("vvp"), "-n", filepath.Join(a.BinDir, "test.vvp")}
			},
		},
		Cases: func() []Case {
			out := optStr("5\n")
			return []Case{
				{
					Name:     "verilog/correct",
					Language: "verilog",
					Code:     verilogTB("$display(\"%0d\", 2 + 3);"),
					Expected: out,
					Want:     wantT,
				},
				{
					Name:     "verilog/wrong",
					Language: "verilog",
					Code:     verilogTB("$display(\"%0d\", 2 * 3);"),
					Expected: out,
					Want:     wantF,
				},
				{Name: "verilog/fatal", Language: "verilog", Code: verilogTB("$fatal(1, \"boom\");"), Expected: out, Want: wantRE},
				{
					Name:       "verilog/timeout",
					Language:   "verilog",
					Code:       "module tb;\n  reg clk = 0;\n  always #1 clk = ~clk;\nendmodule\n",
					Expected:   out,
					RunTimeout: 1,
					Want:       wantTO,
				},
				{
					Name:     "verilog/compile",
					Language: "verilog",
					Code:     "module tb;\n  initial begin\n    x = ;\n  end\nendmodule\n",
					Expected: out,
					Want:     wantCE,
				},
			}
		},
	})
}
