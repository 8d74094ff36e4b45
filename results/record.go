package results

import (
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/verdict"
)

// Row is the record of one finished input row: its responses' rewards
// and verdicts and its cases, what a journal line holds and what the
// outputs and the summary are written from.
type Row struct {
	Index      int    `json:"index"`
	DataSource string `json:"data_source"`
	IsList     bool   `json:"is_list"`
	Prompt     string `json:"prompt,omitempty"` // rows of one prompt (dumps) share it
	// Unreadable is why the row could not be read at all (a line that is
	// not JSON): it still has its output row, and stays out of the means.
	Unreadable string           `json:"unreadable,omitempty"`
	Responses  []Response       `json:"responses"`
	Cases      [][]verdict.Case `json:"cases,omitempty"`
}

type Response struct {
	Reward float64 `json:"reward"`
	// RewardExact is the reward under verl's exact comparison, kept when
	// the run compares otherwise.
	RewardExact *float64 `json:"reward_exact,omitempty"`
	Verdicts    []int8   `json:"verdicts"`
	Statuses    []string `json:"statuses"`
	Err         *string  `json:"error,omitempty"`
	// InputErr: Err is the input's fault (a bad row or ground truth).
	InputErr bool `json:"input_error,omitempty"`
	Requests int  `json:"requests,omitempty"`
	Saved    int  `json:"saved,omitempty"`
	Deduped  int  `json:"deduped,omitempty"`
	Cached   int  `json:"cached,omitempty"`
	Retries  int  `json:"retries,omitempty"`
	Infra    bool `json:"infra,omitempty"`
	// FirstInfra is the message of the response's first infrastructure
	// failure that has one.
	FirstInfra string `json:"first_infra,omitempty"`
	Language   string `json:"language,omitempty"`
	// StarvedReruns counts the requests the embedded sandbox ran again
	// because a step was starved for a CPU.
	StarvedReruns int `json:"starved_reruns,omitempty"`
	// Crash is the signal, when every case of the response was killed by
	// that signal before it wrote anything (a crash at start).
	Crash string `json:"crash,omitempty"`
	// Audit is what the audit's probes found (--audit).
	Audit *score.Audit `json:"audit,omitempty"`
	// SWE is a repository task's outcome (its texts cut as the cases').
	SWE *score.SWEResult `json:"swe,omitempty"`
}

func (r *Row) RowResult() rollout.RowResult {
	var rr rollout.RowResult
	for _, s := range r.Responses {
		rr.Rewards = append(rr.Rewards, s.Reward)
		rr.RewardsExact = append(rr.RewardsExact, s.Exact())
		rr.CaseResults = append(rr.CaseResults, s.Verdicts)
		rr.CaseStatus = append(rr.CaseStatus, s.Statuses)
		rr.Errors = append(rr.Errors, s.Err)
	}
	return rr
}

// Exact is the response's reward under verl's exact comparison.
func (r *Response) Exact() float64 {
	if r.RewardExact != nil {
		return *r.RewardExact
	}
	return r.Reward
}
