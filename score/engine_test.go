package score

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/verdict"
)

// standIn is an httptest SandboxFusion server. It answers like the real
// server does: a program whose code contains "COMPILE_ERROR" fails to
// compile (cpp); otherwise the run echoes its stdin, unless the code
// contains "WRONG" (prints "nope"). It records requests and the largest
// number in flight.
type standIn struct {
	srv      *httptest.Server
	delay    time.Duration
	requests atomic.Int64
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	run      func(req *sandboxclient.Request) *sandboxclient.Response
}

func newStandIn(t testing.TB, delay time.Duration) *standIn {
	s := &standIn{delay: delay, run: echoRun}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) handle(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	s.requests.Add(1)
	var req sandboxclient.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"detail":[{"msg":"bad json"}]}`, http.StatusUnprocessableEntity)
		return
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.run(&req))
}

func intp(i int) *int { return &i }

func echoRun(req *sandboxclient.Request) *sandboxclient.Response {
	resp := &sandboxclient.Response{Status: sandboxclient.StatusSuccess, Files: map[string]string{}}
	if req.Language == "cpp" {
		rc := 0
		if strings.Contains(req.Code, "COMPILE_ERROR") {
			rc = 1
		}
		resp.CompileResult = &sandboxclient.StepResult{
			Status:        sandboxclient.StepFinished,
			ReturnCode:    intp(rc),
			ExecutionTime: 0.3,
		}
		if rc != 0 {
			resp.Status = sandboxclient.StatusFailed
			resp.CompileResult.Stderr = "error: expected ';' before 'return'\n"
			return resp
		}
	}
	out := ""
	if req.Stdin != nil {
		out = *req.Stdin + "\n"
	}
	if strings.Contains(req.Code, "WRONG") {
		out = "nope\n"
	}
	resp.RunResult = &sandboxclient.StepResult{
		Status:        sandboxclient.StepFinished,
		ReturnCode:    intp(0),
		Stdout:        out,
		ExecutionTime: 0.01,
	}
	return resp
}

func (s *standIn) client(t testing.TB, conns int) *sandboxclient.HTTPClient {
	t.Helper()
	c, err := sandboxclient.NewHTTPClient(sandboxclient.HTTPOptions{URL: s.srv.URL + "/run_code", MaxConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// groundTruth builds a stdin/stdout ground truth JSON string with n cases
// whose expected output equals the input.
func groundTruth(n int) []byte {
	in := make([]string, n)
	for i := range in {
		in[i] = fmt.Sprintf("case-%d", i)
	}
	obj, _ := json.Marshal(map[string][]string{"inputs": in, "outputs": in})
	s, _ := json.Marshal(string(obj))
	return s
}

func runAll(t testing.TB, e *Engine, sols []Solution) []*Result {
	t.Helper()
	in := make(chan Solution)
	go func() {
		defer close(in)
		for _, s := range sols {
			in <- s
		}
	}()
	var out []*Result
	err := e.RunInOrder(context.Background(), in, func(r *Result) error {
		c := *r
		out = append(out, &c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunEmitsAsFinished: Run hands a result over as soon as it is
// finished, so a slow first solution holds none of the others back (a job
// journals each at once); RunInOrder keeps the input order.
func TestRunEmitsAsFinished(t *testing.T) {
	for _, inOrder := range []bool{false, true} {
		s := newStandIn(t, 0)
		release := make(chan struct{})
		s.run = func(req *sandboxclient.Request) *sandboxclient.Response {
			if strings.Contains(req.Code, "slow") {
				<-release
			}
			return echoRun(req)
		}
		e, _ := New(
			s.client(t, 4),
			Options{MaxConcurrent: 4, Timeout: 10, MemoryLimitMB: 1024, Language: "python", NoDedup: true},
		)
		in := make(chan Solution, 6)
		for i := range 6 {
			code := "print(input())"
			if i == 0 {
				code = "print(input())  # slow"
			}
			in <- Solution{ID: int64(i), Completion: "```python\n" + code + "\n```", GroundTruth: groundTruth(1)}
		}
		close(in)
		var got []int64
		run := e.Run
		if inOrder {
			run = e.RunInOrder
			close(release) // nothing could come before it
		}
		err := run(context.Background(), in, func(r *Result) error {
			got = append(got, r.ID)
			if len(got) == 5 && !inOrder {
				close(release) // the other five are out: now the slow one
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 1, 2, 3, 4, 5}
		if !inOrder {
			if len(got) != 6 || got[5] != 0 {
				t.Errorf("Run: got %v, want the slow solution 0 last", got)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("RunInOrder: got %v, want %v", got, want)
		}
	}
}

func TestGlobalLimitIsReachedNeverExceeded(t *testing.T) {
	const limit = 16
	s := newStandIn(t, 5*time.Millisecond)
	e, err := New(
		s.client(t, limit),
		Options{MaxConcurrent: limit, Timeout: 10, MemoryLimitMB: 1024, Language: "python", NoDedup: true},
	) // identical solutions, each sent
	if err != nil {
		t.Fatal(err)
	}
	var sols []Solution
	for i := range 300 {
		code := "print(input())"
		if i%7 == 0 {
			code = "print('WRONG')"
		}
		sols = append(
			sols,
			Solution{ID: int64(i), Completion: "```python\n" + code + "\n```", GroundTruth: groundTruth(4), DataSource: "taco"},
		)
	}
	res := runAll(t, e, sols)
	if len(res) != len(sols) {
		t.Fatalf("got %d results, want %d", len(res), len(sols))
	}
	for i, r := range res {
		if r.ID != int64(i) {
			t.Fatalf("result %d has ID %d: results out of order", i, r.ID)
		}
		want := 1.0
		if i%7 == 0 {
			want = 0
		}
		if r.Score != want || len(r.Cases) != 4 {
			t.Fatalf("solution %d: got score %v with %d cases, want %v with 4", i, r.Score, len(r.Cases), want)
		}
		for j, c := range r.Cases {
			if c.CaseIndex != j {
				t.Fatalf("solution %d case %d has case_index %d", i, j, c.CaseIndex)
			}
		}
	}
	if got := s.requests.Load(); got != 1200 {
		t.Errorf("got %d requests, want 1200", got)
	}
	if got := s.maxSeen.Load(); got != limit {
		t.Errorf("largest number of requests in flight: got %d, want exactly the limit %d", got, limit)
	}
}

func TestCompileErrorSkipsCasesWithSameVerdicts(t *testing.T) {
	const n = 50
	gt := groundTruth(n)
	sol := Solution{
		ID:          1,
		Completion:  "```cpp\nint main() { COMPILE_ERROR }\n```",
		GroundTruth: gt,
		DataSource:  "codecontests",
	}

	run := func(noSkip bool) (*Result, int64) {
		s := newStandIn(t, 2*time.Millisecond)
		e, err := New(
			s.client(t, 8),
			Options{MaxConcurrent: 8, Timeout: 10, MemoryLimitMB: 1024, Language: LanguageAuto, NoCompileSkip: noSkip},
		)
		if err != nil {
			t.Fatal(err)
		}
		return runAll(t, e, []Solution{sol})[0], s.requests.Load()
	}
	skipped, sent := run(false)
	everything, sentAll := run(true)
	if sentAll != n {
		t.Fatalf("run-everything sent %d requests, want %d", sentAll, n)
	}
	if sent != 1 {
		t.Errorf("with compile skipping %d of %d requests were sent, want 1 (case 0 goes alone)", sent, n)
	}
	if skipped.Saved != n-int(sent) || skipped.Requests != int(sent) {
		t.Errorf("got Requests %d Saved %d, want %d and %d", skipped.Requests, skipped.Saved, sent, n-int(sent))
	}
	if got, want := fmt.Sprint(skipped.Verdicts()), fmt.Sprint(everything.Verdicts()); got != want {
		t.Errorf("verdicts differ:\n skip: %s\n  all: %s", got, want)
	}
	for i, c := range skipped.Cases {
		want := verdict.StatusCompileErrorSkipped
		if i == 0 {
			want = verdict.StatusCompileError
		}
		if c.Status != want || c.Verdict != verdict.CompileError {
			t.Errorf("case %d: got %v %s, want -4 %s", i, c.Verdict, c.Status, want)
		}
	}
	if skipped.Score != 0 || everything.Score != 0 {
		t.Errorf("scores: got %v and %v, want 0", skipped.Score, everything.Score)
	}
}

// TestCompileRuleOnMixedVerdicts checks docs/semantics.md §6 on a solution whose
// compile error shows up at case 2 only: cases before keep their verdicts.
func TestCompileRuleOnMixedVerdicts(t *testing.T) {
	s := newStandIn(t, 0)
	var calls atomic.Int64
	s.run = func(req *sandboxclient.Request) *sandboxclient.Response {
		calls.Add(1)
		if req.Stdin != nil && *req.Stdin == "case-2" {
			req.Code += " COMPILE_ERROR"
		}
		if req.Stdin != nil && *req.Stdin == "case-1" {
			req.Code += " WRONG"
		}
		return echoRun(req)
	}
	e, _ := New(s.client(t, 1), Options{MaxConcurrent: 1, Timeout: 10, MemoryLimitMB: 1024, Language: "cpp"})
	r := runAll(t, e, []Solution{{Completion: "```cpp\nint main(){}\n```", GroundTruth: groundTruth(6),
		DataSource: "x"}})[0]
	want := "[1 0 -4 -4 -4 -4]"
	if got := fmt.Sprint(r.Verdicts()); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if calls.Load() != 3 {
		t.Errorf("got %d requests at limit 1, want 3 (nothing after the compile error)", calls.Load())
	}
	if r.Score != 1.0/6 {
		t.Errorf("got score %v, want 1/6", r.Score)
	}
}

func TestSolutionErrors(t *testing.T) {
	s := newStandIn(t, 0)
	e, _ := New(s.client(t, 4), Options{MaxConcurrent: 4, Timeout: 10, MemoryLimitMB: 1024, Language: LanguageAuto})
	mismatch, _ := json.Marshal(`{"inputs": ["1", "2"], "outputs": ["1"]}`)
	tests := []struct {
		name     string
		sol      Solution
		wantErr  string
		verdicts string
	}{
		{
			"no code block",
			Solution{Completion: "just prose", GroundTruth: groundTruth(2)},
			"Invalid completion (missing code block)",
			"[]",
		},
		{"bad ground truth", Solution{Completion: "```python\npass\n```", GroundTruth: []byte(`"{not json"`)}, "", "[]"},
		{
			"missing outputs",
			Solution{Completion: "```python\npass\n```", GroundTruth: []byte(`{"inputs": ["1"]}`)},
			"invalid test_cases structure",
			"[]",
		},
		{"count mismatch", Solution{Completion: "```python\npass\n```", GroundTruth: mismatch}, "", "[-1 -1]"},
		{
			"zero cases",
			Solution{Completion: "```python\npass\n```", GroundTruth: []byte(`{"inputs": [], "outputs": []}`)},
			"",
			"[]",
		},
		{"unknown language", Solution{Completion: "```cobol\nDISPLAY 'HI'\n```", GroundTruth: groundTruth(2)}, "", "[-1 -1]"},
		{
			"row error",
			Solution{Completion: "```python\npass\n```", GroundTruth: groundTruth(2), Err: fmt.Errorf("x.jsonl:3: bad line")},
			"x.jsonl:3: bad line",
			"[]",
		},
	}
	before := s.requests.Load()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runAll(t, e, []Solution{tt.sol})[0]
			if r.Score != 0 {
				t.Errorf("got score %v, want 0", r.Score)
			}
			if tt.wantErr != "" && !strings.Contains(r.Err, tt.wantErr) {
				t.Errorf("got error %q, want it to contain %q", r.Err, tt.wantErr)
			}
			if tt.name == "bad ground truth" && r.Err == "" {
				t.Error("got no error for invalid JSON")
			}
			if got := fmt.Sprint(r.Verdicts()); got != tt.verdicts {
				t.Errorf("got verdicts %s, want %s", got, tt.verdicts)
			}
		})
	}
	if got := s.requests.Load() - before; got != 0 {
		t.Errorf("%d requests were sent for solutions that run nothing", got)
	}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		v          []int8
		continuous bool
		want       float64
	}{
		{nil, true, 0},
		{[]int8{1, 1, 0, -1}, false, 0.5},
		{[]int8{1, 1, 0, -1}, true, 0.5},
		{[]int8{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, 1},
		{[]int8{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, false, 10.0 / 12},
		{[]int8{1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1}, true, 0.9},
	}
	for _, tt := range tests {
		if got := Compute(tt.v, tt.continuous); got != tt.want {
			t.Errorf("Compute(%v, %v): got %v, want %v", tt.v, tt.continuous, got, tt.want)
		}
	}
}

func TestModeRouting(t *testing.T) {
	for src, want := range map[string]bool{"codecontests": true, "apps": true, "codeforces": true, "taco": true,
		"livecodebench": false, "": false} {
		if got := ModeAuto.Continuous(src); got != want {
			t.Errorf("auto %q: got continuous %v, want %v", src, got, want)
		}
	}
	if !ModeContinuous.Continuous("humaneval") || ModeAll.Continuous("taco") {
		t.Error("explicit modes must ignore the data source")
	}
}

// pythonRun runs the request for real with the system's Python.
func pythonRun(python string) func(req *sandboxclient.Request) *sandboxclient.Response {
	return func(req *sandboxclient.Request) *sandboxclient.Response {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.RunTimeout*float64(time.Second)))
		defer cancel()
		cmd := exec.CommandContext(ctx, python, "-c", req.Code)
		if req.Stdin != nil {
			cmd.Stdin = strings.NewReader(*req.Stdin)
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		rr := &sandboxclient.StepResult{
			Status:        sandboxclient.StepFinished,
			Stdout:        stdout.String(),
			Stderr:        stderr.String(),
			ExecutionTime: time.Since(start).Seconds(),
		}
		status := sandboxclient.StatusSuccess
		switch {
		case ctx.Err() != nil:
			rr.Status, status = sandboxclient.StepTimeLimitExceeded, sandboxclient.StatusFailed
		case err != nil:
			rr.ReturnCode = intp(cmd.ProcessState.ExitCode())
			status = sandboxclient.StatusFailed
		default:
			rr.ReturnCode = intp(0)
		}
		return &sandboxclient.Response{Status: status, RunResult: rr, Files: map[string]string{}}
	}
}

// TestVerlSamples scores verl's own two CodeContests rows: 1.0 and 0.9.
func TestVerlSamples(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	f, err := os.Open("../../shared/data/verl_samples/codecontests_kings_path.jsonl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the shared data is missing under CI: %v", err)
		}
		t.Skipf("SKIPPED (LOUD): shared data not found: %v", err)
	}
	defer f.Close()
	var sols []Solution
	var want []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var row struct {
			DataSource  string   `json:"data_source"`
			Responses   []string `json:"responses"`
			RewardModel struct {
				GroundTruth json.RawMessage `json:"ground_truth"`
			} `json:"reward_model"`
			ExtraInfo struct {
				Expected float64 `json:"expected_continuous_score"`
			} `json:"extra_info"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		for _, r := range row.Responses {
			sols = append(
				sols,
				Solution{ID: int64(len(sols)), Completion: r, GroundTruth: row.RewardModel.GroundTruth, DataSource: row.DataSource},
			)
			want = append(want, row.ExtraInfo.Expected)
		}
	}
	if len(sols) != 2 {
		t.Fatalf("got %d responses, want 2", len(sols))
	}
	s := newStandIn(t, 0)
	s.run = pythonRun(python)
	e, _ := New(s.client(t, 4), Options{MaxConcurrent: 4, Timeout: 10, MemoryLimitMB: 1024, Language: "python"})
	res := runAll(t, e, sols)
	for i, r := range res {
		if r.Score != want[i] || !r.Continuous {
			t.Errorf(
				"sample %d: got score %v (continuous %v), want %v continuous; verdicts %v",
				i,
				r.Score,
				r.Continuous,
				want[i],
				r.Verdicts(),
			)
		}
	}
	if want[0] != 1.0 || want[1] != 0.9 {
		t.Errorf("fixture's expected scores changed: %v", want)
	}
}

