package sandboxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// SWERequest is the body of verl-score serve's POST /run_swe: one rollout
// of a repository task.
type SWERequest struct {
	// Instance is the SWE instance, with SWE-bench's field names (as a
	// ground truth has them).
	Instance map[string]any `json:"instance"`
	// Patch is the model's patch, already taken from its response.
	Patch string `json:"patch"`
	// Rules are the SWE-bench release whose rules apply and grade: "4.1.0"
	// (the default) or "5".
	Rules string `json:"rules,omitempty"`
}

// SWEResponse is /run_swe's answer: the rollout's outcome.
type SWEResponse struct {
	Outcome      string    `json:"outcome"` // swe.Resolved, swe.TestsFailed, …
	Why          string    `json:"why,omitempty"`
	PatchApplied bool      `json:"patch_applied"`
	AppliedBy    string    `json:"applied_by,omitempty"`
	ApplyOutput  string    `json:"apply_output,omitempty"`
	Log          string    `json:"log,omitempty"`
	ExitCode     int       `json:"test_exit_code"`
	Resolution   string    `json:"resolution,omitempty"`
	FailToPass   []SWETest `json:"FAIL_TO_PASS,omitempty"`
	PassToPass   []SWETest `json:"PASS_TO_PASS,omitempty"`
	Flags        []SWEFlag `json:"flags,omitempty"`
	// Image is the environment the rollout ran in, and whether this
	// request pulled it (the node lacked it).
	Image *SWEImage `json:"image,omitempty"`
}

// SWETest is one FAIL_TO_PASS or PASS_TO_PASS test's grade.
type SWETest struct {
	Name   string `json:"name"`
	Status string `json:"status,omitempty"`
	Passed bool   `json:"passed"`
	Failed bool   `json:"failed"`
}

// SWEFlag is what the audit found in a patch (swe.Flag's fields).
type SWEFlag struct {
	Kind string `json:"kind"`
	Path string `json:"path,omitempty"`
}

// SWEImage says which image a rollout ran in on the node.
type SWEImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest,omitempty"`
	ID     string `json:"id,omitempty"`
	Source string `json:"source,omitempty"`
	Pulled bool   `json:"pulled,omitempty"`
}

// SWEPath is /run_swe's path beside /run_code.
const SWEPath = "/run_swe"

// sweURL is the /run_swe URL of a /run_code one.
func sweURL(runCode string) string {
	u := strings.TrimSuffix(runCode, "/")
	u = strings.TrimSuffix(u, "/run_code")
	return u + SWEPath
}

// SWEFleet sends repository tasks' rollouts to verl-score serve endpoints
// (their /run_swe). An image's rollouts go to an endpoint that ran that
// image before, which holds it unpacked (affinity), unless it is much
// busier than the least loaded (SWESpill); an image new to the run goes to
// the endpoint with the fewest rollouts in flight, which pulls it itself.
// A failing endpoint is left for a while and its images go elsewhere. swe/remote makes it the engine's SWE runner.
type SWEFleet struct {
	eps     []*sweEndpoint
	client  *http.Client
	header  http.Header
	retries int

	mu         sync.Mutex
	byImage    map[string]map[int]bool // image reference → the endpoints that ran it
	next       int                     // roundRobin's next endpoint
	roundRobin bool
}

type sweEndpoint struct {
	url      string // /run_swe
	shown    string // redacted, for stats
	inFlight int
	downTill time.Time
	// figures
	rollouts, errors, pulls int64
	images                  map[string]bool
	latency                 time.Duration
}

// SWEFleetOptions configure an SWEFleet.
type SWEFleetOptions struct {
	// URLs are the endpoints' /run_code URLs (as --sandbox-url gives them);
	// a #weight=N fragment is ignored here.
	URLs   []string
	Header http.Header
	// Timeout bounds one rollout's request: the rollout's own timeout and
	// the image's pull and unpack on a node that lacks it.
	Timeout time.Duration
	// Attempts is how many endpoints a rollout tries before it fails
	// (default 3).
	Attempts int
	// RoundRobin sends each rollout to the next endpoint, as a plain load
	// balancer would: only to measure the affinity against.
	RoundRobin bool
}

