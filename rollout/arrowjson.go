package rollout

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// appendValueJSON appends the JSON form of arr[i]: structs become objects
// with their fields in schema order, lists become arrays, maps with string
// keys become objects, binary becomes base64 text (as Arrow's own JSON
// does), NaN and infinities become null.
func appendValueJSON(buf []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(buf, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(buf, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(buf, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(buf, a.Value(i), 10)
	case *array.Float32:
		return appendFloat(buf, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(buf, a.Value(i), 64)
	case *array.String:
		return appendQuoted(buf, a.Value(i))
	case *array.LargeString:
		return appendQuoted(buf, a.Value(i))
	case *array.StringView:
		return appendQuoted(buf, a.Value(i))
	case *array.Binary:
		return appendQuoted(buf, base64.StdEncoding.EncodeToString(a.Value(i)))
	case *array.LargeBinary:
		return appendQuoted(buf, base64.StdEncoding.EncodeToString(a.Value(i)))
	case *array.Dictionary:
		return appendValueJSON(buf, a.Dictionary(), a.GetValueIndex(i))
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		buf = append(buf, '{')
		for j := 0; j < a.NumField(); j++ {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendQuoted(buf, st.Field(j).Name)
			buf = append(buf, ':')
			buf = appendValueJSON(buf, a.Field(j), i)
		}
		return append(buf, '}')
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		if isStringType(keys.DataType()) {
			buf = append(buf, '{')
			for j := start; j < end; j++ {
				if j > start {
					buf = append(buf, ',')
				}
				buf = appendQuoted(buf, stringAt(keys, int(j)))
				buf = append(buf, ':')
				buf = appendValueJSON(buf, items, int(j))
			}
			return append(buf, '}')
		}
		buf = append(buf, '[')
		for j := start; j < end; j++ {
			if j > start {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"key":`...)
			buf = appendValueJSON(buf, keys, int(j))
			buf = append(buf, `,"value":`...)
			buf = appendValueJSON(buf, items, int(j))
			buf = append(buf, '}')
		}
		return append(buf, ']')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		buf = append(buf, '[')
		for j := start; j < end; j++ {
			if j > start {
				buf = append(buf, ',')
			}
			buf = appendValueJSON(buf, vals, int(j))
		}
		return append(buf, ']')
	}
	b, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return appendQuoted(buf, arr.ValueStr(i))
	}
	return append(buf, b...)
}

// appendFloat writes a float the way Python's json module does for finite
// values (always with a fraction or exponent, so it reads back as a float);
// NaN and infinities, which JSON cannot hold, become null.
func appendFloat(buf []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(buf, "null"...)
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, 'g', -1, bits)
	for _, c := range buf[start:] {
		if c == '.' || c == 'e' || c == 'E' {
			return buf
		}
	}
	return append(buf, ".0"...)
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string. Unlike encoding/json it leaves
// <, > and & alone (source code is full of them); invalid UTF-8 becomes
// U+FFFD.
func appendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// isStringType reports whether values of dt read as text.
func isStringType(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType,
		*arrow.BinaryType, *arrow.LargeBinaryType:
		return true
	case *arrow.DictionaryType:
		return isStringType(t.ValueType)
	}
	return false
}

// stringAt returns arr[i] as text; arr must be of a type isStringType
// accepts.
func stringAt(arr arrow.Array, i int) string {
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Binary:
		return a.ValueString(i)
	case *array.LargeBinary:
		return a.ValueString(i)
	case *array.Dictionary:
		return stringAt(a.Dictionary(), a.GetValueIndex(i))
	}
	return arr.ValueStr(i)
}

// isNumberType reports whether values of dt read as numbers.
func isNumberType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.FLOAT32, arrow.FLOAT64, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.BOOL:
		return true
	}
	return false
}

// numberAt returns arr[i] as a float64, NaN when null; arr must be of a type
// isNumberType accepts.
func numberAt(arr arrow.Array, i int) float64 {
	if arr.IsNull(i) {
		return math.NaN()
	}
	switch a := arr.(type) {
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Int8:
		return float64(a.Value(i))
	case *array.Int16:
		return float64(a.Value(i))
	case *array.Int32:
		return float64(a.Value(i))
	case *array.Int64:
		return float64(a.Value(i))
	case *array.Uint8:
		return float64(a.Value(i))
	case *array.Uint16:
		return float64(a.Value(i))
	case *array.Uint32:
		return float64(a.Value(i))
	case *array.Uint64:
		return float64(a.Value(i))
	case *array.Boolean:
		if a.Value(i) {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// listElem returns the element type of a list-like type, or nil.
func listElem(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.ListType:
		return t.Elem()
	case *arrow.LargeListType:
		return t.Elem()
	case *arrow.FixedSizeListType:
		return t.Elem()
	case *arrow.ListViewType:
		return t.Elem()
	case *arrow.LargeListViewType:
		return t.Elem()
	}
	return nil
}
