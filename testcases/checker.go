package testcases

import (
	"fmt"
	"strconv"
	"strings"
)

// The files a checker finds in its working directory, in testlib's
// argument order: the test's input, the program's output, the expected
// answer.
const (
	CheckerInput  = "input.txt"
	CheckerOutput = "output.txt"
	CheckerAnswer = "answer.txt"
)

// Checker verdicts by exit code, as testlib's: 0 accepted, 1 wrong answer,
// 2 presentation error. Any other ending (3 is testlib's "fail", a crash, a
// timeout, a compile error) is the checker's own failure.
const (
	CheckerAccepted     = 0
	CheckerWrongAnswer  = 1
	CheckerPresentation = 2
)

// checkerPython runs a Python checker with testlib's command line. An
// uncaught exception, a syntax error included, exits 3 (testlib's "fail")
// rather than Python's 1, which would read as a wrong answer.
const checkerPython = `import sys as _verl_sys, traceback as _verl_tb
def _verl_unpack():
    data = _verl_sys.stdin.buffer.read()
    head, _, rest = data.partition(b"\n")
    at = 0
    for name, n in zip(("` + CheckerInput + `", "` + CheckerOutput + `", "` + CheckerAnswer + `"), map(int, head.split())):
        with open(name, "wb") as f:
            f.write(rest[at:at + n])
        at += n
_verl_unpack()
del _verl_unpack
_verl_sys.argv = ['checker', '` + CheckerInput + `', '` + CheckerOutput + `', '` + CheckerAnswer + `']
def _verl_crash(kind, value, tb):
    _verl_tb.print_exception(kind, value, tb)
    _verl_sys.stderr.flush()
    import os
    os._exit(3)
try:
    _verl_code = compile(%s, "checker.py", "exec")
except (SyntaxError, ValueError):
    _verl_tb.print_exc()
    _verl_sys.exit(3)
_verl_sys.excepthook = _verl_crash
exec(_verl_code, {"__name__": "__main__", "__builtins__": __builtins__})
`

// checkerMainCpp calls a C++ checker's main, renamed, with testlib's
// arguments; a main that takes no arguments is called without them.
const checkerMainCpp = `
#undef main
#include <cstdio>
#include <string>
static bool verl_checker_unpack() {
    std::string data;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) data.append(buf, n);
    size_t nl = data.find('\n'), at = nl + 1;
    unsigned long len[3];
    if (nl == std::string::npos || std::sscanf(data.c_str(), "%lu %lu %lu", &len[0], &len[1], &len[2]) != 3) return false;
    const char *names[3] = {"` + CheckerInput + `", "` + CheckerOutput + `", "` + CheckerAnswer + `"};
    for (int i = 0; i < 3; i++) {
        std::FILE *f = std::fopen(names[i], "wb");
        if (!f || std::fwrite(data.data() + at, 1, len[i], f) != len[i] || std::fclose(f) != 0) return false;
        at += len[i];
    }
    return true;
}
template <class F> static auto verl_checker_call(F f, int c, char **v, int) -> decltype(f(c, v)) { return f(c, v); }
template <class F> static int verl_checker_call(F f, int, char **, long) { return f(); }
int main() {
    static char a0[] = "checker", a1[] = "` + CheckerInput + `", a2[] = "` + CheckerOutput + `", a3[] = "` + CheckerAnswer + `";
    static char *argv[] = {a0, a1, a2, a3, nullptr};
    if (!verl_checker_unpack()) return 3;
    std::freopen("/dev/null", "r", stdin);
    return verl_checker_call(verl_checker_main, 4, argv, 0);
}
`

// Framed reports whether the checker's three files reach it framed on
// stdin (Stdin), unpacked by its program before it runs: its program is
// then the same for every case, and compiled once. Otherwise they are
// sent as the request's files.
func (c *Checker) Framed() bool { return checkerFrames[c.Language] != nil }

// checkerFrames wrap a checker's code, by its language, into the program
// that unpacks the framed stdin and calls it; the other languages run as
// written.
var checkerFrames = map[string]func(code string) string{
	"python": func(code string) string { return strings.Replace(checkerPython, "%s", strconv.QuoteToASCII(code), 1) },
	"cpp":    func(code string) string { return "#define main verl_checker_main\n" + code + "\n" + checkerMainCpp },
}

// Stdin frames a case's three files for a Framed checker: their lengths
// on a line, then the files one after the other.
func Stdin(input, output, answer string) string {
	return fmt.Sprintf("%d %d %d\n", len(input), len(output), len(answer)) + input + output + answer
}

// Program is the code sent to run the checker: a testlib-style program
// gets `checker input.txt output.txt answer.txt` as its arguments (Python
// and C++), and a plain one reads the three files by name. Other languages
// run as written and read the files by name.
func (c *Checker) Program() string {
	if frame := checkerFrames[c.Language]; frame != nil {
		return frame(c.Code)
	}
	return c.Code
}