// NewSWEFleet is the client of a fleet of serve endpoints for repository
// tasks.
func NewSWEFleet(o SWEFleetOptions) (*SWEFleet, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("repository tasks over a fleet: no endpoint")
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	f := &SWEFleet{client: &http.Client{Timeout: o.Timeout}, header: o.Header, retries: o.Attempts,
		byImage: map[string]map[int]bool{}, roundRobin: o.RoundRobin}
	for _, u := range o.URLs {
		u, _, _ = strings.Cut(u, "#")
		f.eps = append(f.eps, &sweEndpoint{url: sweURL(u), shown: RedactURL(u), images: map[string]bool{}})
	}
	return f, nil
}

// SWESpill is how many more rollouts in flight than the least loaded
// endpoint an endpoint holding an image may have before the image's next
// rollout goes to the least loaded one instead (which pulls it, and holds
// it from then on): one image with many rollouts spreads over the fleet,
// while many images stay one endpoint each.
const SWESpill = 8

// pick chooses the endpoint for an image: the least loaded of those that
// ran it before (up, not tried), unless it is SWESpill rollouts busier than
// the least loaded endpoint of all; else that one.
func (f *SWEFleet) pick(ref string, tried map[int]bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if f.roundRobin {
		for range f.eps {
			i := f.next % len(f.eps)
			f.next++
			if !tried[i] {
				f.eps[i].inFlight++
				f.eps[i].images[ref] = true
				return i
			}
		}
		return -1
	}
	// the least loaded, preferring endpoints that are up
	better := func(i, best int) bool {
		if best < 0 {
			return true
		}
		e, b := f.eps[i], f.eps[best]
		up, bUp := now.After(e.downTill), now.After(b.downTill)
		return up && !bUp || up == bUp && e.inFlight < b.inFlight
	}
	least, holder := -1, -1
	for i := range f.eps {
		if tried[i] {
			continue
		}
		if better(i, least) {
			least = i
		}
		if f.byImage[ref][i] && now.After(f.eps[i].downTill) && better(i, holder) {
			holder = i
		}
	}
	if least < 0 {
		return -1
	}
	best := least
	if holder >= 0 && f.eps[holder].inFlight < f.eps[least].inFlight+SWESpill {
		best = holder
	}
	if f.byImage[ref] == nil {
		f.byImage[ref] = map[int]bool{}
	}
	f.byImage[ref][best] = true
	f.eps[best].inFlight++
	f.eps[best].images[ref] = true
	return best
}

// Send sends one rollout (of the image ref) to the fleet. A transport
// error or a non-200 answer sends it to another endpoint; the error says
// what each endpoint tried answered.
func (f *SWEFleet) Send(ctx context.Context, ref string, r *SWERequest) (*SWEResponse, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	tried := map[int]bool{}
	var errs []string
	for attempt := 0; attempt < f.retries && attempt < len(f.eps); attempt++ {
		i := f.pick(ref, tried)
		if i < 0 {
			break
		}
		tried[i] = true
		start := time.Now()
		resp, err := f.send(ctx, f.eps[i].url, body)
		f.mu.Lock()
		e := f.eps[i]
		e.inFlight--
		if err != nil {
			e.errors++
			e.downTill = time.Now().Add(5 * time.Second)
			delete(f.byImage[ref], i)
		} else {
			e.rollouts++
			e.latency += time.Since(start)
			if resp.Image != nil && resp.Image.Pulled {
				e.pulls++
			}
		}
		f.mu.Unlock()
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", e.shown, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.New("no endpoint ran the rollout: " + strings.Join(errs, "; "))
}

func (f *SWEFleet) send(ctx context.Context, url string, body []byte) (*SWEResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range f.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b[:min(len(b), 300)])))
	}
	var r SWEResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("an answer that is not /run_swe's: %v", err)
	}
	return &r, nil
}

// Stats are each endpoint's figures for repository tasks: rollouts,
// errors, the images routed to it and those it pulled.
func (f *SWEFleet) Stats() []EndpointStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]EndpointStats, len(f.eps))
	for i, e := range f.eps {
		out[i] = EndpointStats{URL: e.shown, Requests: e.rollouts + e.errors, Errors: e.errors,
			SWERollouts: e.rollouts, SWEImages: int64(len(e.images)), SWEPulls: e.pulls}
		if e.rollouts > 0 {
			out[i].MeanLatencyMS = float64(e.latency.Milliseconds()) / float64(e.rollouts)
		}
	}
	return out
}
