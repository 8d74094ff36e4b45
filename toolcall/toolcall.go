// Package toolcall reads the code_interpreter calls of multi-turn rollouts
// and replays them with verl's tool semantics.
//
// In agent RL with verl the model calls a code_interpreter tool (one
// `code` string, Python unless the call names a language) during the
// rollout. verl's tool sends the code to the sandbox's /run_code with no
// stdin and no expected output, compile and run timeouts both the call's
// `timeout` (else the tool's default, 30 s), and the tool's memory limit
// (1024 MB); the observation fed back to the model is the run's stdout
// followed by its stderr when the run finished (whatever its exit code),
// and the text "no stdout here" otherwise (a timeout, a sandbox error).
//
// A rollout dump (trainer.rollout_data_dir) holds each trajectory's
// generated text in `output`. With a Hermes chat template (Qwen's) a call
// is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in an
// assistant turn and its observation comes back in the next turn as
// `<tool_response>\n...\n</tool_response>`; the calls of one turn are
// answered in order. gpt-oss's harmony format is read too (verl's other
// tool parser).
package toolcall

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/verl-score/verl-score/sandboxclient"
)

// Tool defaults of verl's SandboxFusionTool.
const (
	DefaultName     = "code_interpreter"
	DefaultTimeout  = 30.0
	DefaultMemoryMB = 1024
	DefaultLanguage = "python"
	// NoStdout is the observation of a run that did not finish.
	NoStdout = "no stdout here"
)

// Call is one tool call of a trajectory and the observation recorded
// after it.
type Call struct {
	Index     int    // the call's place in its trajectory, from 0
	Name      string // the tool called
	Code      string
	Language  string  // "" means the tool's default
	Timeout   float64 // 0 means the tool's default
	Recorded  string  // the observation in the dump
	HasRecord bool    // false: the trajectory ends before an observation
	// Problem says why the call cannot be replayed (its JSON does not
	// parse, it has no code, it calls another tool); empty when it can.
	Problem string
}

var (
	callRE     = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	responseRE = regexp.MustCompile(`(?s)<tool_response>\n?(.*?)\n?</tool_response>`)

	// gpt-oss's harmony format: a call goes to functions.NAME on the
	// commentary channel with JSON arguments and ends with <|call|>; the
	// tool's answer comes from functions.NAME to the assistant. The
	// analysis channel (the chain of thought) is left out, as verl does:
	// what looks like a call there is not one.
	harmonyCallRE = regexp.MustCompile(
		`(?s)(?:<\|start\|>assistant)?<\|channel\|>[^<]* to=functions\.([^<\s]+)\s*<\|constrain\|>json<\|message\|>(.*?)<\|call\|>`,
	)
	harmonyRespRE = regexp.MustCompile(
		`(?s)<\|start\|>functions\.[^<\s]+ to=assistant<\|channel\|>[^<]*<\|message\|>(.*?)<\|end\|>`,
	)
	analysisRE = regexp.MustCompile(`(?s)(?:<\|start\|>assistant)?<\|channel\|>analysis<\|message\|>.*?<\|end\|>`)
)

// Parse finds the tool calls of text, in the formats verl's tool parsers
// read (hermes, gpt-oss), and pairs each with the observation that
// followed it: the calls waiting for an answer take the tool responses
// after them in order.
func Parse(text string) []Call {
	type mark struct {
		at         int
		call       bool
		name, body string
	}
	var marks []mark
	for _, m := range callRE.FindAllStringSubmatchIndex(text, -1) {
		marks = append(marks, mark{at: m[0], call: true, body: text[m[2]:m[3]]})
	}
	for _, m := range responseRE.FindAllStringSubmatchIndex(text, -1) {
		marks = append(marks, mark{at: m[0], body: text[m[2]:m[3]]})
	}
	if strings.Contains(text, "<|channel|>") {
		// Blank the chain of thought, keeping every offset.
		text = analysisRE.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range harmonyCallRE.FindAllStringSubmatchIndex(text, -1) {
			marks = append(marks, mark{at: m[0], call: true, name: text[m[2]:m[3]], body: text[m[4]:m[5]]})
		}
		for _, m := range harmonyRespRE.FindAllStringSubmatchIndex(text, -1) {
			body := text[m[2]:m[3]]
			var s string
			if json.Unmarshal([]byte(body), &s) == nil {
				body = s // a template that writes the content as JSON
			}
			marks = append(marks, mark{at: m[0], body: body})
		}
	}
	// In text order (the kinds never overlap).
	slices.SortStableFunc(marks, func(a, b mark) int { return a.at - b.at })
	var calls []Call
	waiting := 0 // the first call without an observation
	for _, m := range marks {
		if m.call {
			if m.name != "" {
				calls = append(calls, fromArguments(len(calls), m.name, json.RawMessage(m.body)))
			} else {
				calls = append(calls, parseCall(len(calls), m.body))
			}
			continue
		}
		if waiting < len(calls) {
			calls[waiting].Recorded, calls[waiting].HasRecord = m.body, true
			waiting++
		}
	}
	return calls
}

