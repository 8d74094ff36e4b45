package swe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DefaultWorkDir is where SWE-bench's images hold the repository.
const DefaultWorkDir = "/testbed"

// An Instance is one repository task: the ground truth of an SWE row, with
// SWE-bench's field names.
type Instance struct {
	InstanceID string
	Repo       string
	BaseCommit string
	TestPatch  string
	Version    string
	FailToPass []string
	PassToPass []string
	// Image is the environment's image reference (or a path), as the row
	// names it; empty when it names none (see ImageRef).
	Image string
	// EvalScript is the row's own evaluation script, if it has one.
	EvalScript string
	// Install is SWE-rebench's install_config, if the row has one.
	Install *InstallConfig
	// WorkDir is the repository's directory in the image.
	WorkDir string
}

// InstallConfig is the part of SWE-rebench's install_config that evaluation
// reads.
type InstallConfig struct {
	TestCmd      []string // one command, or several run in turn
	LogParser    string   // a parser's name: "parse_log_pytest", …
	EvalCommands []string
	Install      string
}

// IsInstance reports whether a ground truth has an SWE instance's shape: an
// instance_id and both test lists. This is how an SWE row is told from a
// program's test cases, with no flag.
func IsInstance(gt map[string]any) bool {
	_, id := gt["instance_id"]
	_, f2p := gt["FAIL_TO_PASS"]
	_, p2p := gt["PASS_TO_PASS"]
	return id && f2p && p2p
}

// ParseInstance reads an instance from a ground truth (a JSON object). The
// test lists may be lists or JSON-encoded lists, as SWE-bench accepts both.
// Errors name the field.
func ParseInstance(gt map[string]any) (*Instance, error) {
	inst := &Instance{WorkDir: DefaultWorkDir}
	var err error
	str := func(key string, required bool) string {
		if err != nil {
			return ""
		}
		v, ok := gt[key]
		if !ok || v == nil {
			if required {
				err = fmt.Errorf("SWE instance: no %q", key)
			}
			return ""
		}
		s, ok := v.(string)
		if !ok {
			err = fmt.Errorf("SWE instance: %q is %s, want a string", key, kindOf(v))
		}
		return s
	}
	inst.InstanceID = str("instance_id", true)
	inst.Repo = str("repo", false)
	inst.BaseCommit = str("base_commit", true)
	inst.TestPatch = str("test_patch", false)
	if err == nil {
		inst.Version, err = versionOf(gt["version"])
	}
	for _, k := range []string{"image", "image_name", "docker_image"} {
		if s := str(k, false); s != "" && inst.Image == "" {
			inst.Image = s
		}
	}
	inst.EvalScript = str("eval_script", false)
	if wd := str("workdir", false); wd != "" {
		inst.WorkDir = wd
	}
	if err != nil {
		return nil, err
	}
	if inst.FailToPass, err = testList(gt, "FAIL_TO_PASS"); err != nil {
		return nil, err
	}
	if inst.PassToPass, err = testList(gt, "PASS_TO_PASS"); err != nil {
		return nil, err
	}
	if ic, ok := gt["install_config"]; ok && ic != nil {
		if inst.Install, err = parseInstallConfig(ic); err != nil {
			return nil, err
		}
	}
	return inst, nil
}

// versionOf reads the version, a string in SWE-bench's data; a number (a
// JSON writer's doing) is written back as digits, an integral one with ".0"
// (3 → "3.0"), though a trailing zero it dropped ("3.10" → 3.1) is lost.
func versionOf(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case float64:
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s, nil
	}
	return "", fmt.Errorf("SWE instance: \"version\" is %s, want a string", kindOf(v))
}

// testList reads a list of test names given as a list or a JSON-encoded list.
func testList(gt map[string]any, key string) ([]string, error) {
	v, ok := gt[key]
	if !ok || v == nil {
		return nil, fmt.Errorf("SWE instance: no %q", key)
	}
	if s, ok := v.(string); ok {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, fmt.Errorf("SWE instance: %q is a string but not a JSON list of strings: %v", key, err)
		}
		return list, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("SWE instance: %q is %s, want a list of test names", key, kindOf(v))
	}
	list := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("SWE instance: %q[%d] is %s, want a string", key, i, kindOf(it))
		}
		list[i] = s
	}
	return list, nil
}

func parseInstallConfig(v any) (*InstallConfig, error) {
	if s, ok := v.(string); ok {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, fmt.Errorf("SWE instance: install_config is a string but not a JSON object: %v", err)
		}
		v = m
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("SWE instance: install_config is %s, want an object", kindOf(v))
	}
	ic := &InstallConfig{}
	var err error
	if ic.TestCmd, err = stringOrList(m["test_cmd"], "install_config.test_cmd"); err != nil {
		return nil, err
	}
	if ic.EvalCommands, err = stringOrList(m["eval_commands"], "install_config.eval_commands"); err != nil {
		return nil, err
	}
	if s, ok := m["log_parser"].(string); ok {
		ic.LogParser = s
	}
	if s, ok := m["install"].(string); ok {
		ic.Install = s
	}
	return ic, nil
}

func stringOrList(v any, field string) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, len(v))
		for i, it := range v {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("SWE instance: %s[%d] is %s, want a string", field, i, kindOf(it))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("SWE instance: %s is %s, want a string or a list of strings", field, kindOf(v))
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// ImageRef is the image the instance runs in: the row's, else SWE-bench's
// name for its instance image
// (swebench/sweb.eval.x86_64.<id lowercased, "__" as "_1776_">:latest).
func (inst *Instance) ImageRef() string {
	if inst.Image != "" {
		return inst.Image
	}
	id := strings.ReplaceAll(strings.ToLower(inst.InstanceID), "__", "_1776_")
	return "swebench/sweb.eval.x86_64." + id + ":latest"
}

// Fields are the instance as a ground truth gives it (SWE-bench's field
// names), which ParseInstance reads back to the same instance: what
// serve's /run_swe is sent.
func (inst *Instance) Fields() map[string]any {
	m := map[string]any{
		"instance_id": inst.InstanceID, "repo": inst.Repo, "base_commit": inst.BaseCommit,
		"test_patch": inst.TestPatch, "version": inst.Version,
		"FAIL_TO_PASS": nonNil(inst.FailToPass), "PASS_TO_PASS": nonNil(inst.PassToPass),
		"workdir": inst.WorkDir,
	}
	if inst.Image != "" {
		m["image"] = inst.Image
	}
	if inst.EvalScript != "" {
		m["eval_script"] = inst.EvalScript
	}
	if ic := inst.Install; ic != nil {
		m["install_config"] = map[string]any{"test_cmd": nonNil(ic.TestCmd), "eval_commands": nonNil(ic.EvalCommands),
			"log_parser": ic.LogParser, "install": ic.Install}
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
