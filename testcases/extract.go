package testcases

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule selects the code-extraction rule.
type Rule int

// Extraction rules.
const (
	// RuleVerl is the SandboxFusion scorer's rule (docs/semantics.md §2 steps 1-3).
	RuleVerl Rule = iota
	// RulePRIME is the local PRIME scorer's rule: Python's
	// completion.split("```python")[-1].split("```")[0], that is the text
	// after the last ```python up to the next fence, and without a ```python
	// fence the text before the first fence (the whole completion when it
	// has no fence at all).
	RulePRIME
)

// ParseRule reads a rule's name: verl or prime.
func ParseRule(name string) (Rule, error) {
	switch name {
	case "verl":
		return RuleVerl, nil
	case "prime":
		return RulePRIME, nil
	}
	return 0, fmt.Errorf("extract must be one of verl, prime, got %q", name)
}

const (
	fence       = "```"
	pythonFence = "```python"
)

// Extract pulls the solution code out of a completion. lang is the fence's
// language tag: "python" for a ```python block, the dropped first line in
// lower case for another fenced block (docs/semantics.md §2 step 2: "cpp", "java", ...),
// "" when there is none. ok=false means "Invalid completion (missing code
// block)" (RuleVerl only; RulePRIME always finds code).
func Extract(completion string, rule Rule) (code, lang string, ok bool) {
	if i := strings.LastIndex(completion, pythonFence); i >= 0 {
		rest := completion[i+len(pythonFence):]
		if j := strings.Index(rest, fence); j >= 0 {
			rest = rest[:j]
		}
		return rest, "python", true
	}
	if rule == RulePRIME {
		if j := strings.Index(completion, fence); j >= 0 {
			return completion[:j], "", true
		}
		return completion, "", true
	}
	i := strings.Index(completion, fence)
	if i < 0 {
		return "", "", false
	}
	code = completion[i+len(fence):]
	if j := strings.Index(code, fence); j >= 0 {
		code = code[:j]
	}
	if nl := strings.IndexByte(code, '\n'); nl >= 0 {
		tag := strings.TrimFunc(code[:nl], isPySpace)
		if isPyAlpha(tag) {
			return code[nl+1:], strings.ToLower(tag), true
		}
	}
	return code, "", true
}

// isPySpace is Python's str.isspace for one character: Unicode White_Space
// plus the ASCII separators U+001C..U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// isPyAlpha is Python's str.isalpha: not empty, and every character a
// letter (categories Lu, Ll, Lt, Lm, Lo).
func isPyAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if !unicode.IsLetter(r) {
			return false
		}
		i += size
	}
	return true
}