// parseCall reads one Hermes call's JSON: {"name": ..., "arguments": ...}.
func parseCall(index int, body string) Call {
	var raw struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &raw); err != nil {
		return Call{Index: index, Problem: "the call is not JSON: " + err.Error()}
	}
	return fromArguments(index, raw.Name, raw.Arguments)
}

// fromArguments reads a call's arguments: an object, or a JSON string
// holding one.
func fromArguments(index int, name string, args json.RawMessage) Call {
	c := Call{Index: index, Name: name}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		c.Problem = "the call's arguments are not a JSON object"
		return c
	}
	switch code := a["code"].(type) {
	case string:
		c.Code = code
	case nil:
	default:
		// verl's tool turns what is not a string into one with str();
		// only Python can say exactly how, so such a call is not replayed.
		c.Problem = fmt.Sprintf("the code is a JSON %T, not a string", code)
		return c
	}
	if l, ok := a["language"].(string); ok {
		c.Language = l
	}
	if t, ok := a["timeout"].(float64); ok {
		c.Timeout = t
	}
	return c
}

// Trajectory is one line of a dump and its calls.
type Trajectory struct {
	File  string
	Line  int // 1-based
	Step  *int64
	Calls []Call
}

// ReadDump reads the trajectories of a rollout dump file (JSONL, one
// object per line with the generated text in `output`). A line that is
// not such an object is an error naming the file and line.
func ReadDump(path string) ([]Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var out []Trajectory
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var row struct {
				Output *string `json:"output"`
				Step   *int64  `json:"step"`
			}
			if jerr := json.Unmarshal(b, &row); jerr != nil {
				return nil, fmt.Errorf("%s line %d: not a JSON object: %v", path, line, jerr)
			}
			if row.Output == nil {
				return nil, fmt.Errorf(
					"%s line %d: no \"output\" field (a rollout dump line has input, output, score and step)",
					path,
					line,
				)
			}
			out = append(out, Trajectory{File: path, Line: line, Step: row.Step, Calls: Parse(*row.Output)})
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// Options say how calls are run again.
type Options struct {
	Name     string  // the tool to replay (DefaultName)
	Timeout  float64 // the tool's default timeout (DefaultTimeout)
	MemoryMB int     // the tool's memory limit (DefaultMemoryMB)
	Language string  // the tool's default language (DefaultLanguage)
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MemoryMB <= 0 {
		o.MemoryMB = DefaultMemoryMB
	}
	if o.Language == "" {
		o.Language = DefaultLanguage
	}
	return o
}

// Request is what verl's tool sends for call c; nil, with the reason,
// when c cannot be replayed.
func (o Options) Request(c Call) (*sandboxclient.Request, string) {
	o = o.withDefaults()
	switch {
	case c.Problem != "":
		return nil, c.Problem
	case c.Name != o.Name:
		return nil, fmt.Sprintf("a call of %q, not %q", c.Name, o.Name)
	case !c.HasRecord:
		return nil, "no observation was recorded after it"
	}
	timeout := o.Timeout
	if c.Timeout > 0 {
		timeout = c.Timeout
	}
	lang := o.Language
	if c.Language != "" {
		lang = c.Language
	}
	return &sandboxclient.Request{
		Code:           c.Code,
		Language:       lang,
		CompileTimeout: timeout,
		RunTimeout:     timeout,
		MemoryLimitMB:  o.MemoryMB,
	}, ""
}

// Observe is verl's observation of an answer: stdout then stderr when the
// run finished, NoStdout otherwise (err set, no run, or a run that did
// not finish).
func Observe(resp *sandboxclient.Response, err error) string {
	if err != nil || resp == nil || resp.RunResult == nil || resp.RunResult.Status != sandboxclient.StepFinished {
		return NoStdout
	}
	return resp.RunResult.Stdout + resp.RunResult.Stderr
}