// TestCancelAbortsInFlight: cancelling the context cancels the requests in
// flight and marks unfinished solutions Aborted so their results are not
// kept.
func TestCancelAbortsInFlight(t *testing.T) {
	s := newStandIn(t, 0)
	block := make(chan struct{})
	var once sync.Once
	started := make(chan struct{})
	s.run = func(req *sandboxclient.Request) *sandboxclient.Response {
		once.Do(func() { close(started) })
		<-block
		return echoRun(req)
	}
	defer close(block)
	e, _ := New(
		s.client(t, 2),
		Options{MaxConcurrent: 2, Timeout: 10, MemoryLimitMB: 1024, Language: "python", NoDedup: true},
	)
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan Solution, 3)
	for i := range 3 {
		in <- Solution{ID: int64(i), Completion: "```python\nprint(input())\n```", GroundTruth: groundTruth(3)}
	}
	close(in)
	go func() { <-started; cancel() }()
	var got []*Result
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, in, func(r *Result) error { c := *r; got = append(got, &c); return nil }) }()
	// The stand-in answers only when block is closed, at the end of the
	// test: Run returns only if the cancel cut the requests off.
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled: the requests in flight were not aborted")
	}
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3 (every solution is emitted)", len(got))
	}
	for _, r := range got {
		if !r.Aborted {
			t.Errorf("solution %d: got Aborted false after cancel", r.ID)
		}
	}
}

