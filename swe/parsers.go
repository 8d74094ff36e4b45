package swe

import (
	"regexp"
	"strings"
)

// The test statuses SWE-bench's parsers record (its TestStatus values).
const (
	StatusFailed  = "FAILED"
	StatusPassed  = "PASSED"
	StatusSkipped = "SKIPPED"
	StatusError   = "ERROR"
	StatusXFail   = "XFAIL"
)

var allStatuses = []string{StatusFailed, StatusPassed, StatusSkipped, StatusError, StatusXFail}

// A StatusMap is a parsed log: each test's status in the order the log first
// named it (v5's grading picks the first of several names that match). A
// status is the word the log gave, which may be none of the five above (a
// line "PASSEDx t" records "PASSEDx" for t, as SWE-bench's parsers do).
type StatusMap struct {
	order  []string
	status map[string]string
}

func newStatusMap() *StatusMap { return &StatusMap{status: map[string]string{}} }

func (m *StatusMap) set(test, status string) {
	if _, ok := m.status[test]; !ok {
		m.order = append(m.order, test)
	}
	m.status[test] = status
}

// Get is a test's status and whether the log named the test.
func (m *StatusMap) Get(test string) (string, bool) {
	s, ok := m.status[test]
	return s, ok
}

// Len is the number of tests the log named.
func (m *StatusMap) Len() int { return len(m.order) }

// Tests are the tests the log named, in order.
func (m *StatusMap) Tests() []string { return append([]string(nil), m.order...) }

// Map is the status map as a plain map.
func (m *StatusMap) Map() map[string]string {
	out := make(map[string]string, len(m.status))
	for k, v := range m.status {
		out[k] = v
	}
	return out
}

// A Parser reads a test log into a StatusMap. v5 changed some parsers
// (pytest's "SKIPPED [N] file:line" summary lines are not tests; pytest v2
// keeps names with spaces whole and drops a failure's message), and r says
// whose to follow.
type Parser func(log string, r Rules) *StatusMap

// Parsers are the log parsers by SWE-bench's function names.
var Parsers = map[string]Parser{
	"parse_log_pytest":         parsePytest,
	"parse_log_pytest_options": parsePytestOptions,
	"parse_log_pytest_v2":      parsePytestV2,
	"parse_log_django":         parseDjango,
	"parse_log_seaborn":        parseSeaborn,
	"parse_log_sympy":          parseSympy,
	"parse_log_matplotlib":     parseMatplotlib,
}

// repoParsers is SWE-bench v4.1.0's parser for each of its Python
// repositories.
var repoParsers = map[string]string{
	"astropy/astropy":              "parse_log_pytest_v2",
	"django/django":                "parse_log_django",
	"marshmallow-code/marshmallow": "parse_log_pytest",
	"matplotlib/matplotlib":        "parse_log_matplotlib",
	"mwaskom/seaborn":              "parse_log_seaborn",
	"pallets/flask":                "parse_log_pytest",
	"psf/requests":                 "parse_log_pytest_options",
	"pvlib/pvlib-python":           "parse_log_pytest",
	"pydata/xarray":                "parse_log_pytest",
	"pydicom/pydicom":              "parse_log_pytest_options",
	"pylint-dev/astroid":           "parse_log_pytest",
	"pylint-dev/pylint":            "parse_log_pytest_options",
	"pytest-dev/pytest":            "parse_log_pytest",
	"pyvista/pyvista":              "parse_log_pytest",
	"scikit-learn/scikit-learn":    "parse_log_pytest_v2",
	"sqlfluff/sqlfluff":            "parse_log_pytest",
	"sphinx-doc/sphinx":            "parse_log_pytest_v2",
	"sympy/sympy":                  "parse_log_sympy",
}

// RepoParser is the name of SWE-bench's parser for a repository, "" when it
// has none.
func RepoParser(repo string) string { return repoParsers[repo] }

func startsWithStatus(line string) bool {
	for _, s := range allStatuses {
		if strings.HasPrefix(line, s) {
			return true
		}
	}
	return false
}

func endsWithStatus(line string) bool {
	for _, s := range allStatuses {
		if strings.HasSuffix(line, s) {
			return true
		}
	}
	return false
}

func parsePytest(log string, r Rules) *StatusMap { return pytestLines(log, r, nil, nil) }

