package lang

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// The registry holds exactly the languages of the protocol.
func TestRegistryIsTheProtocolsLanguages(t *testing.T) {
	want := slices.Sorted(slices.Values(sandboxclient.SupportedLanguages))
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("registry %v, protocol %v", got, want)
	}
	for _, l := range All() {
		switch {
		case l.Runner == nil && (len(l.Tools) > 0 || l.Note == ""):
			t.Errorf("%s: no runner, so no tools and a note for doctor", l.Name)
		case l.Runner != nil && (len(l.Tools) == 0 || l.Cases == nil || l.Run == nil || l.Source == ""):
			t.Errorf("%s: a runner needs tools, conformance cases, a run command and a source name", l.Name)
		}
		if l.Cases != nil {
			verdicts := map[verdict.Code]bool{}
			for _, c := range l.Cases() {
				if c.Language != l.Name || !strings.HasPrefix(c.Name, l.Name+"/") {
					t.Errorf("%s: case %s is for %s", l.Name, c.Name, c.Language)
				}
				verdicts[c.Want] = true
			}
			// Every runner is checked to pass, fail and time out.
			for _, v := range []verdict.Code{verdict.True, verdict.Timeout} {
				if !verdicts[v] {
					t.Errorf("%s: no conformance case wants %v", l.Name, v)
				}
			}
		}
	}
}

// The fence table: at least 40 spellings, each a registered language.
func TestFenceTable(t *testing.T) {
	table := Fences()
	if len(table) < 40 {
		t.Errorf("%d fence spellings, want at least 40", len(table))
	}
	for tag, name := range table {
		if Get(name) == nil || tag != strings.ToLower(tag) {
			t.Errorf("fence %q -> %q: not a lower-case tag of a registered language", tag, name)
		}
	}
	goTest := "package add_test\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n"
	goTestFn := "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"
	cases := []struct{ tag, code, want, rest string }{
		{"", "print(1)\n", "python", ""},
		{"python", "print(1)\n", "python", ""},
		{"py", "print(1)\n", "python", ""},
		{"python", "import pytest\n\ndef test_x():\n    assert 1\n", "pytest", ""},
		{"python", "def test_x():\n    assert 1\n", "python", ""},
		{"r", "cat(1)\n", "R", ""},
		{"ts", "let x = 1\n", "typescript", ""},
		{"ts", "import { expect, test } from '@jest/globals';\n", "jest", ""},
		{"kotlin", "println(1)\n", "kotlin_script", ""},
		{"kt", "println(1)\n", "kotlin_script", ""},
		{"rb", "puts 1\n", "ruby", ""},
		{"golang", "package main\nfunc main() {}\n", "go", ""},
		{"go", goTest, "go_test", ""},
		{"go", goTestFn, "go_test", ""},
		{"go", goTestFn + "func main() {}\n", "go", ""},
		{"java", "public class Main { public static void main(String[] a) {} }\n", "java", ""},
		{"java", "import org.junit.jupiter.api.Test;\nclass ATest { @Test void t() {} }\n", "junit", ""},
		{"js", "console.log(1)\n", "nodejs", ""},
		{"rs", "fn main() {}\n", "rust", ""},
		{"sh", "echo 1\n", "bash", ""},
		{"pl", "print 1;\n", "perl", ""},
		{"cs", "class A {}\n", "csharp", ""},
		{"jl", "println(1)\n", "julia", ""},
		{"cu", "int main() {}\n", "cuda", ""},
		// A tag verl's extraction does not keep (not all letters) stays
		// the code's first line; auto takes it and drops the line.
		{"", "c++\nint main() {}\n", "cpp", "int main() {}\n"},
		{"", "c#\nclass A {}\n", "csharp", "class A {}\n"},
		{"", "python3\nprint(1)\n", "python", "print(1)\n"},
		// A first line that is no fence spelling is code.
		{"", "x = 1\nprint(x)\n", "python", "x = 1\nprint(x)\n"},
		// Unknown tags come back as they are and fail as unsupported.
		{"cobol", "DISPLAY 1.\n", "cobol", ""},
	}
	for _, c := range cases {
		name, rest := FromFence(c.tag, c.code)
		wantRest := c.rest
		if wantRest == "" {
			wantRest = c.code
		}
		if name != c.want || rest != wantRest {
			t.Errorf("FromFence(%q, %q) = %q, %q; want %q, %q", c.tag, c.code, name, rest, c.want, wantRest)
		}
	}
}

