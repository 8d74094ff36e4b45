package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// member is one key and its raw value in a JSON object, in input order.
type member struct {
	key string
	val json.RawMessage
}

// parseObject splits a JSON object into its members, in order, and fails
// unless data is exactly one object. The values are sub-slices of data.
func parseObject(data []byte) ([]member, error) {
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(json.RawMessage))
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return splitObject(data)
}

// splitObject is parseObject for data known to be valid JSON: a plain
// structural scan will do.
func splitObject(data []byte) ([]member, error) {
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, fmt.Errorf("not a JSON object (it is %s)", kindName(jsonKind(data[i:])))
	}
	i = skipSpace(data, i+1)
	var ms []member
	for data[i] != '}' {
		end := skipValue(data, i)
		rawKey := data[i:end]
		var key string
		if bytes.IndexByte(rawKey, '\\') < 0 {
			key = string(rawKey[1 : len(rawKey)-1])
		} else if err := json.Unmarshal(rawKey, &key); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		end = skipValue(data, i)
		ms = append(ms, member{key: key, val: json.RawMessage(data[i:end:end])})
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return ms, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the (valid) JSON value starting at i.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(data)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipValue(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for ; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return j
}

// get returns the value of the last member named key, as JSON parsers that
// keep the last duplicate do.
func get(ms []member, key string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].val, true
		}
	}
	return nil, false
}

// lookup finds a dotted path: a key spelled exactly like path wins, otherwise
// the path is walked through nested objects.
func lookup(ms []member, path string) (json.RawMessage, bool) {
	if v, ok := get(ms, path); ok {
		return v, true
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		v, ok := get(ms, path[:i])
		if !ok || jsonKind(v) != '{' {
			continue
		}
		sub, err := splitObject(v)
		if err != nil {
			continue
		}
		if r, ok := lookup(sub, path[i+1:]); ok {
			return r, true
		}
	}
	return nil, false
}

// jsonKind returns the first significant byte of a JSON value: '{', '[',
// '"', 'n' (null), 't'/'f' (booleans) or '0' for numbers.
func jsonKind(v []byte) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '{', '[', '"', 'n', 't', 'f':
		return c
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

func kindName(k byte) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '0':
		return "a number"
	}
	return "invalid JSON"
}

// decodeResponses reads a string or a list of strings.
func decodeResponses(v json.RawMessage) (resp []string, isList bool, reason string) {
	switch k := jsonKind(v); k {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, false, err.Error()
		}
		return []string{s}, false, ""
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, true, err.Error()
		}
		resp = make([]string, len(items))
		for i, it := range items {
			if jsonKind(it) != '"' {
				return nil, true, fmt.Sprintf("element %d is %s, want a string", i, kindName(jsonKind(it)))
			}
			if err := json.Unmarshal(it, &resp[i]); err != nil {
				return nil, true, err.Error()
			}
		}
		return resp, true, ""
	case 'n':
		return nil, false, "null"
	default:
		return nil, false, fmt.Sprintf("is %s, want a string or a list of strings", kindName(k))
	}
}

// decodeScores reads a number, null, or a list of them; ok is false for
// anything else.
func decodeScores(v json.RawMessage) ([]float64, bool) {
	one := func(v json.RawMessage) (float64, bool) {
		switch jsonKind(v) {
		case 'n':
			return math.NaN(), true
		case '0':
			f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return f, err == nil
		case 't':
			return 1, true
		case 'f':
			return 0, true
		}
		return 0, false
	}
	if jsonKind(v) == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, false
		}
		out := make([]float64, len(items))
		for i, it := range items {
			f, ok := one(it)
			if !ok {
				return nil, false
			}
			out[i] = f
		}
		return out, true
	}
	f, ok := one(v)
	if !ok {
		return nil, false
	}
	return []float64{f}, true
}
