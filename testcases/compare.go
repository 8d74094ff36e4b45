package testcases

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CompareMode is how a program's stdout is compared with the expected
// output (docs/semantics.md §10).
type CompareMode int

const (
	// CompareExact is verl's rule: equal after stripping trailing "\n".
	CompareExact CompareMode = iota
	// CompareLines ignores trailing whitespace on each line and trailing
	// blank lines.
	CompareLines
	// CompareTokens compares the whitespace-separated tokens; a call-based
	// result is compared as a value where the expected output is a JSON or
	// Python literal.
	CompareTokens
	// CompareFloat is CompareTokens with numbers equal within a tolerance.
	CompareFloat
	// CompareRows compares result sets (SQL): the lines are rows, "|"
	// separates their cells, and the rows are compared as a multiset, in
	// any order; numbers are equal within a tolerance.
	CompareRows
)

// DefaultFloatTolerance is float's tolerance when none is given: the
// usual 1e-6 of competitive-programming judges.
const DefaultFloatTolerance = 1e-6

// Comparison is a compare mode with its tolerance.
type Comparison struct {
	Mode CompareMode
	// Tol is float's tolerance: two numbers are equal when their absolute
	// difference, or their difference relative to the expected number, is
	// at most Tol (testlib's doubleCompare).
	Tol float64
}

// ParseComparison parses "exact", "lines", "tokens", "float", "rows" or,
// for the last two, a tolerance after a colon (float:1e-9, rows:1e-4).
func ParseComparison(s string) (Comparison, error) {
	name, tol, hasTol := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	var c Comparison
	switch name {
	case "", "exact":
		c.Mode = CompareExact
	case "lines":
		c.Mode = CompareLines
	case "tokens":
		c.Mode = CompareTokens
	case "float":
		c.Mode, c.Tol = CompareFloat, DefaultFloatTolerance
	case "rows":
		c.Mode, c.Tol = CompareRows, DefaultFloatTolerance
	default:
		return c, fmt.Errorf("unknown compare mode %q (want exact, lines, tokens, float, rows, float:TOL or rows:TOL)", s)
	}
	if hasTol {
		if c.Mode != CompareFloat && c.Mode != CompareRows {
			return c, fmt.Errorf("compare mode %q: only float and rows take a tolerance", s)
		}
		t, err := strconv.ParseFloat(tol, 64)
		if err != nil || t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
			return c, fmt.Errorf("compare mode %q: the tolerance must be a number >= 0", s)
		}
		c.Tol = t
	}
	return c, nil
}

func (c Comparison) String() string {
	switch c.Mode {
	case CompareLines:
		return "lines"
	case CompareTokens:
		return "tokens"
	case CompareFloat, CompareRows:
		name := "float"
		if c.Mode == CompareRows {
			name = "rows"
		}
		if c.Tol == DefaultFloatTolerance {
			return name
		}
		return name + ":" + strconv.FormatFloat(c.Tol, 'g', -1, 64)
	}
	return "exact"
}

// Exact reports whether c is verl's comparison.
func (c Comparison) Exact() bool { return c.Mode == CompareExact }

// ExactMatch is verl's comparison of stdout with the expected output.
func ExactMatch(stdout, expected string) bool {
	return strings.TrimRight(stdout, "\n") == strings.TrimRight(expected, "\n")
}

// Match reports whether stdout is accepted for expected under c. Every
// mode accepts what ExactMatch accepts. callBased says the output is a
// fn_name driver's printed result: tokens and float then also accept a
// value equal to the expected literal (json.dumps' "true" for Python's
// True, an unquoted string for a JSON-quoted one).
func (c Comparison) Match(stdout, expected string, callBased bool) bool {
	if ExactMatch(stdout, expected) {
		return true
	}
	switch c.Mode {
	case CompareLines:
		return trimLines(stdout) == trimLines(expected)
	case CompareTokens, CompareFloat:
		if c.tokensMatch(stdout, expected) {
			return true
		}
		return callBased && c.valueMatch(stdout, expected)
	case CompareRows:
		return c.rowsMatch(stdout, expected)
	}
	return false
}

