package testcases

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object is a decoded JSON object. Keys keep the order of the document, as a
// Python dict built by json.loads does; a repeated key keeps its first
// position and takes its last value, as in Python.
type Object struct {
	Keys   []string
	Values []any

	index map[string]int // built once the object grows large
}

// Get returns the value stored under key and whether the key is present.
func (o *Object) Get(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.Values[i], true
	}
	return nil, false
}

// smallObject is the size up to which a linear scan beats a map.
const smallObject = 16

func (o *Object) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range o.Keys {
		if k == key {
			return i
		}
	}
	return -1
}

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.Keys) }

// Int is a JSON integer kept as its decimal text, so that integers of any
// size render exactly as Python's int does.
type Int string

// maxIntDigits is CPython's default limit on the digits of an int parsed from
// text (sys.get_int_max_str_digits); json.loads raises beyond it.
const maxIntDigits = 4300

// maxDepth bounds nesting. CPython's decoder fails with RecursionError near
// its recursion limit (1000 by default); any depth error means the ground
// truth is unusable, which is what both sides report.
const maxDepth = 1000

// errDecode marks every JSON decoding failure.
var errDecode = errors.New("invalid JSON")

// Decode parses one JSON document the way Python's json.loads does and
// returns the value as:
//
//   - nil for null
//   - bool for true and false
//   - string for strings (lone UTF-16 surrogates become U+FFFD: Go strings
//     cannot hold them)
//   - Int for numbers without fraction or exponent (any size)
//   - float64 for the other numbers, and for NaN, Infinity and -Infinity,
//     which Python accepts too
//   - []any for arrays
//   - *Object for objects, keys in document order
//
// Like json.loads it accepts surrounding whitespace (space, tab, CR, LF),
// rejects control characters inside strings, a leading byte order mark,
// trailing data and integers of more than 4300 digits.
func Decode(text string) (any, error) {
	d := decoder{s: text}
	if strings.HasPrefix(text, "\ufeff") {
		return nil, fmt.Errorf("unexpected byte order mark: %w", errDecode)
	}
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.i != len(d.s) {
		return nil, d.fail("extra data")
	}
	return v, nil
}

type decoder struct {
	s     string
	i     int
	depth int
}

func (d *decoder) fail(what string) error {
	return fmt.Errorf("%s at offset %d: %w", what, d.i, errDecode)
}

func (d *decoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) literal(word string, v any) (any, error) {
	if strings.HasPrefix(d.s[d.i:], word) {
		d.i += len(word)
		return v, nil
	}
	return nil, d.fail("expecting value")
}

func (d *decoder) value() (any, error) {
	if d.i >= len(d.s) {
		return nil, d.fail("expecting value")
	}
	switch c := d.s[d.i]; c {
	case '"':
		d.i++
		return d.str()
	case '{':
		return d.object()
	case '[':
		return d.array()
	case 'n':
		return d.literal("null", nil)
	case 't':
		return d.literal("true", true)
	case 'f':
		return d.literal("false", false)
	case 'N':
		return d.literal("NaN", math.NaN())
	case 'I':
		return d.literal("Infinity", math.Inf(1))
	case '-':
		if strings.HasPrefix(d.s[d.i:], "-Infinity") {
			d.i += len("-Infinity")
			return math.Inf(-1), nil
		}
		return d.number()
	default:
		if c >= '0' && c <= '9' {
			return d.number()
		}
		return nil, d.fail("expecting value")
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number follows CPython's scanner: an integer part, then a fraction and an
// exponent only when digits follow them (otherwise the number ends there and
// the caller meets the leftover characters).
func (d *decoder) number() (any, error) {
	start := d.i
	i := d.i
	if d.s[i] == '-' {
		i++
	}
	switch {
	case i < len(d.s) && d.s[i] == '0':
		i++
	case i < len(d.s) && d.s[i] >= '1' && d.s[i] <= '9':
		for i < len(d.s) && isDigit(d.s[i]) {
			i++
		}
	default:
		return nil, d.fail("expecting value")
	}
	isFloat := false
	if i+1 < len(d.s) && d.s[i] == '.' && isDigit(d.s[i+1]) {
		i += 2
		for i < len(d.s) && isDigit(d.s[i]) {
			i++
		}
		isFloat = true
	}
	if i < len(d.s) && (d.s[i] == 'e' || d.s[i] == 'E') {
		j := i + 1
		if j < len(d.s) && (d.s[j] == '+' || d.s[j] == '-') {
			j++
		}
		if j < len(d.s) && isDigit(d.s[j]) {
			for j < len(d.s) && isDigit(d.s[j]) {
				j++
			}
			i = j
			isFloat = true
		}
	}
	d.i = i
	text := d.s[start:i]
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, d.fail("bad number")
		}
		return f, nil
	}
	digits := text
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > maxIntDigits {
		return nil, fmt.Errorf("integer of %d digits exceeds the limit of %d: %w", len(digits), maxIntDigits, errDecode)
	}
	if text == "-0" {
		return Int("0"), nil
	}
	return Int(text), nil
}

