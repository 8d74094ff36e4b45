package score

import (
	"strings"
	"testing"

	"github.com/verl-score/verl-score/resultcache"
	"github.com/verl-score/verl-score/sandboxclient"
)

// TestCacheKeepsOnlyVerdictsOfTheCode: an answer is kept across runs only
// when its verdict belongs to the program. A compile or run that reached
// its time limit may not on a quieter machine, so it is kept only with
// CacheTimeouts; a compile error and a wrong answer are always kept.
func TestCacheKeepsOnlyVerdictsOfTheCode(t *testing.T) {
	s := newStandIn(t, 0)
	s.run = func(req *sandboxclient.Request) *sandboxclient.Response {
		switch {
		case strings.Contains(req.Code, "SLOW_COMPILE"):
			return &sandboxclient.Response{Status: sandboxclient.StatusFailed,
				CompileResult: &sandboxclient.StepResult{Status: sandboxclient.StepTimeLimitExceeded, ExecutionTime: 10}}
		case strings.Contains(req.Code, "SLOW_RUN"):
			return &sandboxclient.Response{Status: sandboxclient.StatusFailed,
				RunResult: &sandboxclient.StepResult{Status: sandboxclient.StepTimeLimitExceeded, ExecutionTime: 10}}
		}
		return echoRun(req)
	}
	sols := []Solution{
		{Completion: "```cpp\n// SLOW_COMPILE\n```", GroundTruth: groundTruth(1), Language: "cpp"},
		{Completion: "```python\n# SLOW_RUN\n```", GroundTruth: groundTruth(1)},
		{Completion: "```cpp\n// COMPILE_ERROR\n```", GroundTruth: groundTruth(1), Language: "cpp"},
		{Completion: "```python\n# WRONG\n```", GroundTruth: groundTruth(1)},
	}
	for i := range sols {
		sols[i].ID = int64(i)
	}
	for _, keepTimeouts := range []bool{false, true} {
		cache, err := resultcache.Open(t.TempDir(), "test", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		opts.Cache, opts.CacheTimeouts, opts.NoCompileSkip = cache, keepTimeouts, true
		var statuses []string
		for run := range 2 {
			e, err := New(s.client(t, 4), opts)
			if err != nil {
				t.Fatal(err)
			}
			before := s.requests.Load()
			res := runAll(t, e, sols)
			sent := s.requests.Load() - before
			statuses = statuses[:0]
			for _, r := range res {
				statuses = append(statuses, r.Cases[0].Status)
			}
			want := int64(4) // the first run sends every case
			if run == 1 {
				want = 2 // the second sends what was not kept: the timeouts
				if keepTimeouts {
					want = 0
				}
			}
			if sent != want {
				t.Errorf("CacheTimeouts %v, run %d: sent %d requests, want %d", keepTimeouts, run, sent, want)
			}
		}
		if got := strings.Join(statuses, " "); got != "compile_timeout timeout compile_error wrong_answer" {
			t.Errorf("statuses: %s", got)
		}
	}
}
