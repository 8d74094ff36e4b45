package testcases

import (
	"strconv"
	"strings"
)

// Audit probe reports: the harness writes "\n<nonce> <what>\n" to stderr.
const (
	ProbeEnd    = "end"    // the program ran to its end (after the asserts)
	ProbeRaised = "raised" // the fn_name driver's exception path was taken
	ProbeOpen   = "open "  // followed by a path the program opened to read
	ProbeEq     = "eq "    // followed by the type of an assert's operand that is equal to anything
)

// auditHarness runs a program as __main__ under an audit hook that
// reports each file it opens to read outside the interpreter's own files,
// and reports when the program has run to its end. Each operand of an ==
// or != in an assert statement passes through a check, in its place and
// order, that reports a value equal to a private object it cannot know
// (as an "equal to everything" object is, unittest.mock.ANY among them), or
// whose type's __eq__ or __ne__ is Python code outside the interpreter's
// library (a class of the program's own). %NONCE% and %SOURCE% are Python
// literals.
const auditHarness = `def _verl_audit_start(nonce, source):
    import os, sys
    write = os.write
    def report(what):
        try:
            write(2, ("\n%s %s\n" % (nonce, what)).encode("utf-8", "replace"))
        except OSError:
            pass
    allowed = tuple({p + "/lib/" for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p} |
                    {"/usr/lib/python3", "/usr/local/lib/python3", "/usr/share/zoneinfo/", "/dev/", "/proc/", "/sys/"})
    me = os.path.abspath(__file__)
    busy = []
    def hook(event, args):
        if event != "open" or busy:
            return
        busy.append(1)
        try:
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if not isinstance(path, (str, bytes)):
                return
            p = os.path.abspath(os.fsdecode(path))
            if isinstance(mode, str):
                reading = "r" in mode or "+" in mode
            else:
                reading = (flags or 0) & 3 != os.O_WRONLY
            if reading and p != me and not p.startswith(allowed) and os.path.isfile(p):
                report("open " + p)
        except Exception:
            pass
        finally:
            busy.pop()
    class Unknown:
        __slots__ = ()
    eq_reported = []
    def eq_check(v):
        if eq_reported:
            return v
        t = type(v)
        why = None
        try:
            u = Unknown()
            if (v == u) or not (v != u):
                why = "equal to an unknown object"
        except Exception:
            pass
        if why is None:
            for k in t.__mro__:
                f = k.__dict__.get("__eq__") or k.__dict__.get("__ne__")
                if f is None:
                    continue
                code = getattr(f, "__code__", None)
                if code is not None and not os.path.abspath(code.co_filename).startswith(allowed):
                    why = "__eq__ of its own"
                break
        if why is not None:
            eq_reported.append(1)
            report("eq %s (%s)" % (getattr(t, "__qualname__", "?"), why))
        return v
    import ast
    class Operands(ast.NodeTransformer):
        def visit_Assert(self, node):
            self.generic_visit(node)
            t = node.test
            if isinstance(t, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq)) for o in t.ops):
                def wrap(e):
                    return ast.copy_location(ast.Call(ast.Name("_verl_audit_eq", ast.Load()), [e], []), e)
                t.left = wrap(t.left)
                t.comparators = [wrap(c) for c in t.comparators]
            return node
    tree = Operands().visit(ast.parse(source, __file__))
    ast.fix_missing_locations(tree)
    sys.addaudithook(hook)
    return compile(tree, __file__, "exec"), lambda: report("end"), eq_check
_verl_audit_code, _verl_audit_end, _verl_audit_eq = _verl_audit_start(%NONCE%, %SOURCE%)
del _verl_audit_start
exec(_verl_audit_code)
_verl_audit_end()
`

// driverFailLine is the driver's report of a call that raised; the probe
// adds its own report after it.
const driverFailLine = `        sys.stderr.write("driver: calling %r failed:\n%s" % (_verl_fn_name, _verl_traceback.format_exc()))
`

// AuditProgram returns the probe of case i: the program Program sends,
// run under the audit harness, with the fn_name driver's exception path
// reporting itself. Only Python programs can be probed (ok false
// otherwise).
func (s *Set) AuditProgram(solution string, i int, lang, nonce string) (code string, ok bool) {
	if lang != DriverLanguage {
		return "", false
	}
	prog := s.Program(solution, i, lang)
	if s.FnName != "" {
		// The driver's text is last, so the solution cannot hold the line
		// replaced.
		at := strings.LastIndex(prog, driverFailLine)
		if at < 0 {
			return "", false
		}
		raised := "        sys.stderr.write(\"\\n" + nonce + " " + ProbeRaised + "\\n\")\n"
		prog = prog[:at+len(driverFailLine)] + raised + prog[at+len(driverFailLine):]
	}
	h := strings.Replace(auditHarness, "%NONCE%", strconv.Quote(nonce), 1)
	return strings.Replace(h, "%SOURCE%", strconv.QuoteToASCII(prog), 1), true
}

// ProbeReports returns what a probe's stderr reports under nonce.
func ProbeReports(stderr, nonce string) []string {
	var out []string
	prefix := nonce + " "
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}
