package lang

import (
	"strings"
	"unicode"
)

// fences maps a lower-case fence tag to the language it means; each
// language's Register fills it from its Fences.
var fences = map[string]string{}

// Fences returns the fence table: lower-case tag -> language.
func Fences() map[string]string {
	out := make(map[string]string, len(fences))
	for k, v := range fences {
		out[k] = v
	}
	return out
}

// FromFence is --language auto's choice for code taken out of a fenced
// block. tag is the fence's tag as the extraction found it (verl's rule
// keeps only a tag of letters, so "c++" or "python3" arrive as "" with the
// tag still the code's first line). It returns the language and the code
// without such a first line. An untagged fence is python, as verl assumes;
// an unknown tag comes back as it is, lower-cased, and fails as an
// unsupported language. A language's Detect rule then looks at the code
// (a Go test file is go_test).
func FromFence(tag, code string) (name, rest string) {
	rest = code
	tag = strings.ToLower(tag)
	if tag == "" {
		first, after, ok := strings.Cut(code, "\n")
		if t := strings.ToLower(strings.TrimSpace(first)); ok && t != "" && !isLetters(t) && fences[t] != "" {
			tag, rest = t, after
		}
	}
	switch {
	case tag == "":
		name = "python"
	case fences[tag] != "":
		name = fences[tag]
	default:
		return tag, rest
	}
	if l := registry[name]; l != nil && l.Detect != nil {
		if d := l.Detect(rest); d != "" {
			name = d
		}
	}
	return name, rest
}

func isLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}
