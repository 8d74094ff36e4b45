package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
	"github.com/verl-score/verl-score/swe"
	"github.com/verl-score/verl-score/swe/remote"
)

// simSWENode stands in for a serve node's /run_swe: a rollout takes
// service, and the first rollout of an image on this node pulls it first
// (pull more), as a node that lacks an image does. It counts its pulls.
type simSWENode struct {
	srv           *httptest.Server
	service, pull time.Duration
	mu            sync.Mutex
	has           map[string]chan struct{} // closed once pulled
	pulls         int
	fail          bool
}

func newSimSWENode(t testing.TB, service, pull time.Duration) *simSWENode {
	n := &simSWENode{service: service, pull: pull, has: map[string]chan struct{}{}}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sandboxclient.SWERequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ref, _ := req.Instance["image"].(string)
		n.mu.Lock()
		if n.fail {
			n.mu.Unlock()
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		ready, ok := n.has[ref]
		pulled := !ok
		if pulled {
			ready = make(chan struct{})
			n.has[ref] = ready
			n.pulls++
		}
		n.mu.Unlock()
		if pulled {
			time.Sleep(n.pull)
			close(ready)
		}
		<-ready
		time.Sleep(n.service)
		resp := remote.Response(&swe.Outcome{Kind: swe.Resolved, PatchApplied: true,
			Report: &swe.Report{Resolution: swe.ResolvedFull}})
		resp.Image = &sandboxclient.SWEImage{Ref: ref, Pulled: pulled}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func sweInstance(ref string) *swe.Instance {
	return &swe.Instance{InstanceID: "o__r-1", BaseCommit: "abc", FailToPass: []string{"t::a"}, Image: ref,
		EvalScript: "pytest", WorkDir: "/testbed"}
}

// runSWEFleet sends perImage rollouts of each of images images, row by
// row, 12 at once, and returns the nodes' pulls in all.
func runSWEFleet(t testing.TB, images, perImage int, roundRobin bool) (pulls int, f *remote.Fleet) {
	var nodes []*simSWENode
	var urls []string
	for range 3 {
		n := newSimSWENode(t, 5*time.Millisecond, 50*time.Millisecond)
		nodes = append(nodes, n)
		urls = append(urls, n.srv.URL+"/run_code")
	}
	sf, err := sandboxclient.NewSWEFleet(sandboxclient.SWEFleetOptions{URLs: urls, Timeout: time.Minute,
		RoundRobin: roundRobin})
	if err != nil {
		t.Fatal(err)
	}
	f = &remote.Fleet{F: sf}
	sem := make(chan struct{}, 12)
	var wg sync.WaitGroup
	for i := range images {
		for range perImage {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				o := f.Evaluate(context.Background(), sweInstance(fmt.Sprintf("reg.example/img-%d:1", i)), nil, "p")
				if o.Kind != swe.Resolved {
					t.Errorf("outcome %s (%s)", o.Kind, o.Why)
				}
			})
		}
	}
	wg.Wait()
	for _, n := range nodes {
		pulls += n.pulls
	}
	return pulls, f
}

// With affinity an image is pulled by one node: pulls equal images, and
// the summary's figures say so; a node that fails has its rollouts and
// images sent elsewhere.
func TestSWEFleetAffinity(t *testing.T) {
	pulls, f := runSWEFleet(t, 12, 4, false)
	if pulls != 12 {
		t.Errorf("%d pulls for 12 images", pulls)
	}
	var routed, rollouts, reported int64
	for _, s := range f.F.Stats() {
		routed, rollouts, reported = routed+s.SWEImages, rollouts+s.SWERollouts, reported+s.SWEPulls
	}
	if routed != 12 || rollouts != 48 || reported != 12 {
		t.Errorf("stats: %d images routed, %d rollouts, %d pulls reported; want 12, 48, 12", routed, rollouts, reported)
	}

	good := newSimSWENode(t, time.Millisecond, time.Millisecond)
	bad := newSimSWENode(t, time.Millisecond, time.Millisecond)
	bad.fail = true
	sf, err := sandboxclient.NewSWEFleet(sandboxclient.SWEFleetOptions{URLs: []string{bad.srv.URL + "/run_code",
		good.srv.URL + "/run_code"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f = &remote.Fleet{F: sf}
	for range 4 {
		if o := f.Evaluate(context.Background(), sweInstance("reg.example/x:1"), nil, "p"); o.Kind != swe.Resolved {
			t.Errorf("with one node down: %s (%s)", o.Kind, o.Why)
		}
	}
	good.mu.Lock()
	good.fail = true
	good.mu.Unlock()
	o := f.Evaluate(context.Background(), sweInstance("reg.example/x:1"), nil, "p")
	if o.Kind != swe.SandboxError || !swe.Infra(o.Kind) {
		t.Errorf("every node down: %s; want a sandbox error (infrastructure)", o.Kind)
	}
}

// One image with many rollouts at once spreads over the fleet: past
// SWESpill more in flight than the least loaded node, its rollouts go
// there too (which pulls it), and the pulls stay at most one per node.
func TestSWEFleetSpills(t *testing.T) {
	var nodes []*simSWENode
	var urls []string
	for range 3 {
		n := newSimSWENode(t, 40*time.Millisecond, 20*time.Millisecond)
		nodes = append(nodes, n)
		urls = append(urls, n.srv.URL+"/run_code")
	}
	sf, err := sandboxclient.NewSWEFleet(sandboxclient.SWEFleetOptions{URLs: urls, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f := &remote.Fleet{F: sf}
	sem := make(chan struct{}, 30)
	var wg sync.WaitGroup
	for range 120 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if o := f.Evaluate(context.Background(), sweInstance("reg.example/one:1"), nil, "p"); o.Kind != swe.Resolved {
				t.Errorf("outcome %s (%s)", o.Kind, o.Why)
			}
		})
	}
	wg.Wait()
	busy, pulls := 0, 0
	for _, s := range sf.Stats() {
		if s.SWERollouts > 0 {
			busy++
		}
	}
	for _, n := range nodes {
		pulls += n.pulls
	}
	if busy < 2 || pulls > 3 {
		t.Errorf("one image, 120 rollouts, 30 at once: %d nodes ran them, %d pulls; want the load spread, a pull per node at most",
			busy, pulls)
	}
}

// BenchmarkSWEFleetAffinity: 30 images, 4 rollouts each, over 3 simulated
// nodes: the pulls with affinity against a round-robin balancer's (the
// issue's target: pulls ≈ images, not images × endpoints).
func BenchmarkSWEFleetAffinity(b *testing.B) {
	var aff, rr int
	for range b.N {
		aff, _ = runSWEFleet(b, 30, 4, false)
		rr, _ = runSWEFleet(b, 30, 4, true)
	}
	b.ReportMetric(float64(aff)/30, "pulls/image-affinity")
	b.ReportMetric(float64(rr)/30, "pulls/image-round-robin")
}
