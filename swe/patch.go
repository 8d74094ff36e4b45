package swe

import (
	"regexp"
	"strings"
)

// fenceRe finds fenced blocks: the opening fence's tag and the body. A fence
// opens with three or more backticks at the start of a line and closes with
// at least as many; the tag is the first word after the opening backticks.
var fenceRe = regexp.MustCompile("(?m)^(`{3,})[ \\t]*([A-Za-z0-9_+-]*)[^\\n]*\\n")

// patchTagRe finds SWE-bench's own <patch>…</patch> form.
var patchTagRe = regexp.MustCompile(`(?s)<patch>\n?(.*?)</patch>`)

// ExtractPatch finds the patch in a model's response: the last ```diff or
// ```patch fence (or untagged fence whose body is a diff, or <patch> block),
// else the text from the first line that starts a diff ("diff --git " or
// "--- a/") to the end. ok is false when the response holds no patch. The
// patch returned ends with a newline, as git apply needs.
func ExtractPatch(response string) (patch string, ok bool) {
	var last string
	lastAt := -1
	for _, loc := range fenceBlocks(response) {
		tag, body := loc.tag, loc.body
		if tag == "diff" || tag == "patch" || (tag == "" && startsDiff(body)) {
			if loc.at > lastAt {
				last, lastAt = body, loc.at
			}
		}
	}
	for _, m := range patchTagRe.FindAllStringSubmatchIndex(response, -1) {
		if m[0] > lastAt {
			last, lastAt = response[m[2]:m[3]], m[0]
		}
	}
	if lastAt < 0 {
		at := diffStart(response)
		if at < 0 {
			return "", false
		}
		last = response[at:]
	}
	if strings.TrimSpace(last) == "" {
		return "", false
	}
	if !strings.HasSuffix(last, "\n") {
		last += "\n"
	}
	return last, true
}

type fence struct {
	at        int
	tag, body string
}

// fenceBlocks lists the fenced blocks of text in order; an unclosed fence
// runs to the end.
func fenceBlocks(text string) []fence {
	var out []fence
	pos := 0
	for {
		m := fenceRe.FindStringSubmatchIndex(text[pos:])
		if m == nil {
			return out
		}
		open := text[pos+m[2] : pos+m[3]]
		tag := strings.ToLower(text[pos+m[4] : pos+m[5]])
		bodyAt := pos + m[1]
		end, next := closeFence(text, bodyAt, len(open))
		out = append(out, fence{at: pos + m[0], tag: tag, body: text[bodyAt:end]})
		pos = next
		if pos >= len(text) {
			return out
		}
	}
}

// closeFence finds the line that closes a fence of n backticks opened
// before from: the body's end and where to look on.
func closeFence(text string, from, n int) (end, next int) {
	for at := from; at < len(text); {
		nl := strings.IndexByte(text[at:], '\n')
		line := text[at:]
		if nl >= 0 {
			line = text[at : at+nl]
		}
		t := strings.TrimRight(line, " \t\r")
		if len(t) >= n && strings.Trim(t, "`") == "" {
			if nl < 0 {
				return at, len(text)
			}
			return at, at + nl + 1
		}
		if nl < 0 {
			break
		}
		at += nl + 1
	}
	return len(text), len(text)
}

func startsDiff(body string) bool { return diffStart(body) == 0 }

// diffStart is the offset of the first line that starts a diff, or -1.
func diffStart(text string) int {
	for at := 0; at < len(text); {
		line := text[at:]
		if strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "--- a/") {
			return at
		}
		nl := strings.IndexByte(line, '\n')
		if nl < 0 {
			return -1
		}
		at += nl + 1
	}
	return -1
}