// rowsMatch compares two result sets as multisets of rows: each is sorted
// by its cells (numbers by value, then text), and the two lists are then
// compared row by row, numbers within the tolerance. Trailing whitespace
// of a line and trailing blank lines do not count.
func (c Comparison) rowsMatch(stdout, expected string) bool {
	return c.rowsMatchIn(stdout, expected, false)
}

// MatchOrdered is Match for a case whose expected result is ordered (the
// gold query sorts it): under rows the result sets are compared row by row
// in their order; other modes are Match's.
func (c Comparison) MatchOrdered(stdout, expected string, callBased bool) bool {
	if c.Mode != CompareRows || ExactMatch(stdout, expected) {
		return c.Match(stdout, expected, callBased)
	}
	return c.rowsMatchIn(stdout, expected, true)
}

func (c Comparison) rowsMatchIn(stdout, expected string, ordered bool) bool {
	a, b := resultRows(stdout, !ordered), resultRows(expected, !ordered)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] && !c.cellsMatch(a[i][j], b[i][j]) {
				return false
			}
		}
	}
	return true
}

// cellsMatch compares two cells as numbers within the tolerance.
func (c Comparison) cellsMatch(actual, expected string) bool {
	x, err1 := strconv.ParseFloat(actual, 64)
	y, err2 := strconv.ParseFloat(expected, 64)
	return err1 == nil && err2 == nil && c.numbersMatch(x, y)
}

// resultRows splits a result set into its rows and cells, sorted when
// sorted is set.
func resultRows(s string, sorted bool) [][]string {
	text := trimLines(s)
	if text == "" {
		return nil
	}
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		rows = append(rows, strings.Split(line, "|"))
	}
	if !sorted {
		return rows
	}
	slices.SortFunc(rows, func(x, y []string) int {
		for i := range min(len(x), len(y)) {
			if d := compareCells(x[i], y[i]); d != 0 {
				return d
			}
		}
		return len(x) - len(y)
	})
	return rows
}

// compareCells orders numbers by value before text, and text as bytes.
func compareCells(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// trimLines drops trailing whitespace of each line and trailing blank
// lines.
func trimLines(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r\v\f")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

func (c Comparison) tokensMatch(stdout, expected string) bool {
	a, b := strings.Fields(stdout), strings.Fields(expected)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if c.Mode != CompareFloat || !c.floatsMatch(a[i], b[i]) {
			return false
		}
	}
	return true
}

// floatsMatch compares two tokens as numbers: integers exactly, and
// within the tolerance when either has a fraction or an exponent.
func (c Comparison) floatsMatch(actual, expected string) bool {
	if a, ok := intText(actual); ok {
		if b, ok := intText(expected); ok {
			return a == b
		}
	}
	x, err1 := strconv.ParseFloat(actual, 64)
	y, err2 := strconv.ParseFloat(expected, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return c.numbersMatch(x, y)
}

func (c Comparison) numbersMatch(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return x == y
	}
	if c.Mode != CompareFloat && c.Mode != CompareRows {
		return x == y
	}
	d := math.Abs(x - y)
	return d <= c.Tol+1e-15 || d <= c.Tol*math.Abs(y)
}

// valueMatch compares a driver's printed result with an expected literal.
func (c Comparison) valueMatch(stdout, expected string) bool {
	want, err := ParseLiteral(strings.TrimSpace(expected))
	if err != nil {
		return false
	}
	out := strings.TrimRight(stdout, "\n")
	if s, ok := want.(string); ok && out == s {
		return true // the driver prints a str result as it is
	}
	got, err := ParseLiteral(strings.TrimSpace(out))
	if err != nil {
		return false
	}
	return c.valuesEqual(got, want)
}

// number is a literal number: ints keep their digits, so that integers
// of any size compare exactly.
type number struct {
	text  string // canonical digits of an int, "" for a float
	float float64
}

func (c Comparison) valuesEqual(a, b any) bool {
	switch y := b.(type) {
	case nil:
		return a == nil
	case bool:
		x, ok := a.(bool)
		return ok && x == y
	case string:
		x, ok := a.(string)
		return ok && x == y
	case number:
		x, ok := a.(number)
		if !ok {
			return false
		}
		if x.text != "" && y.text != "" {
			return x.text == y.text
		}
		return c.numbersMatch(x.float, y.float)
	case []any:
		x, ok := a.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !c.valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		x, ok := a.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range y {
			w, ok := x[k]
			if !ok || !c.valuesEqual(w, v) {
				return false
			}
		}
		return true
	}
	return false
}

var errLiteral = errors.New("not a literal")

// ParseLiteral parses a JSON value or a Python literal (True, None,
// 'single-quoted' strings, tuples, dicts with non-string keys) into nil,
// bool, string, a number, []any (lists and tuples alike) or
// map[string]any (keys as json.dumps writes them). It backs the value
// comparison of call-based results.
func ParseLiteral(s string) (any, error) {
	p := litParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%w: extra text at %d", errLiteral, p.i)
	}
	return v, nil
}

