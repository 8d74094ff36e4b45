// Package worker speaks the line protocol of `verl-score worker`: one
// JSON request per line in, one JSON result per line out, in the order
// the requests came, all scored by one long-lived engine. The Python
// package (python/verl_score) keeps one such process per Python process,
// so a reward call costs a line each way instead of a process start.
//
// The first line out says the worker is ready:
//
//	{"ready": true, "version": "0.1.0", "sandbox": "embedded sandbox (2 at once; isolation auto (…))"}
//
// A request:
//
//	{"id": 7, "data_source": "codecontests", "solution_str": "```python\n...```",
//	 "ground_truth": "{\"inputs\": [...], \"outputs\": [...]}", "language": "python"}
//
// id is any JSON value and is handed back as it came. ground_truth is what
// verl's reward function gets: the test cases as a JSON string, or as an
// object. language is optional (the worker's --language otherwise). Its
// result:
//
//	{"id": 7, "score": 1, "verdicts": [1, 1], "statuses": ["success", "success"],
//	 "error": "", "language": "python", "continuous": true, "infra": false}
//
// verdicts are verl's codes (1 True, 0 False, -1..-4). A line that is not
// a request still gets one result, with score 0 and the reason in error,
// and the worker goes on. The worker ends when its input ends, after the
// last result.
package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/verl-score/verl-score/score"
)

// Request is one reward call.
type Request struct {
	ID          json.RawMessage `json:"id"`
	DataSource  string          `json:"data_source"`
	Solution    *string         `json:"solution_str"`
	GroundTruth json.RawMessage `json:"ground_truth"`
	Language    string          `json:"language,omitempty"`
}

// Result is the answer to one Request.
type Result struct {
	ID         json.RawMessage `json:"id"`
	Score      float64         `json:"score"`
	Verdicts   []int8          `json:"verdicts"`
	Statuses   []string        `json:"statuses"`
	Error      string          `json:"error"`
	Language   string          `json:"language"`
	Continuous bool            `json:"continuous"`
	Infra      bool            `json:"infra"`
	// SWE is a repository task's outcome (resolved, the F2P and P2P
	// counts, the log's end, ...), for such a response.
	SWE *score.SWEResult `json:"swe,omitempty"`
}

// Ready is the worker's first line.
type Ready struct {
	Ready   bool   `json:"ready"`
	Version string `json:"version"`
	Sandbox string `json:"sandbox"`
}

// maxLine bounds one request line: a completion and its test cases.
var maxLine = 256 << 20

var null = json.RawMessage("null")

// Serve writes ready, then answers every request line read from in on out
// until in ends or ctx is cancelled. Results are written (and flushed) as
// soon as they and every earlier one are done.
func Serve(ctx context.Context, eng *score.Engine, in io.Reader, out io.Writer, ready Ready) error {
	w := bufio.NewWriter(out)
	ready.Ready = true
	if err := writeLine(w, ready); err != nil {
		return err
	}
	ids := &idTable{m: map[int64]json.RawMessage{}}
	sols := make(chan score.Solution)
	readErr := make(chan error, 1)
	go func() {
		defer close(sols)
		readErr <- feed(ctx, in, sols, ids)
	}()
	err := eng.RunInOrder(ctx, sols, func(r *score.Result) error {
		return writeLine(w, resultOf(ids.take(r.ID), r))
	})
	if err != nil {
		return err
	}
	if err := <-readErr; err != nil {
		return err
	}
	return ctx.Err()
}

// feed turns request lines into solutions until in ends or ctx is done.
func feed(ctx context.Context, in io.Reader, sols chan<- score.Solution, ids *idTable) error {
	r := bufio.NewReaderSize(in, 1<<16)
	for n := int64(1); ; n++ {
		line, tooLong, err := readLine(r)
		if len(line) > 0 || tooLong {
			sol := solutionOf(n, line, tooLong, ids)
			select {
			case sols <- sol:
			case <-ctx.Done():
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading requests: %w", err)
		}
	}
}

// readLine reads one line without its line ending. A line longer than
// maxLine is read to its end and dropped: tooLong reports it.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		} else {
			line, tooLong = nil, true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		return line, tooLong, err
	}
}

// solutionOf parses request line n. A line that is not a request becomes
// a solution that scores 0 with the reason, so that it still has its
// result.
func solutionOf(n int64, line []byte, tooLong bool, ids *idTable) score.Solution {
	sol := score.Solution{ID: n}
	var req Request
	switch {
	case tooLong:
		sol.Err = fmt.Errorf("request line %d: longer than %d MiB", n, maxLine>>20)
	default:
		if err := json.Unmarshal(line, &req); err != nil {
			sol.Err = fmt.Errorf("request line %d: not a JSON request object: %v", n, err)
		} else if req.Solution == nil {
			sol.Err = fmt.Errorf("request line %d: no solution_str", n)
		} else if len(req.GroundTruth) == 0 || string(req.GroundTruth) == "null" {
			sol.Err = fmt.Errorf("request line %d: no ground_truth", n)
		}
	}
	id := req.ID
	if len(id) == 0 {
		id = null
	}
	ids.put(n, id)
	if sol.Err != nil {
		return sol
	}
	sol.Completion = *req.Solution
	sol.GroundTruth = req.GroundTruth
	sol.DataSource = req.DataSource
	sol.Language = req.Language
	return sol
}

func resultOf(id json.RawMessage, r *score.Result) Result {
	res := Result{ID: id, Score: r.Score, Verdicts: r.Verdicts(), Statuses: r.Statuses(), Error: r.Err,
		Language: r.Language, Continuous: r.Continuous, Infra: r.Infra(), SWE: r.SWE}
	if r.Aborted && res.Error == "" {
		res.Error = "interrupted before every case was run"
	}
	return res
}

func writeLine(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

// idTable keeps each request's id until its result is written.
type idTable struct {
	mu sync.Mutex
	m  map[int64]json.RawMessage
}

func (t *idTable) put(n int64, id json.RawMessage) {
	t.mu.Lock()
	t.m[n] = id
	t.mu.Unlock()
}

func (t *idTable) take(n int64) json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.m[n]
	delete(t.m, n)
	if !ok {
		return null
	}
	return id
}
