package lang

import (
	"github.com/verl-score/verl-score/judge"
	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// Case is one program with its input, expected output and the verdict any
// SandboxFusion-compatible sandbox must give it. The same matrix runs
// through the embedded sandbox directly and through `verl-score serve`.
type Case struct {
	Name       string
	Language   string
	Code       string
	Stdin      *string           // nil sends "stdin": null
	Expected   *string           // nil: any finished run passes (assert-style cases)
	RunTimeout float64           // seconds; 0 means 10
	MemoryMB   int               // memory_limit_MB; 0 means 1024
	Files      map[string]string // the request's files, base64
	Want       verdict.Code
}

// Request is the request the case sends: 1024 MB and a compile timeout of
// 30 s (verl sends 10 s; the matrix runs many compiles at once on small
// test machines and is about verdicts, not compile speed).
func (c Case) Request() *sandboxclient.Request {
	rt := c.RunTimeout
	if rt == 0 {
		rt = 10
	}
	mem := c.MemoryMB
	if mem == 0 {
		mem = 1024
	}
	files := c.Files
	if files == nil {
		files = map[string]string{}
	}
	return &sandboxclient.Request{
		CompileTimeout: 30,
		RunTimeout:     rt,
		Code:           c.Code,
		Stdin:          c.Stdin,
		MemoryLimitMB:  mem,
		Language:       c.Language,
		Files:          files,
		FetchFiles:     []string{},
	}
}

// Judge gives the verdict of resp (or err) for this case.
func (c Case) Judge(resp *sandboxclient.Response, err error) verdict.Case {
	in, exp := "", ""
	if c.Stdin != nil {
		in = *c.Stdin
	}
	if c.Expected != nil {
		exp = *c.Expected
	}
	return judge.Case(0, in, exp, c.Expected, resp, err)
}

func optStr(s string) *string { return &s }

// The verdicts, short, for the case tables.
const (
	wantT  = verdict.True
	wantF  = verdict.False
	wantRE = verdict.RuntimeError
	wantTO = verdict.Timeout
	wantCE = verdict.CompileError
	wantSE = verdict.APIError
)

// sumCase is a case of the "add two numbers" program: stdin "2 3", wanted
// stdout "5".
func sumCase(lang, name, code string, want verdict.Code) Case {
	return Case{
		Name:     lang + "/" + name,
		Language: lang,
		Code:     code,
		Stdin:    optStr("2 3\n"),
		Expected: optStr("5\n"),
		Want:     want,
	}
}

// timeoutCase is sumCase with a run timeout of secs.
func timeoutCase(lang, code string, secs float64) Case {
	c := sumCase(lang, "timeout", code, wantTO)
	c.RunTimeout = secs
	return c
}
