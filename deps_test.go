package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandbox/lang"
)

// TestPackageDependencies keeps the data flowing one way: the engine
// knows no file format, the job no display, and the verdicts nothing of
// the transport or the engine that produce them.
func TestPackageDependencies(t *testing.T) {
	const mod = "github.com/verl-score/verl-score/"
	forbidden := map[string][]string{
		"score":         {"rollout", "job", "check", "progress", "feed"},
		"job":           {"progress", "cmd"},
		"verdict":       {"sandboxclient", "score", "judge"},
		"sandboxclient": {"verdict", "judge", "score", "swe"},
		"feed":          {"job", "check", "progress"},
		"toolcall":      {"score", "job", "rollout", "check", "feed"},
		"results":       {"job", "check", "report", "progress", "feed", "cmd", "sandbox"},
		// the SWE rules and the image store run nothing of the engine's
		"swe":            {"sandbox", "score", "job", "feed", "rollout", "cmd", "sandboxclient"},
		"sandbox/image":  {"sandbox", "sandbox/jail", "score", "job", "feed", "rollout", "cmd"},
		"sandbox/swerun": {"sandbox", "score", "job", "feed", "rollout", "cmd"},
		"swe/remote":     {"sandbox", "score", "job", "feed", "rollout", "cmd", "server"},
	}
	for pkg, not := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, n := range not {
			if slices.Contains(deps, mod+n) {
				t.Errorf("%s imports %s (directly or not)", pkg, n)
			}
		}
	}
}

// TestNoLanguageNameBranches: only the registry (sandbox/lang) decides by
// a language's name; the sandbox, the engine and the summary read what a
// language declares (its CompileCache, Forkable, StackSetting,
// StartCrash), so a language with a fast path is added in one place.
func TestNoLanguageNameBranches(t *testing.T) {
	names := strings.Join(lang.Names(), "|")
	branch := regexp.MustCompile(`(==|!=)\s*"(` + names + `)"|"(` + names + `)"\s*(==|!=)|case\s+"(` + names + `)"`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." &&
			(path == "sandbox/lang" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "python") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			program := strings.HasSuffix(line, "// the program, not the language")
			if m := branch.FindString(line); m != "" && !program && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d branches on a language name (%s): declare it in sandbox/lang", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
