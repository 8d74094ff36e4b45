//go:build fleet

// The fleet's tests that take a while (the simulated fleet runs about
// 13 s): .ci/run runs them after the README's command, with -tags fleet.

package sandboxclient_test

import (
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// TestFleetAdaptiveLimitSettles: against the simulated fleet (8 slots, 429
// past 8 waiting), auto from a start 10 times too low and one 10 times too
// high settles, on average over its answers, between one below the slots
// and the slots plus the queue's bound, sheds under 1% of its requests,
// and loses none. The mean, not the end: the limit is a sawtooth, and its
// last tooth can be a cut (the end at 7 with a mean of 9.6, idle here).
// One below the slots: this fleet does not say how long a request waited,
// so the client estimates it, and on a machine whose cores are busy its
// own scheduling delays read as waiting (a mean of 8.0 here with both
// cores spinning, 9.3-9.6 idle); four shards together,
// against a fleet that says how long each request waited (as serve does),
// each get at least 80% of the fastest one's answers. (The throughput
// against the best static setting is BenchmarkAdaptiveFleet's.)
func TestFleetAdaptiveLimitSettles(t *testing.T) {
	const n = 3000
	for _, start := range []int{1, 120} {
		f := newSimFleet(t, simSlots, simService, simBound)
		tput, st := simRun(t, f, n, 256, &sandboxclient.AdaptiveOptions{Start: start, Max: 256}, "")
		a := st.Adaptive
		shed := float64(f.shed.Load()) / float64(f.received.Load())
		busy := float64(f.busy.Load()) / 1e9 / (simSlots * n / tput)
		t.Logf(
			"from %d: limit %d, mean %.2f (%d-%d), %.2f%% shed, slots busy %.3f",
			start,
			a.Limit,
			a.Mean,
			a.Lowest,
			a.Highest,
			100*shed,
			busy,
		)
		if a.Mean < simSlots-1 || a.Mean > simSlots+simBound {
			t.Errorf(
				"from %d: the limit settled at %.2f on average, want from %d to %d",
				start,
				a.Mean,
				simSlots-1,
				simSlots+simBound,
			)
		}
		if shed >= 0.01 {
			t.Errorf("from %d: %.2f%% of requests shed, want under 1%%", start, 100*shed)
		}
	}
	r, shed := fourShards(t, n, true)
	if r < 0.8 {
		t.Errorf("four shards: the slowest got %.2f of the fastest's answers, want at least 0.8", r)
	}
	if shed >= 0.01 {
		t.Errorf("four shards: %.2f%% of requests shed, want under 1%%", 100*shed)
	}
	// Without the server's word on its queue, each shard estimates it
	// from a floor of its own: figures only (BenchmarkAdaptiveFleet).
	fourShards(t, n, false)
}
