// Package lang is the registry of the languages verl may send: for each,
// verl's name, the code-fence tags that mean it, the programs and Debian
// packages it needs, how the embedded sandbox compiles and runs it, and
// the conformance cases any SandboxFusion-compatible sandbox must pass.
//
// Each language (or family) declares itself in a file of its own with
// Register; doctor, --language auto, the result cache's identity, the
// conformance tests and the CI install list all read this registry.
package lang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Language is one of verl's sandbox languages.
type Language struct {
	// Name is verl's (and SandboxFusion's) name for it.
	Name string
	// Fences are the code-fence tags that mean this language, compared
	// without regard to case.
	Fences []string
	// Detect, if set, refines a fence: given code fenced as this
	// language, it returns the language the code really is ("" for this
	// one), as a Go test file is go_test.
	Detect func(code string) string
	// Tools are the programs it needs, the compiler or interpreter first.
	Tools []Tool
	// Extras are Debian packages its benchmarks' tests import (MultiPL-E's
	// Perl tests need Test::Deep); the sandbox runs without them.
	Extras []string
	// Needs names, for a language without a runner here, the program a
	// runner would need ("": SandboxFusion has no runner for it either,
	// and a runner here would change verl's verdict); Note says more, for
	// doctor.
	Needs, Note string
	// Compiled: SandboxFusion compiles it in a step of its own, so that a
	// compile error shows in the first case (compile-error skipping
	// sends that case alone).
	Compiled bool
	// Slow: its toolchain is large or slow to start; its tests run apart
	// from the README's test command (build tag slowlangs).
	Slow bool
	// StartCrash explains a crash at start (every response of the language
	// killed by one signal before writing anything) by the signal's name,
	// where the language has a known cause; the summary gives it.
	StartCrash map[string]string
	// Cases are its conformance cases.
	Cases func() []Case
	// Runner says how the embedded sandbox runs it; nil where it cannot.
	*Runner
}

// RubyStackCause explains Ruby's crashes at start under a memory limit.
const RubyStackCause = "Ruby cannot start when its stack limit equals its memory limit, which is how SandboxFusion " +
	"runs it under memory_limit_MB " +
	"(so verl scores every Ruby program 0 there too); --ruby-stack-mb 8 lets Ruby run, with verdicts that then differ " +
	"from verl's"

// Tool is one program a language needs.
type Tool struct {
	Program string
	// Package provides it on Debian (or "npm: name" for npm).
	Package string
}

// versionArgs are the arguments that make a program print its version,
// where they are not --version.
var versionArgs = map[string][]string{"go": {"version"}, "java": {"-version"}, "javac": {"-version"}}

// VersionArgs are the arguments that make prog print its version.
func VersionArgs(prog string) []string {
	if a, ok := versionArgs[prog]; ok {
		return a
	}
	return []string{"--version"}
}

// Programs are the names of l's tools, the compiler or interpreter first.
func (l *Language) Programs() []string {
	out := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		out[i] = t.Program
	}
	return out
}

// Packages are what would install l's toolchain here.
func (l *Language) Packages() string {
	if len(l.Tools) == 0 {
		return l.Note
	}
	var pkgs []string
	for _, t := range l.Tools {
		if !slices.Contains(pkgs, t.Package) {
			pkgs = append(pkgs, t.Package)
		}
	}
	s := strings.Join(pkgs, ", ")
	if len(l.Extras) > 0 {
		s += " (and " + strings.Join(l.Extras, ", ") + " for the benchmarks' tests)"
	}
	return s
}

var registry = map[string]*Language{}

// Register adds a language; a second one of the same name, or a fence tag
// two languages claim, is a programming error.
func Register(l *Language) {
	if _, dup := registry[l.Name]; dup {
		panic("lang: " + l.Name + " registered twice")
	}
	for _, f := range l.Fences {
		f = strings.ToLower(f)
		if other, dup := fences[f]; dup {
			panic(fmt.Sprintf("lang: fence %q claimed by %s and %s", f, other, l.Name))
		}
		fences[f] = l.Name
	}
	registry[l.Name] = l
}

// Get returns the language named name (verl's spelling), or nil.
func Get(name string) *Language { return registry[name] }

// All returns every registered language in the order of the protocol's
// language list.
func All() []*Language {
	out := make([]*Language, 0, len(registry))
	for _, name := range sandboxclient.SupportedLanguages {
		if l := registry[name]; l != nil {
			out = append(out, l)
		}
	}
	for _, name := range Names() {
		if !slices.Contains(sandboxclient.SupportedLanguages, name) {
			out = append(out, registry[name])
		}
	}
	return out
}

// Names are the registered languages' names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Runnable reports whether the embedded sandbox has a runner for it.
func (l *Language) Runnable() bool { return l.Runner != nil }

// CasesOf are the conformance cases of the runnable languages, the slow
// ones or the others.
func CasesOf(slow bool) []Case {
	var out []Case
	for _, l := range All() {
		if l.Runner != nil && l.Slow == slow && l.Cases != nil {
			out = append(out, l.Cases()...)
		}
	}
	return out
}

// CompiledUpstream reports whether SandboxFusion compiles name in a step
// of its own.
func CompiledUpstream(name string) bool {
	l := registry[name]
	return l != nil && l.Compiled
}