// str decodes a string whose opening quote has been consumed. A string
// without escapes is returned as a slice of the input, without copying.
func (d *decoder) str() (string, error) {
	start := d.i
	for i := start; i < len(d.s); i++ {
		switch c := d.s[i]; {
		case c == '"':
			d.i = i + 1
			return d.s[start:i], nil
		case c == '\\':
			return d.strSlow(start, i)
		case c < 0x20:
			d.i = i
			return "", d.fail("invalid control character in string")
		}
	}
	d.i = len(d.s)
	return "", d.fail("unterminated string")
}

func hexVal(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func (d *decoder) strSlow(start, i int) (string, error) {
	var b strings.Builder
	b.Grow(i - start + 16)
	b.WriteString(d.s[start:i])
	for i < len(d.s) {
		c := d.s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return b.String(), nil
		case c < 0x20:
			d.i = i
			return "", d.fail("invalid control character in string")
		case c != '\\':
			// Copy a run of plain bytes at once.
			j := i + 1
			for j < len(d.s) && d.s[j] != '"' && d.s[j] != '\\' && d.s[j] >= 0x20 {
				j++
			}
			b.WriteString(d.s[i:j])
			i = j
			continue
		}
		// Escape.
		if i+1 >= len(d.s) {
			d.i = i
			return "", d.fail("unterminated string")
		}
		e := d.s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hexVal(d.s[i:])
			if !ok {
				d.i = i
				return "", d.fail(`invalid \uXXXX escape`)
			}
			i += 4
			if r >= 0xd800 && r <= 0xdbff && i+6 <= len(d.s) && d.s[i] == '\\' && d.s[i+1] == 'u' {
				if lo, ok := hexVal(d.s[i+2:]); ok && lo >= 0xdc00 && lo <= 0xdfff {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
			}
			if r >= 0xd800 && r <= 0xdfff {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			d.i = i - 1
			return "", d.fail("invalid escape")
		}
	}
	d.i = len(d.s)
	return "", d.fail("unterminated string")
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.fail("nesting too deep")
	}
	return nil
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.i++ // [
	d.skipSpace()
	list := []any{}
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return list, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, d.fail("expecting ',' delimiter")
		}
		switch d.s[d.i] {
		case ']':
			d.i++
			return list, nil
		case ',':
			d.i++
			d.skipSpace()
		default:
			return nil, d.fail("expecting ',' delimiter")
		}
	}
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.i++ // {
	d.skipSpace()
	obj := &Object{}
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return obj, nil
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.fail("expecting property name enclosed in double quotes")
		}
		d.i++
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, d.fail("expecting ':' delimiter")
		}
		d.i++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		obj.set(key, v)
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, d.fail("expecting ',' delimiter")
		}
		switch d.s[d.i] {
		case '}':
			d.i++
			return obj, nil
		case ',':
			d.i++
			d.skipSpace()
		default:
			return nil, d.fail("expecting ',' delimiter")
		}
	}
}

func (o *Object) set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.Values[i] = v
		return
	}
	o.Keys = append(o.Keys, key)
	o.Values = append(o.Values, v)
	switch {
	case o.index != nil:
		o.index[key] = len(o.Keys) - 1
	case len(o.Keys) > smallObject:
		o.index = make(map[string]int, 2*len(o.Keys))
		for i, k := range o.Keys {
			o.index[k] = i
		}
	}
}
