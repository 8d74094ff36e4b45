package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
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
		"sandboxclient": {"verdict", "judge", "score"},
		"feed":          {"job", "check", "progress"},
		"toolcall":      {"score", "job", "rollout", "check", "feed"},
		"results":       {"job", "check", "report", "progress", "feed", "cmd", "sandbox"},
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
