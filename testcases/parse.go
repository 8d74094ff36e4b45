// Package testcases turns a verl ground truth into test cases ready to send
// to a sandbox, exactly as verl's SandboxFusion reward does: parsing
// (docs/semantics.md §1.3), Python str() rendering of inputs and outputs, code extraction
// from a completion (docs/semantics.md §2) and the driver program for call-based cases
// (docs/semantics.md §3).
package testcases

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors of Parse. Each means: score 0.0, the message recorded, no case run.
var (
	// ErrInvalidJSON: the ground truth (or the JSON text inside it) does
	// not decode.
	ErrInvalidJSON = errors.New("invalid test_cases JSON format")
	// ErrInvalidStructure: not an object with inputs and outputs (and no
	// assert_case list to default them from).
	ErrInvalidStructure = errors.New("invalid test_cases structure")
	// ErrUnusable: a shape on which verl's scorer raises (a null ground
	// truth, inputs without a length, a non-string assert case, ...).
	ErrUnusable = errors.New("unusable test_cases")
)

// Case is one test case ready to be sent.
type Case struct {
	// Stdin is what to send as stdin; nil when the input is null (no stdin).
	Stdin *string
	// Input is the input as Python's str() prints it (verl's metadata
	// "input"; "None" for null).
	Input string
	// Expected is the expected stdout rendered as Python's str() does; nil
	// when the expected output is null (any finished run passes).
	Expected *string
	// ExpectedText is the expected output as Python's str() prints it
	// ("None" for null).
	ExpectedText string
	// Assert is assert_case[i], or "" when the ground truth has none.
	Assert string
}

// Set is a parsed ground truth.
type Set struct {
	Cases []Case
	// FnName is the function called for call-based cases; "" when not
	// call-based. A non-string fn_name is kept as Python's str() of it, as
	// verl formats it into its driver.
	FnName string
	// Mismatch reports len(inputs) != len(outputs), or assert cases of
	// another length: every case gets -1 and nothing is run. Cases still
	// holds one entry per input (Expected and Assert filled where they
	// exist).
	Mismatch bool
	// Checker is the problem's checker program, when the ground truth
	// carries one under the key ParseWith was given; nil otherwise.
	Checker *Checker
	// Reference, when set, produces every case's expected output: Cases
	// then have no Expected (reference.go). Ordered says its result is
	// ordered (a gold query with ORDER BY), for the rows compare mode.
	Reference *Program
	Ordered   bool
	// DatabaseFile is the text-to-SQL database file the ground truth
	// names, a path beside the input; Files are the files sent with every
	// request (name -> base64), the database's once it is read.
	DatabaseFile string
	Files        map[string]string
}

// Checker is a problem's own judge of an output (docs/semantics.md §10).
type Checker struct {
	Code     string
	Language string // "python" unless the ground truth names another
	// Err says why the ground truth's checker field cannot be used; every
	// case of the problem then ends in an infrastructure error.
	Err string
}

// checkerOf reads a checker field: the code as a string, or an object
// with "code" and an optional "language".
func checkerOf(v any, key string) *Checker {
	switch t := v.(type) {
	case string:
		if t != "" {
			return &Checker{Code: t, Language: "python"}
		}
	case *Object:
		c := &Checker{Language: "python"}
		code, _ := t.Get("code")
		s, ok := code.(string)
		if !ok || s == "" {
			c.Err = fmt.Sprintf("checker field %q: \"code\" is not a non-empty string", key)
			return c
		}
		c.Code = s
		if lang, ok := t.Get("language"); ok {
			l, ok := lang.(string)
			if !ok || l == "" {
				c.Err = fmt.Sprintf("checker field %q: \"language\" is not a non-empty string", key)
				return c
			}
			c.Language = l
		}
		return c
	case nil:
		return nil
	}
	return &Checker{Err: fmt.Sprintf("checker field %q is a %s, not the code or {\"code\", \"language\"}", key, pyType(v))}
}

