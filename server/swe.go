package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/swe/remote"
)

// SWERunner runs /run_swe's rollouts: the embedded sandbox's repository
// tasks (sandbox/swerun), which find, pull and unpack each image once.
type SWERunner interface {
	// Run runs one rollout under the rules and says which image it ran in
	// (nil when none was found).
	Run(r *http.Request, inst *swe.Instance, plan *swe.Plan, patch string, rules swe.Rules) (*swe.Outcome,
		*sandboxclient.SWEImage)
}

// SWEStore is an SWERunner that tells what its image store holds: /health
// reports it, so a readiness probe or an operator sees a warm store.
type SWEStore interface {
	StoreImages() (images int, bytes int64)
}

// handleRunSWE answers POST /run_swe: one rollout of a repository task,
// its instance (SWE-bench's fields), its patch and the rules in, the
// outcome with each test's grade, the log and the image out. A request
// the server cannot read is 400; an instance it cannot evaluate is 422;
// what the rollout met (an image not found, a timeout) is in the outcome.
func (s *Server) handleRunSWE(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	start := time.Now()
	code, outcome := s.runSWE(w, r)
	s.metrics.observeRequest(code, outcome)
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr), slog.Int("code", code),
		slog.String("outcome", outcome), slog.Duration("duration", time.Since(start)))
}

func (s *Server) runSWE(w http.ResponseWriter, r *http.Request) (int, string) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return http.StatusMethodNotAllowed, ""
	}
	if s.opts.SWE == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "this server runs no repository tasks " +
			"(serve with the embedded sandbox on Linux)"})
		return http.StatusNotFound, ""
	}
	if s.draining.Load() {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "shutting down: send this request " +
			"to another server"})
		return http.StatusServiceUnavailable, ""
	}
	body, code := s.readBody(w, r)
	if code != 0 {
		return code, ""
	}
	var req sandboxclient.SWERequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "the body is not a /run_swe request: " +
			err.Error()})
		return http.StatusBadRequest, ""
	}
	bad := func(err error) (int, string) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": err.Error()})
		return http.StatusUnprocessableEntity, ""
	}
	inst, err := swe.ParseInstance(req.Instance)
	if err != nil {
		return bad(err)
	}
	rules := swe.DefaultRules
	if req.Rules != "" {
		if rules.Version, err = swe.ParseRulesVersion(req.Rules); err != nil {
			return bad(err)
		}
	}
	plan, err := swe.PlanFor(inst, "")
	if err != nil {
		return bad(err)
	}
	o, img := s.opts.SWE.Run(r, inst, plan, req.Patch, rules)
	resp := remote.Response(o)
	resp.Image = img
	writeJSON(w, http.StatusOK, resp)
	return http.StatusOK, o.Kind
}