// .ci/run installs every Debian package, npm package and runtime the
// registry names for a runner, and installs nothing for a language the
// registry lacks.
func TestCIInstallsWhatTheRegistryNames(t *testing.T) {
	data, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	ci := string(data)
	// Go builds verl-score and bash runs .ci/run: both are there.
	present := map[string]bool{"golang-go": true, "bash": true}
	// Installed for the tests, not for a language.
	// (matplotlib: the plot case of serve's /run_jupyter; binutils: the
	// fork server's machine-code loop, assembled to check its bytes.)
	forTests := map[string]bool{
		"python3-venv":       true,
		"util-linux":         true,
		"chromium":           true,
		"python3-matplotlib": true,
		"binutils":           true,
		// the repository tasks' tests: their image is built with
		// debootstrap, and SWE-bench applies patches with git and patch
		"debootstrap": true,
		// the pull tests' real distribution server
		"docker-registry": true,
		"patch":           true,
		"git":             true,
	}
	named := map[string]bool{}
	for _, l := range All() {
		if l.Runner == nil {
			continue
		}
		for _, tool := range l.Tools {
			pkg := tool.Package
			switch {
			case strings.HasPrefix(pkg, "npm: "):
				name := strings.Fields(strings.TrimPrefix(pkg, "npm: "))[0]
				if !strings.Contains(ci, "npm install -g "+name) {
					t.Errorf("%s: .ci/run does not npm install %s", l.Name, name)
				}
			case strings.Contains(pkg, "install.sh"):
				script := regexp.MustCompile(`[\w/]+install\.sh`).FindString(pkg)
				if !strings.Contains(ci, script) {
					t.Errorf("%s: .ci/run does not run %s", l.Name, script)
				}
			default:
				named[pkg] = true
				if !present[pkg] && !strings.Contains(ci, "need+=("+pkg+")") {
					t.Errorf("%s: .ci/run does not install %s (for %s)", l.Name, pkg, tool.Program)
				}
			}
		}
		for _, pkg := range l.Extras {
			named[pkg] = true
			if !strings.Contains(ci, "need+=("+pkg+")") {
				t.Errorf("%s: .ci/run does not install %s", l.Name, pkg)
			}
		}
	}
	for _, m := range regexp.MustCompile(`need\+=\(([^)]+)\)`).FindAllStringSubmatch(ci, -1) {
		if !named[m[1]] && !forTests[m[1]] {
			t.Errorf(".ci/run installs %s, which no language of the registry names", m[1])
		}
	}
}

// The fast paths and quirks are declared by the languages that have them,
// and by no other (the sandbox reads these, never a name).
func TestHooksAreDeclared(t *testing.T) {
	caches := map[string]CompileCache{
		"cpp":     PrecompiledHeader,
		"java":    ClassDataArchive,
		"go":      GoBuildCache,
		"go_test": GoBuildCache,
	}
	for _, l := range All() {
		if l.Runner == nil {
			continue
		}
		if got := l.CompileCache; got != caches[l.Name] {
			t.Errorf("%s: CompileCache %d, want %d", l.Name, got, caches[l.Name])
		}
		if l.Forkable != (l.Name == "python") || l.StackSetting != (l.Name == "ruby") {
			t.Errorf("%s: Forkable %v, StackSetting %v", l.Name, l.Forkable, l.StackSetting)
		}
		if (l.StartCrash["SIGSEGV"] == RubyStackCause) != (l.Name == "ruby") {
			t.Errorf("%s: StartCrash %v", l.Name, l.StartCrash)
		}
	}
}