// HasAsserts reports whether any case carries an assert case. Without
// them Program gives the same text for every case of a solution.
func (s *Set) HasAsserts() bool {
	for i := range s.Cases {
		if s.Cases[i].Assert != "" {
			return true
		}
	}
	return false
}

// DriverLanguage is the language of verl's fn_name driver and of the
// audit's harness: a call-based problem is call-based only in it.
const DriverLanguage = "python"

// CallBased reports whether the set's programs in lang call a function
// (fn_name) rather than read stdin.
func (s *Set) CallBased(lang string) bool { return s.FnName != "" && lang == DriverLanguage }

// Program returns the code sent for case i of solution in language lang.
// As in verl, the code is solution + "\n\n" + assert_case[i] (an empty
// assert when the ground truth has none), and when FnName is set and lang
// is DriverLanguage that whole text is wrapped in the fn_name driver (WrapFnName).
// An index out of range counts as a case without assert.
func (s *Set) Program(solution string, i int, lang string) string {
	var assert string
	if i >= 0 && i < len(s.Cases) {
		assert = s.Cases[i].Assert
	}
	if s.CallBased(lang) {
		return wrap(solution, "\n\n", assert, s.FnName)
	}
	return solution + "\n\n" + assert
}

// Parse parses a ground truth given as raw JSON: either a JSON string whose
// text is the JSON object, or the object itself. It follows verl:
//
//   - a ground truth that is neither a string nor an object (null included)
//     is ErrUnusable; a string that does not decode is ErrInvalidJSON;
//   - if assert_case is a list, missing inputs default to "" and missing
//     outputs to null, one per assert case;
//   - otherwise an object without inputs or outputs is ErrInvalidStructure
//     (so is a decoded value that is not an object);
//   - zero inputs give a Set without cases;
//   - inputs, outputs or assert cases of different lengths give Mismatch.
//
// Lists are the usual sequences; like Python's len() and indexing, a string
// counts as its characters and an object as its keys (an object of outputs
// or assert cases cannot be indexed: ErrUnusable). Parse never panics.
func Parse(raw []byte) (*Set, error) { return ParseWith(raw, "") }

// ParseWith is Parse that also reads the problem's checker from the
// ground truth's field checkerKey ("" reads none: verl has no checkers).
func ParseWith(raw []byte, checkerKey string) (*Set, error) {
	v, err := Decode(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	switch t := v.(type) {
	case *Object:
	case string:
		v, err = Decode(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
		}
	case nil:
		return nil, fmt.Errorf("%w: ground truth is null", ErrUnusable)
	default:
		return nil, fmt.Errorf("%w: ground truth is a %s, not a JSON string or object", ErrUnusable, pyType(v))
	}
	obj, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("%w: not an object", ErrInvalidStructure)
	}
	set, err := fromObject(obj)
	if err == nil && checkerKey != "" {
		if v, ok := obj.Get(checkerKey); ok {
			set.Checker = checkerOf(v, checkerKey)
		}
	}
	return set, err
}