func parseMatplotlib(log string, r Rules) *StatusMap {
	return pytestLines(log, r, func(line string) string {
		line = strings.ReplaceAll(line, "MouseButton.LEFT", "1")
		return strings.ReplaceAll(line, "MouseButton.RIGHT", "3")
	}, nil)
}

// pytestLines reads pytest's -rA summary: a line that starts with a status
// names the test in its second word ("FAILED t - msg": the " - " dropped).
// prep rewrites each line first, rename each name found.
func pytestLines(log string, r Rules, prep, rename func(string) string) *StatusMap {
	m := newStatusMap()
	for _, line := range strings.Split(log, "\n") {
		if prep != nil {
			line = prep(line)
		}
		if !startsWithStatus(line) {
			continue
		}
		if strings.HasPrefix(line, StatusFailed) {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		f := pyFields(line)
		if len(f) <= 1 || skipSummary(r, f[0], f[1]) {
			continue
		}
		name := f[1]
		if rename != nil {
			name = rename(name)
		}
		m.set(name, f[0])
	}
	return m
}

var optionRe = regexp.MustCompile(`(.*?)\[(.*)\]`)

// parsePytestOptions is pytest's summary with parametrized names whose
// option is an absolute path cut to its last part ("t[/a/b/c]" → "t[/c]").
func parsePytestOptions(log string, r Rules) *StatusMap {
	return pytestLines(log, r, nil, func(name string) string {
		g := optionRe.FindStringSubmatch(name)
		if g == nil {
			return name
		}
		main, option := g[1], g[2]
		if strings.HasPrefix(option, "/") && !strings.HasPrefix(option, "//") && !strings.Contains(option, "*") {
			parts := strings.Split(option, "/")
			option = "/" + parts[len(parts)-1]
		}
		return main + "[" + option + "]"
	})
}

var colourRe = regexp.MustCompile(`\[(\p{Nd}+)m`)

// parsePytestV2 strips colour codes and control characters, then reads
// "STATUS test" lines and older pytest's "test STATUS" lines.
func parsePytestV2(log string, r Rules) *StatusMap {
	m := newStatusMap()
	for _, line := range strings.Split(log, "\n") {
		line = colourRe.ReplaceAllString(line, "")
		line = strings.Map(func(r rune) rune {
			if r >= 1 && r < 32 {
				return -1
			}
			return r
		}, line)
		switch {
		case startsWithStatus(line) && r.Version == V5:
			if strings.HasPrefix(line, StatusFailed) {
				line = strings.SplitN(line, " - ", 2)[0]
			}
			if f := pyFields(line); len(f) >= 2 && !skipSummary(r, f[0], f[1]) {
				m.set(strings.Join(f[1:], " "), f[0])
			}
		case startsWithStatus(line):
			if strings.HasPrefix(line, StatusFailed) {
				line = strings.ReplaceAll(line, " - ", " ")
			}
			if f := pyFields(line); len(f) >= 2 {
				m.set(f[1], f[0])
			}
		case endsWithStatus(line):
			if f := pyFields(line); len(f) >= 2 {
				if r.Version == V5 {
					m.set(strings.Join(f[:len(f)-1], " "), f[len(f)-1])
				} else {
					m.set(f[0], f[1])
				}
			}
		}
	}
	return m
}

// parseSeaborn reads "FAILED t", "t PASSED …" and "PASSED t" lines.
func parseSeaborn(log string, _ Rules) *StatusMap {
	m := newStatusMap()
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.HasPrefix(line, StatusFailed):
			// SWE-bench raises on a bare "FAILED" line; it is skipped here
			if f := pyFields(line); len(f) > 1 {
				m.set(f[1], StatusFailed)
			}
		case strings.Contains(line, " "+StatusPassed+" "):
			if f := pyFields(line); len(f) > 1 && f[1] == StatusPassed {
				m.set(f[0], StatusPassed)
			}
		case strings.HasPrefix(line, StatusPassed):
			if f := pyFields(line); len(f) > 1 {
				m.set(f[1], StatusPassed)
			}
		}
	}
	return m
}

var sympyFailRe = regexp.MustCompile(`(_*) (.*)\.py:(.*) (_*)`)

