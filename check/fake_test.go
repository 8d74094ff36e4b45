package check

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// fakeSandbox answers like a SandboxFusion server for toy programs whose
// behaviour is named by a marker in the code:
//
//	ECHO   prints its stdin (passes cases whose output equals the input)
//	FLAKY  times out on every other request for the same program and stdin, else ECHO
//	SLOW   always times out
//	CRASH  exits with status 1
//	DOWN   the request fails (API error)
type fakeSandbox struct {
	mu    sync.Mutex
	calls map[string]int
	total int
}

func newFakeSandbox() *fakeSandbox { return &fakeSandbox{calls: map[string]int{}} }

func (f *fakeSandbox) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	stdin := ""
	if req.Stdin != nil {
		stdin = *req.Stdin
	}
	f.mu.Lock()
	f.total++
	key := req.Code + "\x00" + stdin
	f.calls[key]++
	n := f.calls[key]
	f.mu.Unlock()
	zero, one := 0, 1
	finished := func(out string) *sandboxclient.Response {
		return &sandboxclient.Response{Status: sandboxclient.StatusSuccess, RunResult: &sandboxclient.StepResult{
			Status: sandboxclient.StepFinished, ReturnCode: &zero, Stdout: out}}
	}
	tle := &sandboxclient.Response{Status: sandboxclient.StatusFailed, RunResult: &sandboxclient.StepResult{
		Status: sandboxclient.StepTimeLimitExceeded}}
	switch {
	case strings.Contains(req.Code, "DOWN"):
		return nil, &sandboxclient.APIError{Attempts: 1, Err: errors.New("connection refused")}
	case strings.Contains(req.Code, "SLOW"):
		return tle, nil
	case strings.Contains(req.Code, "STARVEDCOMPILE"):
		// A compile that ran out of time once and then compiled.
		if n == 1 {
			return &sandboxclient.Response{Status: sandboxclient.StatusFailed, CompileResult: &sandboxclient.StepResult{
				Status: sandboxclient.StepTimeLimitExceeded}}, nil
		}
		return finished(stdin), nil
	case strings.Contains(req.Code, "FLAKY"):
		if n%2 == 1 {
			return tle, nil
		}
		return finished(stdin), nil
	case strings.Contains(req.Code, "CRASH"):
		return &sandboxclient.Response{Status: sandboxclient.StatusFailed, RunResult: &sandboxclient.StepResult{
			Status: sandboxclient.StepFinished, ReturnCode: &one, Stderr: "Traceback"}}, nil
	case strings.Contains(req.Code, "ECHO"):
		return finished(stdin), nil
	}
	return finished(""), nil
}

// gt is a ground truth of n echo cases ("0\n", "1\n", ...).
func gt(n int) string {
	var in []string
	for i := range n {
		in = append(in, string(rune('0'+i))+"\n")
	}
	b, _ := json.Marshal(map[string]any{"inputs": in, "outputs": in})
	return string(b)
}

func code(marker string) string { return "```python\n# " + marker + "\n```" }

// dumpLine is one rollout dump line (docs/semantics.md §1.2) with a data source.
func dumpLine(t *testing.T, ds, marker string, cases int, score any) string {
	t.Helper()
	b, err := json.Marshal(
		map[string]any{
			"input":       "prompt",
			"output":      code(marker),
			"gts":         gt(cases),
			"score":       score,
			"step":        1,
			"data_source": ds,
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
