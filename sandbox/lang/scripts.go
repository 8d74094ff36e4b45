package lang

import "strings"

// The interpreted languages whose runner is `interpreter file`.

// phpSource is SandboxFusion's rule: the code, left-trimmed, opens with
// <?php, added where it does not.
func phpSource(code string) string {
	code = strings.TrimLeft(code, " \t\n\r\v\f")
	if !strings.HasPrefix(code, "<?php") {
		code = "<?php\n" + code
	}
	return code
}

// noMemLimit runs a case without memory_limit_MB.
func noMemLimit(c Case) Case { c.MemoryMB = -1; return c }

func init() {
	Register(&Language{
		Name:   "bash",
		Fences: []string{"bash", "sh", "shell", "zsh", "shellscript"},
		Tools:  []Tool{{"bash", "bash"}},
		Runner: interpreted("bash", "solution.sh"),
		Cases: func() []Case {
			return []Case{
				sumCase("bash", "correct", "read a b\necho $((a + b))\n", wantT),
				sumCase("bash", "wrong", "read a b\necho $((a - b))\n", wantF),
				sumCase("bash", "runtime", "read a b\nexit 3\n", wantRE),
				timeoutCase("bash", "while :; do :; done\n", 1),
			}
		},
	})
	Register(&Language{
		Name:   "perl",
		Fences: []string{"perl", "pl"},
		Tools:  []Tool{{"perl", "perl"}},
		Extras: []string{"libtest-deep-perl", "libdata-compare-perl"},
		Runner: interpreted("perl", "solution.pl"),
		Cases: func() []Case {
			return []Case{
				sumCase("perl", "correct", "my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b, \"\\n\";\n", wantT),
				sumCase("perl", "wrong", "my ($a, $b) = split ' ', <STDIN>;\nprint $a * $b, \"\\n\";\n", wantF),
				sumCase("perl", "runtime", "die \"boom\\n\";\n", wantRE),
				timeoutCase("perl", "1 while 1;\n", 1),
				sumCase("perl", "syntax", "my $x = ;\n", wantRE),
			}
		},
	})
	php := interpreted("php", "solution.php", "-f")
	php.Prepare = phpSource
	Register(&Language{
		Name:   "php",
		Fences: []string{"php"},
		Tools:  []Tool{{"php", "php-cli"}},
		Runner: php,
		Cases: func() []Case {
			const read = "[$a, $b] = array_map('intval', explode(' ', trim(fgets(STDIN))));\necho $a + $b, \"\\n\";\n"
			return []Case{
				sumCase("php", "correct", "<?php\n"+read, wantT),
				sumCase("php", "no-tag", "\n  "+read, wantT),
				sumCase("php", "wrong", "<?php\necho 6, \"\\n\";\n", wantF),
				sumCase("php", "runtime", "<?php\nthrow new Exception('boom');\n", wantRE),
				timeoutCase("php", "<?php\nwhile (true) {}\n", 1),
				sumCase("php", "syntax", "<?php\necho (;\n", wantRE),
			}
		},
	})
	Register(&Language{
		Name:   "ruby",
		Fences: []string{"ruby", "rb"},
		Tools:  []Tool{{"ruby", "ruby"}},
		Extras: []string{"ruby-test-unit"},
		Runner: interpreted("ruby", "solution.rb").with(func(r *Runner) { r.StackSetting = true }),
		// Under a memory limit Ruby crashes before its first line.
		StartCrash: map[string]string{"SIGSEGV": RubyStackCause},
		Cases: func() []Case {
			return []Case{
				noMemLimit(sumCase("ruby", "correct", "a, b = gets.split.map(&:to_i)\nputs a + b\n", wantT)),
				noMemLimit(sumCase("ruby", "wrong", "a, b = gets.split.map(&:to_i)\nputs a * b\n", wantF)),
				noMemLimit(sumCase("ruby", "runtime", "raise 'boom'\n", wantRE)),
				noMemLimit(timeoutCase("ruby", "loop {}\n", 1)),
				noMemLimit(sumCase("ruby", "syntax", "def f(\n", wantRE)),
				// Under memory_limit_MB, SandboxFusion limits the stack to
				// it too, and Ruby cannot start in that address space: it
				// segfaults there.
				sumCase("ruby", "memory-limit", "puts 5\n", wantRE),
			}
		},
	})
	Register(&Language{
		Name:   "lua",
		Fences: []string{"lua"},
		Tools:  []Tool{{"lua", "lua5.4"}},
		Extras: []string{"lua-unit"},
		Runner: interpreted("lua", "solution.lua"),
		Cases: func() []Case {
			return []Case{
				sumCase("lua", "correct", "local a, b = io.read('n', 'n')\nprint(a + b)\n", wantT),
				sumCase("lua", "wrong", "local a, b = io.read('n', 'n')\nprint(a * b)\n", wantF),
				sumCase("lua", "runtime", "error('boom')\n", wantRE),
				timeoutCase("lua", "while true do end\n", 1),
				sumCase("lua", "syntax", "local x = \n", wantRE),
			}
		},
	})
	Register(&Language{
		Name:   "R",
		Fences: []string{"r"},
		Tools:  []Tool{{"Rscript", "r-base-core"}},
		Slow:   true,
		Runner: rRunner(),
		Cases: func() []Case {
			const rRead = "x <- scan(file(\"stdin\"), quiet = TRUE)\n"
			return []Case{
				sumCase("R", "correct", rRead+"cat(x[1] + x[2], \"\\n\", sep = \"\")\n", wantT),
				sumCase("R", "wrong", rRead+"cat(x[1] * x[2], \"\\n\", sep = \"\")\n", wantF),
				sumCase("R", "runtime", "stop(\"boom\")\n", wantRE),
				{Name: "R/assert", Language: "R", Code: "stopifnot(isTRUE(all.equal(1, 0)))\n", Want: wantRE},
				timeoutCase("R", "repeat {}\n", 2),
				sumCase("R", "syntax", "x <- (\n", wantRE),
			}
		},
	})
	Register(&Language{
		Name:   "racket",
		Fences: []string{"racket", "rkt"},
		Tools:  []Tool{{"racket", "racket"}},
		Slow:   true,
		Runner: interpreted("racket", "solution.rkt"),
		Cases: func() []Case {
			const rkt = "#lang racket\n(define a (read))\n(define b (read))\n"
			return []Case{
				sumCase("racket", "correct", rkt+"(displayln (+ a b))\n", wantT),
				sumCase("racket", "wrong", rkt+"(displayln (* a b))\n", wantF),
				sumCase("racket", "runtime", "#lang racket\n(error \"boom\")\n", wantRE),
				{
					Name:     "racket/rackunit",
					Language: "racket",
					Code:     "#lang racket\n(require rackunit)\n(check-equal? (string-length \"abc\") 4)\n",
					Want:     wantT,
				},
				timeoutCase("racket", "#lang racket\n(let loop () (loop))\n", 3),
				sumCase("racket", "syntax", "#lang racket\n(define\n", wantRE),
			}
		},
	})
}

// rRunner runs Rscript with one BLAS thread. OpenBLAS starts a thread per
// CPU as R starts, and a thread's stack is by default the stack limit,
// which is the memory limit (upstream's rule): where the host lets the
// stack limit be that high, the address space cannot hold a second stack
// and R failed before its first line, and elsewhere it did not. With one
// thread R starts on every host, whatever its stack limit or CPU count.
func rRunner() *Runner {
	r := interpreted("Rscript", "solution.R")
	r.Env = func(Host) []string { return []string{"OPENBLAS_NUM_THREADS=1"} }
	return r
}