// parseSympy reads sympy's own runner: "____ file.py:test ____" headers as
// failures, then "test_x ok|F|E" lines.
func parseSympy(log string, _ Rules) *StatusMap {
	m := newStatusMap()
	for _, g := range sympyFailRe.FindAllStringSubmatch(log, -1) {
		m.set(g[2]+".py:"+g[3], StatusFailed)
	}
	for _, line := range strings.Split(log, "\n") {
		line = pyStrip(line)
		if !strings.HasPrefix(line, "test_") {
			continue
		}
		if strings.HasSuffix(line, " E") {
			m.set(pyFields(line)[0], StatusError)
		}
		if strings.HasSuffix(line, " F") {
			m.set(pyFields(line)[0], StatusFailed)
		}
		if strings.HasSuffix(line, " ok") {
			m.set(pyFields(line)[0], StatusPassed)
		}
	}
	return m
}

// pyS is Python's \s in a str pattern, which Go's \s is not.
const pyS = `[\t\n\x0b\f\r \x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

var djangoLateOK = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^(.*?)` + pyS + `\.\.\.` + pyS + `Testing against Django installed in ((?s:.*?)) silenced\)\.\nok$`),
	regexp.MustCompile(`(?m)^(.*?)` + pyS + `\.\.\.` + pyS + `Internal Server Error: /(.*)/\nok$`),
	regexp.MustCompile(`(?m)^(.*?)` + pyS + `\.\.\.` + pyS + `System check identified no issues \(0 silenced\)\nok$`),
}

// parseDjango reads Django's runner at verbosity 2: "test (module.Class)
// ... ok|skipped|FAIL|ERROR", "FAIL: test" and "ERROR: test" headers, an
// "ok" on a later line for the last test named, and three multi-line forms
// where other output split a test's line.
func parseDjango(log string, _ Rules) *StatusMap {
	m := newStatusMap()
	prev, havePrev := "", false
	for _, line := range strings.Split(log, "\n") {
		line = pyStrip(line)
		if strings.Contains(line, "--version is equivalent to version") {
			m.set("--version is equivalent to version", StatusPassed)
		}
		if strings.Contains(line, " ... ") {
			prev, havePrev = strings.SplitN(line, " ... ", 2)[0], true
		}
		for _, suffix := range []string{" ... ok", " ... OK", " ...  OK"} {
			if strings.HasSuffix(line, suffix) {
				// SWE-bench's fix for django__django-7188
				if strings.HasPrefix(pyStrip(line), "Applying sites.0002_alter_domain_unique...test_no_migrations") {
					line = pyStrip(strings.SplitN(line, "...", 2)[1])
				}
				m.set(line[:strings.LastIndex(line, suffix)], StatusPassed)
				break
			}
		}
		if strings.Contains(line, " ... skipped") {
			m.set(strings.SplitN(line, " ... skipped", 2)[0], StatusSkipped)
		}
		if strings.HasSuffix(line, " ... FAIL") {
			m.set(strings.SplitN(line, " ... FAIL", 2)[0], StatusFailed)
		}
		if strings.HasPrefix(line, "FAIL:") {
			// SWE-bench raises on a bare "FAIL:" line; it is skipped here
			if f := pyFields(line); len(f) > 1 {
				m.set(pyStrip(f[1]), StatusFailed)
			}
		}
		if strings.HasSuffix(line, " ... ERROR") {
			m.set(strings.SplitN(line, " ... ERROR", 2)[0], StatusError)
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := pyFields(line); len(f) > 1 {
				m.set(pyStrip(f[1]), StatusError)
			}
		}
		if strings.HasPrefix(pyLStrip(line), "ok") && havePrev {
			m.set(prev, StatusPassed)
		}
	}
	for _, re := range djangoLateOK {
		for _, g := range re.FindAllStringSubmatch(log, -1) {
			m.set(g[1], StatusPassed)
		}
	}
	return m
}

var skipCountRe = regexp.MustCompile(`^\[\p{Nd}+\]$`)

// skipSummary is v5's test for pytest's "SKIPPED [N] path:line: reason"
// summary line, whose "[N]" is not a test.
func skipSummary(r Rules, status, name string) bool {
	return r.Version == V5 && status == StatusSkipped && skipCountRe.MatchString(name)
}

// pySpace is Python's str.isspace for one character.
func pySpace(r rune) bool {
	switch r {
	case '\t', '\n', '\x0b', '\f', '\r', ' ', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// pyFields is Python's str.split() with no arguments.
func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, pySpace) }

func pyLStrip(s string) string { return strings.TrimLeftFunc(s, pySpace) }
