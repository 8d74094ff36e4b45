package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// colKind is the inferred type of a JSONL key.
type colKind int

const (
	kindUnknown    colKind = iota // only nulls seen so far
	kindString                    // strings (other values later kept as JSON text)
	kindInt                       // integers: int64
	kindFloat                     // numbers with a fraction or exponent: double
	kindBool                      // booleans
	kindStringList                // lists of strings (or nulls): list<string>
	kindJSON                      // objects, other lists, mixed types: JSON text
)

type inferredField struct {
	name string
	kind colKind
}

func (f inferredField) field() arrow.Field {
	var t arrow.DataType
	switch f.kind {
	case kindInt:
		t = arrow.PrimitiveTypes.Int64
	case kindFloat:
		t = arrow.PrimitiveTypes.Float64
	case kindBool:
		t = arrow.FixedWidthTypes.Boolean
	case kindStringList:
		t = arrow.ListOf(arrow.BinaryTypes.String)
	default:
		t = arrow.BinaryTypes.String
	}
	return arrow.Field{Name: f.name, Type: t, Nullable: true}
}

// valueKind classifies one JSON value.
func valueKind(v json.RawMessage) colKind {
	switch jsonKind(v) {
	case 'n':
		return kindUnknown
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case '0':
		if bytes.ContainsAny(v, ".eE") {
			return kindFloat
		}
		if _, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err != nil {
			return kindFloat
		}
		return kindInt
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return kindJSON
		}
		for _, it := range items {
			if k := jsonKind(it); k != '"' && k != 'n' {
				return kindJSON
			}
		}
		return kindStringList
	}
	return kindJSON
}

func mergeKind(a, b colKind) colKind {
	switch {
	case a == b || b == kindUnknown:
		return a
	case a == kindUnknown:
		return b
	case (a == kindInt && b == kindFloat) || (a == kindFloat && b == kindInt):
		return kindFloat
	}
	return kindJSON
}

// inferColumns infers the parquet columns of a JSONL input from its first
// batch: the keys in order of first appearance, typed string, int64,
// double, bool or list<string> when every non-null value agrees, and JSON
// text (a string column) for objects, other lists and mixed types. Keys never
// seen with a non-null value become string columns.
func inferColumns(lines []srcLine) ([]inferredField, error) {
	var fields []inferredField
	pos := map[string]int{}
	for _, l := range lines {
		if !l.obj {
			continue
		}
		ms, err := parseObject(l.raw)
		if err != nil {
			continue
		}
		for _, m := range ms {
			i, ok := pos[m.key]
			if !ok {
				i = len(fields)
				pos[m.key] = i
				fields = append(fields, inferredField{name: m.key})
			}
			fields[i].kind = mergeKind(fields[i].kind, valueKind(m.val))
		}
	}
	for i := range fields {
		if fields[i].kind == kindUnknown {
			fields[i].kind = kindString
		}
	}
	return fields, nil
}

// buildInferred converts a JSONL batch to arrays of the inferred columns. A
// value that does not fit its column is an error naming the line and key,
// except in string columns, which keep it as JSON text; so is a key the
// first batch did not have.
func buildInferred(mem memory.Allocator, fields []inferredField, b *Batch) ([]arrow.Array, error) {
	pos := make(map[string]int, len(fields))
	builders := make([]array.Builder, len(fields))
	for i, f := range fields {
		pos[f.name] = i
		builders[i] = array.NewBuilder(mem, f.field().Type)
	}
	defer func() {
		for _, bl := range builders {
			bl.Release()
		}
	}()
	set := make([]bool, len(fields))
	for r, l := range b.lines {
		row := b.Rows[r]
		clear(set)
		var ms []member
		if l.obj {
			var err error
			if ms, err = parseObject(l.raw); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", row.File, row.Line, err)
			}
		}
		for _, m := range ms {
			i, ok := pos[m.key]
			if !ok {
				return nil, fmt.Errorf(
					"%s:%d: key %q is not in the parquet schema inferred from the first batch; write JSONL output instead",
					row.File,
					row.Line,
					m.key,
				)
			}
			if set[i] { // a duplicate key: the last one wins, as when reading
				continue
			}
			v, _ := get(ms, m.key)
			if err := appendInferred(builders[i], fields[i].kind, v); err != nil {
				return nil, fmt.Errorf("%s:%d: key %q: %w", row.File, row.Line, m.key, err)
			}
			set[i] = true
		}
		for i, done := range set {
			if !done {
				builders[i].AppendNull()
			}
		}
	}
	out := make([]arrow.Array, len(builders))
	for i, bl := range builders {
		out[i] = bl.NewArray()
	}
	return out, nil
}

func appendInferred(bl array.Builder, kind colKind, v json.RawMessage) error {
	vk := valueKind(v)
	if vk == kindUnknown {
		bl.AppendNull()
		return nil
	}
	mismatch := func() error {
		return fmt.Errorf("%s does not fit the column type inferred from the first batch (%s); write JSONL output instead",
			kindName(jsonKind(v)), inferredField{kind: kind}.field().Type)
	}
	switch kind {
	case kindString, kindJSON:
		sb := bl.(*array.StringBuilder)
		if kind == kindString && vk == kindString {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			sb.Append(s)
		} else {
			sb.Append(string(bytes.TrimSpace(v)))
		}
	case kindInt:
		if vk != kindInt {
			return mismatch()
		}
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		bl.(*array.Int64Builder).Append(n)
	case kindFloat:
		if vk != kindInt && vk != kindFloat {
			return mismatch()
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		if err != nil {
			return err
		}
		bl.(*array.Float64Builder).Append(f)
	case kindBool:
		if vk != kindBool {
			return mismatch()
		}
		bl.(*array.BooleanBuilder).Append(jsonKind(v) == 't')
	case kindStringList:
		if vk != kindStringList {
			return mismatch()
		}
		var items []*string
		if err := json.Unmarshal(v, &items); err != nil {
			return err
		}
		lb := bl.(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		lb.Append(true)
		for _, it := range items {
			if it == nil {
				vb.AppendNull()
			} else {
				vb.Append(*it)
			}
		}
	}
	return nil
}
