package swe

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
)

// specsJSON is SWE-bench v4.1.0's evaluation specs of its Python
// repositories, written by scripts/swe-specs.py from the swebench package.
//
//go:embed specs_v4.1.0.json
var specsJSON []byte

var specTable = func() map[string]map[string]*Spec {
	var t struct {
		Specs map[string]map[string]*Spec `json:"specs"`
	}
	if err := json.Unmarshal(specsJSON, &t); err != nil {
		panic("swe: specs_v4.1.0.json: " + err.Error())
	}
	return t.Specs
}()

// TableSpec is SWE-bench v4.1.0's spec for a repository at a version.
func TableSpec(repo, version string) (*Spec, bool) {
	s, ok := specTable[repo][version]
	return s, ok
}

// DefaultParser is the parser of a row that names an evaluation script but
// no parser, and whose repository SWE-bench's table does not know.
const DefaultParser = "parse_log_pytest"

// A Plan is how one instance is evaluated.
type Plan struct {
	// Script is the evaluation script, run with bash in the work directory.
	Script string
	// ParserName names Parser ("parse_log_pytest", …).
	ParserName string
	Parser     Parser
	// Source says where the script came from: "eval_script" (the row's
	// own), "install_config" (SWE-rebench's) or "SWE-bench 4.1.0 specs".
	Source string
}

// PlanFor chooses how to evaluate an instance, the first that applies: the
// row's eval_script, its install_config, SWE-bench's specs for its (repo,
// version). An error says what the row lacks; it is the row's fault, never
// the model's.
func PlanFor(inst *Instance, logParser string) (*Plan, error) {
	parser := logParser
	if parser == "" && inst.Install != nil {
		parser = inst.Install.LogParser
	}
	if parser == "" {
		if s, ok := TableSpec(inst.Repo, inst.Version); ok {
			parser = s.Parser
		} else {
			parser = RepoParser(inst.Repo)
		}
	}
	p := &Plan{}
	switch {
	case inst.EvalScript != "":
		p.Script, p.Source = RecordExitCode(inst.EvalScript), "eval_script"
		if parser == "" {
			parser = DefaultParser
		}
	case inst.Install != nil && len(inst.Install.TestCmd) > 0:
		spec := &Spec{TestCmd: inst.Install.TestCmd, EvalCommands: inst.Install.EvalCommands,
			Install: inst.Install.Install}
		p.Script, p.Source = EvalScript(inst, spec), "install_config"
		if parser == "" {
			parser = DefaultParser
		}
	default:
		spec, ok := TableSpec(inst.Repo, inst.Version)
		if !ok {
			if _, known := specTable[inst.Repo]; known {
				return nil, fmt.Errorf("SWE instance %s: SWE-bench 4.1.0 has no spec for %s version %q (it has %v); "+
					"give the row an eval_script or an install_config", inst.InstanceID, inst.Repo, inst.Version,
					versionsOf(inst.Repo))
			}
			return nil, fmt.Errorf("SWE instance %s: no way to evaluate it: no eval_script, no install_config with a "+
				"test_cmd, and SWE-bench 4.1.0's specs do not know the repository %q", inst.InstanceID, inst.Repo)
		}
		p.Script, p.Source = EvalScript(inst, spec), "SWE-bench 4.1.0 specs"
	}
	f, ok := Parsers[parser]
	if !ok {
		return nil, fmt.Errorf("SWE instance %s: unknown log parser %q (known: %v)", inst.InstanceID, parser, parserNames())
	}
	p.ParserName, p.Parser = parser, f
	return p, nil
}

func versionsOf(repo string) []string {
	var out []string
	for v := range specTable[repo] {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func parserNames() []string {
	var out []string
	for n := range Parsers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
