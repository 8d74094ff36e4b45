package testcases

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PyStr renders a decoded JSON value as Python's str() prints the value
// json.loads would have produced: a string as is, everything else as its
// repr (None, True, False, 3, 0.1, 1e-05, inf, [1, 'a'], {'k': None}).
//
// It takes the types Decode produces: nil, bool, string, Int, float64, []any
// and *Object. For convenience it also takes int, int64 and json.Number
// (an integer literal renders as an int, any other as a float). Other types
// render with fmt's %v; they never come out of Decode.
//
// Printability of non-ASCII characters follows Go's Unicode tables
// (15.0.0), which agree with CPython 3.12; an older CPython escapes the
// characters added since its own Unicode version.
func PyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(appendRepr(nil, v))
}

// PyRepr renders a decoded JSON value as Python's repr() would (a string in
// quotes). It takes the same types as PyStr.
func PyRepr(v any) string {
	return string(appendRepr(nil, v))
}

func appendRepr(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "None"...)
	case bool:
		if t {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case string:
		return appendStrRepr(b, t)
	case Int:
		return append(b, t...)
	case float64:
		return appendFloatRepr(b, t)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendRepr(b, e)
		}
		return append(b, ']')
	case *Object:
		if t == nil {
			return append(b, "None"...)
		}
		b = append(b, '{')
		for i, k := range t.Keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendStrRepr(b, k)
			b = append(b, ": "...)
			b = appendRepr(b, t.Values[i])
		}
		return append(b, '}')
	case int:
		return strconv.AppendInt(b, int64(t), 10)
	case int64:
		return strconv.AppendInt(b, t, 10)
	case json.Number:
		s := string(t)
		if strings.ContainsAny(s, ".eE") {
			f, _ := strconv.ParseFloat(s, 64)
			return appendFloatRepr(b, f)
		}
		if s == "-0" {
			s = "0"
		}
		return append(b, s...)
	default:
		return fmt.Append(b, t)
	}
}

// appendFloatRepr writes repr(f): the shortest digits that round-trip,
// positional when the decimal exponent is in [-4, 16), scientific with a
// signed exponent of at least two digits otherwise, ".0" added to integral
// positional values.
func appendFloatRepr(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // -d.ddde±XX
	if e[0] == '-' {
		b = append(b, '-')
		e = e[1:]
	}
	mark := 0
	for mark < len(e) && e[mark] != 'e' {
		mark++
	}
	var digits [24]byte
	nd := 0
	for _, c := range e[:mark] {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	decpt := exp + 1 // value = 0.d1d2... * 10^decpt
	ds := digits[:nd]
	switch {
	case decpt <= -4 || decpt > 16:
		b = append(b, ds[0])
		if nd > 1 {
			b = append(b, '.')
			b = append(b, ds[1:]...)
		}
		b = append(b, 'e')
		if exp < 0 {
			b = append(b, '-')
			exp = -exp
		} else {
			b = append(b, '+')
		}
		if exp < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, int64(exp), 10)
	case decpt <= 0:
		b = append(b, "0."...)
		for i := decpt; i < 0; i++ {
			b = append(b, '0')
		}
		return append(b, ds...)
	case decpt >= nd:
		b = append(b, ds...)
		for i := nd; i < decpt; i++ {
			b = append(b, '0')
		}
		return append(b, ".0"...)
	default:
		b = append(b, ds[:decpt]...)
		b = append(b, '.')
		return append(b, ds[decpt:]...)
	}
}

const lowerHex = "0123456789abcdef"

// appendStrRepr writes repr(s): single quotes unless s holds a single quote
// and no double quote; backslash, the chosen quote, \t, \n and \r escaped;
// other control characters and non-printable characters as \xhh, \uhhhh or
// \Uhhhhhhhh; printable non-ASCII characters as they are.
func appendStrRepr(b []byte, s string) []byte {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b = append(b, quote)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == quote || c == '\\':
				b = append(b, '\\', c)
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < ' ' || c == 0x7f:
				b = append(b, '\\', 'x', lowerHex[c>>4], lowerHex[c&0xf])
			default:
				b = append(b, c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsPrint(r) {
			b = append(b, s[i:i+size]...)
			i += size
			continue
		}
		i += size
		switch {
		case r <= 0xff:
			b = append(b, '\\', 'x', lowerHex[r>>4], lowerHex[r&0xf])
		case r <= 0xffff:
			b = append(b, '\\', 'u')
			for sh := 12; sh >= 0; sh -= 4 {
				b = append(b, lowerHex[(r>>sh)&0xf])
			}
		default:
			b = append(b, '\\', 'U')
			for sh := 28; sh >= 0; sh -= 4 {
				b = append(b, lowerHex[(r>>sh)&0xf])
			}
		}
	}
	return append(b, quote)
}
