package swe

import "fmt"

// A RulesVersion is the SWE-bench release whose harness verl-score follows.
type RulesVersion string

const (
	// V4 is SWE-bench v4.1.0, the default.
	V4 RulesVersion = "4.1.0"
	// V5 is SWE-bench v5's changes: the tree reset between apply attempts,
	// `git apply --3way` and `patch --forward`, a patch found already applied,
	// a skipped FAIL_TO_PASS test counted as failed, and a test run whose
	// command failed with nothing failing in the log not graded.
	V5 RulesVersion = "5"
)

// Rules are the choices of one scoring run.
type Rules struct {
	Version RulesVersion
}

// DefaultRules follow SWE-bench v4.1.0.
var DefaultRules = Rules{Version: V4}

// ParseRulesVersion reads a setting's value: "4.1.0" (or "v4.1.0", "4") or
// "5" ("v5", "5.0").
func ParseRulesVersion(s string) (RulesVersion, error) {
	switch s {
	case "4.1.0", "v4.1.0", "4", "v4", "4.1":
		return V4, nil
	case "5", "v5", "5.0", "5.0.0", "v5.0.0":
		return V5, nil
	}
	return "", fmt.Errorf("unknown SWE-bench rules %q (want 4.1.0 or 5)", s)
}

func (r Rules) applyCommands() []string {
	if r.Version == V5 {
		return []string{
			"git apply --verbose",
			"git apply --verbose --3way",
			"git apply --verbose --reject",
			"patch --batch --forward --fuzz=5 -p1 -i",
		}
	}
	return []string{
		"git apply --verbose",
		"git apply --verbose --reject",
		"patch --batch --fuzz=5 -p1 -i",
	}
}
