package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/swe/remote"
)

// recordingSWE answers every rollout as tests_failed and keeps what it was
// given: /run_swe's HTTP layer is what is tested here (TestSWEFleet in cmd
// runs real rollouts through real serve processes).
type recordingSWE struct {
	inst  *swe.Instance
	patch string
	rules swe.Rules
}

func (r *recordingSWE) Run(_ *http.Request, inst *swe.Instance, _ *swe.Plan, patch string,
	rules swe.Rules) (*swe.Outcome, *sandboxclient.SWEImage) {
	r.inst, r.patch, r.rules = inst, patch, rules
	rep := &swe.Report{Resolution: swe.ResolvedNo, FailToPass: []swe.TestResult{{Name: "t::a", Status: "FAILED",
		Failed: true}}}
	return &swe.Outcome{Kind: swe.TestsFailed, PatchApplied: true, ExitCode: 1, Report: rep},
		&sandboxclient.SWEImage{Ref: inst.ImageRef(), Source: "registry", Pulled: true}
}

func TestRunSWE(t *testing.T) {
	rec := &recordingSWE{}
	srv := httptest.NewServer(New(nil, Options{SWE: rec}).Handler())
	defer srv.Close()
	plain := httptest.NewServer(New(nil, Options{}).Handler())
	defer plain.Close()
	inst := map[string]any{"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "FAIL_TO_PASS": []string{"t::a"},
		"PASS_TO_PASS": []string{}, "eval_script": "pytest -rA", "image": "o/r:1"}
	post := func(url, body string) (int, string) {
		resp, err := http.Post(url+sandboxclient.SWEPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req, _ := json.Marshal(sandboxclient.SWERequest{Instance: inst, Patch: "diff --git a/x b/x\n", Rules: "5"})
	code, body := post(srv.URL, string(req))
	if code != http.StatusOK {
		t.Fatalf("a rollout: %d %s", code, body)
	}
	var resp sandboxclient.SWEResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	o := remote.Outcome(&resp)
	if o.Kind != swe.TestsFailed || o.Report == nil || len(o.Report.FailToPass) != 1 || !o.Report.FailToPass[0].Failed ||
		resp.Image == nil || !resp.Image.Pulled {
		t.Errorf("the answer: %s", body)
	}
	if rec.inst.InstanceID != "o__r-1" || rec.patch != "diff --git a/x b/x\n" || rec.rules.Version != swe.V5 {
		t.Errorf("the runner was given %+v, %q, %v", rec.inst, rec.patch, rec.rules)
	}
	delete(inst, "base_commit")
	bad, _ := json.Marshal(sandboxclient.SWERequest{Instance: inst, Patch: "x"})
	for _, tt := range []struct {
		url, body string
		code      int
		says      string
	}{
		{srv.URL, "{not json", http.StatusBadRequest, "not a /run_swe request"},
		{srv.URL, string(bad), http.StatusUnprocessableEntity, `no \"base_commit\"`},
		{srv.URL, strings.Replace(string(req), `"rules":"5"`, `"rules":"7"`, 1), http.StatusUnprocessableEntity, "7"},
		{plain.URL, string(req), http.StatusNotFound, "runs no repository tasks"},
	} {
		if code, body := post(tt.url, tt.body); code != tt.code || !strings.Contains(body, tt.says) {
			t.Errorf("%.40s: %d %s; want %d saying %q", tt.body, code, body, tt.code, tt.says)
		}
	}
	if resp, err := http.Get(srv.URL + sandboxclient.SWEPath); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", resp, err)
	}
}
