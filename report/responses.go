package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/testcases"
	"github.com/verl-score/verl-score/verdict"
)

// Response is one scored response with what explains its reward: its
// code, its verdicts and, from the run's --cases-out file, its cases.
type Response struct {
	Row        int     `json:"row"`
	Index      int     `json:"response"`
	ID         string  `json:"id,omitempty"` // the dataset's task id (rollout.ScoredRow.TaskID)
	DataSource string  `json:"data_source"`
	Reward     float64 `json:"reward"`
	Error      string  `json:"error,omitempty"` // reward_error
	// Code is the code extracted from the response as verl extracts it,
	// and Fence the language of its fence; Text is the response itself
	// when no code could be extracted.
	Code  string `json:"code,omitempty"`
	Fence string `json:"fence,omitempty"`
	Text  string `json:"text,omitempty"`
	// Unscored is set for a response read from a file verl-score did not
	// score (a rollout dump): Reward is then the trainer's score, and
	// there are no verdicts.
	Unscored bool           `json:"unscored,omitempty"`
	Verdicts []int8         `json:"verdicts"`
	Statuses []string       `json:"statuses"`
	Cases    []verdict.Case `json:"cases,omitempty"` // nil without a cases file
	// SWE is a repository task's outcome, from the cases file.
	SWE *score.SWEResult `json:"swe,omitempty"`
}

// Name names the response: by its task id when the dataset has one, else
// by row:response.
func (r *Response) Name() string {
	if r.ID != "" {
		return fmt.Sprintf("%s#%d", r.ID, r.Index)
	}
	return fmt.Sprintf("%d:%d", r.Row, r.Index)
}

// Failed reports whether any case did not pass, or the response could not
// be scored.
func (r *Response) Failed() bool {
	if r.Unscored {
		return !(r.Reward >= 1)
	}
	if r.Error != "" || len(r.Verdicts) == 0 {
		return true
	}
	for _, v := range r.Verdicts {
		if v != int8(verdict.True) {
			return true
		}
	}
	return false
}

// ReadResponses reads the responses of a scored output that keep selects
// (all when keep is nil), in order, with their cases from the cases file
// when casesPath is not "". keep sees a response without its cases.
//
// A rollout dump (a directory or a file) that verl-score did not score is
// read too: its responses come with the trainer's score, unscored.
func ReadResponses(scoredPath, casesPath string, opts rollout.Options, keep func(*Response) bool) ([]*Response, error) {
	if st, err := os.Stat(scoredPath); err == nil && st.IsDir() {
		return readUnscored(scoredPath, opts, keep)
	}
	sr, err := rollout.OpenScored(scoredPath, opts)
	if errors.Is(err, rollout.ErrNotScored) {
		return readUnscored(scoredPath, opts, keep)
	}
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	opts.Scored = true
	in, err := rollout.OpenInput(scoredPath, nil, opts)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	var out []*Response
	var batch *rollout.Batch
	next := 0
	for {
		row, err := sr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, rollout.ErrNotScored) && len(out) == 0 {
			sr.Close()
			return readUnscored(scoredPath, opts, keep)
		}
		if err != nil {
			return nil, err
		}
		for batch == nil || next == len(batch.Rows) {
			if batch, err = in.Next(); err != nil {
				return nil, fmt.Errorf("%s: reading its responses: %w", scoredPath, err)
			}
			next = 0
		}
		texts := batch.Rows[next].Responses
		next++
		for j := range row.Rewards {
			r := &Response{Row: row.Index, Index: j, ID: row.TaskID, DataSource: row.DataSource, Reward: row.Rewards[j]}
			if j < len(row.CaseResults) {
				r.Verdicts = row.CaseResults[j]
			}
			if j < len(row.CaseStatus) {
				r.Statuses = row.CaseStatus[j]
			}
			if j < len(row.Errors) && row.Errors[j] != nil {
				r.Error = *row.Errors[j]
			}
			if j < len(texts) {
				if code, fence, ok := testcases.Extract(texts[j], testcases.RuleVerl); ok {
					r.Code, r.Fence = code, fence
				} else {
					r.Text = texts[j]
				}
			}
			if keep == nil || keep(r) {
				out = append(out, r)
			}
		}
	}
	if casesPath != "" {
		if err := addCases(casesPath, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readUnscored reads the responses of an input verl-score did not score,
// with the reference score each row carries (a rollout dump's score).
func readUnscored(path string, opts rollout.Options, keep func(*Response) bool) ([]*Response, error) {
	in, err := rollout.OpenInput(path, nil, opts)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	var out []*Response
	for {
		b, err := in.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			for j, text := range row.Responses {
				r := &Response{
					Row:        row.Index,
					Index:      j,
					ID:         row.TaskID,
					DataSource: row.DataSource,
					Unscored:   true,
					Reward:     math.NaN(),
				}
				if j < len(row.RefScores) {
					r.Reward = row.RefScores[j]
				}
				if code, fence, ok := testcases.Extract(text, testcases.RuleVerl); ok {
					r.Code, r.Fence = code, fence
				} else {
					r.Text = text
				}
				if keep == nil || keep(r) {
					out = append(out, r)
				}
			}
		}
	}
}

// addCases gives each response its cases from a --cases-out file.
func addCases(path string, rs []*Response) error {
	byKey := map[[2]int]*Response{}
	for _, r := range rs {
		byKey[[2]int{r.Row, r.Index}] = r
	}
	_, err := results.ReadCases(path, func(c *results.Case) error {
		if r := byKey[[2]int{c.Row, c.ResponseIndex}]; r != nil {
			r.Cases = append(r.Cases, c.Case)
			if c.SWE != nil {
				r.SWE = c.SWE
			}
		}
		return nil
	})
	return err
}