type litParser struct {
	s string
	i int
}

func (p *litParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *litParser) value(depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("%w: nested too deep", errLiteral)
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("%w: ends early", errLiteral)
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		return p.str(c)
	case c == '[' || c == '(':
		close := byte(']')
		if c == '(' {
			close = ')'
		}
		p.i++
		var items []any
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == close {
				p.i++
				if items == nil {
					items = []any{}
				}
				return items, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == close {
				continue
			}
			return nil, fmt.Errorf("%w: expected , or %c at %d", errLiteral, close, p.i)
		}
	case c == '{':
		p.i++
		m := map[string]any{}
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return m, nil
			}
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, fmt.Errorf("%w: expected : at %d", errLiteral, p.i)
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[keyText(k)] = v
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			} else if p.i >= len(p.s) || p.s[p.i] != '}' {
				return nil, fmt.Errorf("%w: expected , or } at %d", errLiteral, p.i)
			}
		}
	}
	for _, w := range []struct {
		word string
		v    any
	}{{"true", true}, {"True", true}, {"false", false}, {"False", false}, {"null", nil}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return p.number()
}

// keyText is a dict key as json.dumps writes it: strings as they are,
// True as "true", numbers in their digits.
func keyText(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case number:
		if x.text != "" {
			return x.text
		}
		return strconv.FormatFloat(x.float, 'g', -1, 64)
	}
	return fmt.Sprint(k)
}

func (p *litParser) number() (any, error) {
	start := p.i
	for _, w := range []string{"-Infinity", "Infinity", "NaN", "-inf", "inf", "nan"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			f, _ := strconv.ParseFloat(w, 64)
			return number{float: f}, nil
		}
	}
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE_", p.s[p.i]) >= 0 {
		p.i++
	}
	text := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if text == "" {
		return nil, fmt.Errorf("%w: unexpected %q at %d", errLiteral, p.s[p.i], p.i)
	}
	if n, ok := intText(text); ok {
		f, _ := strconv.ParseFloat(n, 64)
		return number{text: n, float: f}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("%w: bad number %q", errLiteral, text)
	}
	return number{float: f}, nil
}

// intText canonicalises an integer's digits: no sign for zero, no leading
// "+" or zeros.
func intText(s string) (string, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if s == "" {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return "", false
		}
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0", true
	}
	if neg {
		return "-" + s, true
	}
	return s, true
}

func (p *litParser) str(quote byte) (any, error) {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, fmt.Errorf("%w: string ends early", errLiteral)
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '0':
				b.WriteByte(0)
			case 'u', 'x', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if p.i+n > len(p.s) {
					return nil, fmt.Errorf("%w: short \\%c escape", errLiteral, e)
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil {
					return nil, fmt.Errorf("%w: bad \\%c escape", errLiteral, e)
				}
				p.i += n
				b.WriteRune(rune(r))
			default:
				b.WriteByte(e) // \\ \' \" \/
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return nil, fmt.Errorf("%w: string not closed", errLiteral)
}