func fromObject(obj *Object) (*Set, error) {
	if set, ok, err := referenceSet(obj); ok {
		return set, err
	}
	inputs, hasIn := obj.Get("inputs")
	outputs, hasOut := obj.Get("outputs")
	assertVal, hasAssert := obj.Get("assert_case")
	if list, isList := assertVal.([]any); hasAssert && isList {
		if !hasIn {
			defaults := make([]any, len(list))
			for i := range defaults {
				defaults[i] = ""
			}
			inputs, hasIn = defaults, true
		}
		if !hasOut {
			outputs, hasOut = make([]any, len(list)), true
		}
	} else if !hasIn || !hasOut {
		return nil, fmt.Errorf("%w: missing inputs/outputs", ErrInvalidStructure)
	}

	ins, err := sequence(inputs, "inputs")
	if err != nil {
		return nil, err
	}
	set := &Set{}
	if fn, ok := obj.Get("fn_name"); ok && truthy(fn) {
		set.FnName = PyStr(fn)
	}
	n := ins.len()
	if n == 0 {
		return set, nil
	}
	outs, err := sequence(outputs, "outputs")
	if err != nil {
		return nil, err
	}
	// verl checks the lengths in this order and stops at the first mismatch,
	// before it looks at any element.
	var asserts seq
	switch {
	case outs.len() != n:
		set.Mismatch = true
	case hasAssert:
		if asserts, err = sequence(assertVal, "assert_case"); err != nil {
			return nil, err
		}
		set.Mismatch = asserts.len() != n
	}
	if !set.Mismatch {
		if err := outs.indexErr("outputs"); err != nil {
			return nil, err
		}
		if err := asserts.indexErr("assert_case"); err != nil {
			return nil, err
		}
	}

	// One backing array for every rendered stdin and expected output.
	texts := make([]string, 2*n)
	set.Cases = make([]Case, n)
	for i := range set.Cases {
		c := &set.Cases[i]
		in := ins.at(i)
		c.Input = PyStr(in)
		if in != nil {
			texts[2*i] = c.Input
			c.Stdin = &texts[2*i]
		}
		c.ExpectedText = "None"
		if i < outs.len() && !outs.isObj {
			out := outs.at(i)
			c.ExpectedText = PyStr(out)
			if out != nil {
				texts[2*i+1] = c.ExpectedText
				c.Expected = &texts[2*i+1]
			}
		}
		if i < asserts.len() && !asserts.isObj {
			a, ok := asserts.at(i).(string)
			if !ok && !set.Mismatch {
				return nil, fmt.Errorf("%w: assert_case[%d] is a %s, not a string", ErrUnusable, i, pyType(asserts.at(i)))
			}
			c.Assert = a
		}
	}
	return set, nil
}

// seq is a value seen through Python's len() and indexing: a list, a
// string (its characters) or an object (its keys, which cannot be indexed
// by position).
type seq struct {
	list  []any
	chars []string
	keys  []string
	isObj bool
}

func sequence(v any, field string) (seq, error) {
	switch t := v.(type) {
	case []any:
		return seq{list: t}, nil
	case string:
		chars := make([]string, 0, utf8.RuneCountInString(t))
		for i := 0; i < len(t); {
			_, size := utf8.DecodeRuneInString(t[i:])
			chars = append(chars, t[i:i+size])
			i += size
		}
		return seq{chars: chars}, nil
	case *Object:
		return seq{keys: t.Keys, isObj: true}, nil
	default:
		return seq{}, fmt.Errorf("%w: %s is a %s, which has no length", ErrUnusable, field, pyType(v))
	}
}

func (s seq) len() int {
	switch {
	case s.isObj:
		return len(s.keys)
	case s.chars != nil:
		return len(s.chars)
	default:
		return len(s.list)
	}
}

// at returns element i; iterating an object yields its keys.
func (s seq) at(i int) any {
	switch {
	case s.isObj:
		return s.keys[i]
	case s.chars != nil:
		return s.chars[i]
	default:
		return s.list[i]
	}
}

// indexErr reports that the sequence cannot be indexed by position (Python
// raises KeyError on dict[i] for JSON objects, whose keys are strings).
func (s seq) indexErr(field string) error {
	if s.isObj {
		return fmt.Errorf("%w: %s is an object and cannot be indexed by case number", ErrUnusable, field)
	}
	return nil
}

func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != ""
	case Int:
		return t != "0"
	case float64:
		return t != 0
	case []any:
		return len(t) > 0
	case *Object:
		return t.Len() > 0
	default:
		return true
	}
}

// pyType names a decoded value's Python type, for error messages.
func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case Int:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case *Object:
		return "dict"
	default:
		return fmt.Sprintf("%T", v)
	}
}