// TestStopLetsInFlightFinish: after Stop nothing more is sent, but the
// requests in flight complete with real verdicts.
func TestStopLetsInFlightFinish(t *testing.T) {
	s := newStandIn(t, 0)
	release := make(chan struct{})
	var once sync.Once
	started := make(chan struct{})
	s.run = func(req *sandboxclient.Request) *sandboxclient.Response {
		once.Do(func() { close(started) })
		<-release
		return echoRun(req)
	}
	e, _ := New(
		s.client(t, 2),
		Options{MaxConcurrent: 2, Timeout: 10, MemoryLimitMB: 1024, Language: "python", NoDedup: true},
	)
	in := make(chan Solution, 4)
	for i := range 4 {
		in <- Solution{ID: int64(i), Completion: "```python\nprint(input())\n```", GroundTruth: groundTruth(1)}
	}
	close(in)
	go func() {
		<-started
		e.Stop()
		time.Sleep(20 * time.Millisecond)
		close(release)
	}()
	var got []*Result
	if err := e.Run(context.Background(), in, func(r *Result) error {
		c := *r
		got = append(got,
			&c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, r := range got {
		if !r.Aborted {
			finished++
			if r.Score != 1 {
				t.Errorf("solution %d finished with score %v, want 1", r.ID, r.Score)
			}
		}
	}
	if finished == 0 || finished > 2 {
		t.Errorf("got %d finished solutions, want the 1 or 2 in flight at the stop", finished)
	}
	if n := s.requests.Load(); n > 2 {
		t.Errorf("got %d requests, want none sent after the stop", n)
	}
}

// The responses of one prompt can share one parsed ground truth (Truth):
// they are scored from it, not from GroundTruth, with the verdicts a parse
// per response gives.
func TestSharedTruth(t *testing.T) {
	s := newStandIn(t, 0)
	e, _ := New(s.client(t, 4), Options{MaxConcurrent: 4, Timeout: 10, MemoryLimitMB: 1024})
	truth := ParseTruth(groundTruth(3))
	completions := []string{"```python\nprint(input())\n```", "```python\nprint('WRONG')\n```", "no code"}
	var shared, own []Solution
	for i, c := range completions {
		shared = append(shared, Solution{ID: int64(i), Completion: c, Truth: truth}) // no GroundTruth at all
		own = append(own, Solution{ID: int64(i), Completion: c, GroundTruth: groundTruth(3)})
	}
	a, b := runAll(t, e, shared), runAll(t, e, own)
	for i := range completions {
		if fmt.Sprint(a[i].Verdicts(), a[i].Score, a[i].Err) != fmt.Sprint(b[i].Verdicts(), b[i].Score, b[i].Err) {
			t.Errorf(
				"response %d: shared truth gives %v %v %q, its own parse %v %v %q",
				i,
				a[i].Verdicts(),
				a[i].Score,
				a[i].Err,
				b[i].Verdicts(),
				b[i].Score,
				b[i].Err,
			)
		}
	}
	if fmt.Sprint(a[0].Verdicts()) != "[1 1 1]" || fmt.Sprint(a[1].Verdicts()) != "[0 0 0]" {
		t.Errorf("verdicts from the shared truth: %v, %v", a[0].Verdicts(), a[1].Verdicts())
	}
	bad := ParseTruth([]byte(`{"inputs": ["1"]}`))
	if r := runAll(t, e, []Solution{{Completion: completions[0], Truth: bad}})[0]; !strings.Contains(
		r.Err,
		"invalid test_cases structure",
	) {
		t.Errorf("a shared bad truth: error %q", r.Err)
	}
}

// Identical executions are sent once and their answer shared: a GRPO group
// of 8 responses with 4 distinct programs over 3 cases costs 12 requests,
// with the verdicts of sending all 24. An execution whose request failed
// is not shared: each case that asked for it sends its own.
func TestIdenticalExecutionsAreSentOnce(t *testing.T) {
	programs := []string{
		"```python\nprint(input())\n```",
		"```python\nprint('WRONG')\n```",
		"```python\nprint(input()) # 2\n```",
		"```python\nimport sys\nprint('WRONG')\n```",
	}
	var sols []Solution
	for i := range 8 {
		sols = append(sols, Solution{ID: int64(i), Completion: programs[i%4], GroundTruth: groundTruth(3)})
	}
	results := map[bool][]*Result{}
	requests := map[bool]int64{}
	for _, noDedup := range []bool{true, false} {
		s := newStandIn(t, 5*time.Millisecond)
		e, _ := New(s.client(t, 8), Options{MaxConcurrent: 8, Timeout: 10, MemoryLimitMB: 1024, NoDedup: noDedup})
		results[noDedup] = runAll(t, e, sols)
		requests[noDedup] = s.requests.Load()
	}
	if requests[true] != 24 || requests[false] != 12 {
		t.Errorf("requests: %d without dedup (want 24), %d with it (want 12)", requests[true], requests[false])
	}
	deduped, sent, shared := 0, 0, 0
	for i, r := range results[false] {
		want := results[true][i]
		if fmt.Sprint(r.Verdicts(), r.Score) != fmt.Sprint(want.Verdicts(), want.Score) {
			t.Errorf("solution %d: %v %v with dedup, %v %v without", i, r.Verdicts(), r.Score, want.Verdicts(), want.Score)
		}
		deduped += r.Deduped
		sent += r.Requests
		for _, c := range r.Cases {
			if c.Shared {
				shared++
				if c.Attempts != 0 {
					t.Errorf("solution %d case %d: shared with %d attempts", i, c.CaseIndex, c.Attempts)
				}
			}
		}
	}
	if deduped != 12 || sent != 12 || shared != 12 {
		t.Errorf("deduped %d, sent %d, shared cases %d; want 12 each", deduped, sent, shared)
	}

	// Failures are not shared.
	broken := &failingClient{}
	e, _ := New(broken, Options{MaxConcurrent: 4, Timeout: 10, MemoryLimitMB: 1024})
	res := runAll(t, e, []Solution{sols[0], sols[4], sols[1]}) // the first two the same program
	if n := broken.calls.Load(); n != 9 {
		t.Errorf("a failing execution was sent %d times for 9 cases, want each case to send its own", n)
	}
	for _, r := range res {
		if r.Deduped != 0 {
			t.Errorf("solution %d: %d failed executions shared", r.ID, r.Deduped)
		}
	}
}

// failingClient fails every request as a dead sandbox would.
type failingClient struct{ calls atomic.Int64 }

func (f *failingClient) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	f.calls.Add(1)
	return nil, &sandboxclient.APIError{Attempts: 1, Err: errors.New("connection refused")}
}
