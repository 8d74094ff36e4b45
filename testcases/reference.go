package testcases

import (
	"fmt"
	"strings"
)

// Program is a reference program: the expected output of each case is
// what it prints on the case's input, run in the same sandbox.
type Program struct {
	Code     string
	Language string
}

// referenceSet reads verl-score's ground truths whose expected outputs
// come from a reference program (docs/semantics.md §12); ok is false for
// any other ground truth. Two forms:
//
//	{"inputs": [...], "reference": "code" | {"code": ..., "language": ...}}
//	{"gold": "SELECT ...", "database": "setup SQL", "database_file": "db.sqlite"}
//
// The second is text-to-SQL's: the gold query is the reference (language
// sql), run on the database given as a setup script (the case's stdin),
// a SQLite file beside the input, or both; its result is ordered when the
// gold query sorts it.
func referenceSet(obj *Object) (set *Set, ok bool, err error) {
	ref, hasRef := obj.Get("reference")
	gold, hasGold := obj.Get("gold")
	if !hasRef && !hasGold {
		return nil, false, nil
	}
	set = &Set{}
	if hasGold {
		q, isStr := gold.(string)
		if !isStr || strings.TrimSpace(q) == "" {
			return nil, true, fmt.Errorf("%w: gold is a %s, not a query", ErrUnusable, pyType(gold))
		}
		set.Reference = &Program{Code: q, Language: "sql"}
		set.Ordered = ordersAtTop(q)
		if v, ok := obj.Get("database_file"); ok {
			name, isStr := v.(string)
			if !isStr || name == "" {
				return nil, true, fmt.Errorf("%w: database_file is a %s, not a path", ErrUnusable, pyType(v))
			}
			set.DatabaseFile = name
		}
	} else {
		set.Reference = &Program{Language: "python"}
		switch t := ref.(type) {
		case string:
			set.Reference.Code = t
		case *Object:
			code, _ := t.Get("code")
			set.Reference.Code, _ = code.(string)
			if lang, ok := t.Get("language"); ok {
				if s, isStr := lang.(string); isStr && s != "" {
					set.Reference.Language = s
				}
			}
		}
		if set.Reference.Code == "" {
			return nil, true, fmt.Errorf("%w: reference has no code", ErrUnusable)
		}
	}
	inputs, hasIn := obj.Get("inputs")
	if !hasIn {
		// The gold form's one case: the database's setup script as stdin.
		db, _ := obj.Get("database")
		inputs = []any{db}
	}
	ins, err := sequence(inputs, "inputs")
	if err != nil {
		return nil, true, err
	}
	set.Cases = make([]Case, ins.len())
	for i := range set.Cases {
		c := &set.Cases[i]
		in := ins.at(i)
		c.Input = PyStr(in)
		if in != nil {
			s := c.Input
			c.Stdin = &s
		}
		c.ExpectedText = "(the reference's output)"
	}
	return set, true, nil
}

// ordersAtTop reports whether a query's outermost SELECT has an ORDER BY:
// an ORDER BY outside parentheses and string literals.
func ordersAtTop(q string) bool {
	var b strings.Builder
	depth := 0
	var quote rune
	for _, r := range q {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			continue
		case r == '\'' || r == '"':
			quote = r
			continue
		case r == '(':
			depth++
		case r == ')':
			depth--
		}
		if depth == 0 {
			b.WriteRune(r)
		} else {
			b.WriteRune(' ')
		}
	}
	return strings.Contains(strings.Join(strings.Fields(strings.ToUpper(b.String())), " "), "ORDER BY")
}
