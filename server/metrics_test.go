package server

import (
	"strings"
	"testing"
	"time"
)

func TestMetricsHistogramIsCumulative(t *testing.T) {
	m := newServerMetrics()
	for _, d := range []time.Duration{
		3 * time.Millisecond,   // le 0.005
		20 * time.Millisecond,  // le 0.025
		20 * time.Millisecond,  // le 0.025
		700 * time.Millisecond, // le 1
		2 * time.Minute,        // only +Inf
	} {
		m.observeRun("python", d)
	}
	var b strings.Builder
	if err := m.writeTo(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	tests := []struct {
		le   string
		want string
	}{
		{"0.005", "1"},
		{"0.01", "1"},
		{"0.025", "3"},
		{"0.5", "3"},
		{"1", "4"},
		{"60", "4"},
		{"+Inf", "5"},
	}
	for _, tt := range tests {
		line := `verl_score_run_duration_seconds_bucket{language="python",le="` + tt.le + `"} ` + tt.want
		if !strings.Contains(text, line+"\n") {
			t.Errorf("got no line %q in:\n%s", line, text)
		}
	}
	if !strings.Contains(text, `verl_score_run_duration_seconds_count{language="python"} 5`+"\n") {
		t.Errorf("got wrong count in:\n%s", text)
	}
	if !strings.Contains(text, `verl_score_run_duration_seconds_sum{language="python"} 120.743`+"\n") {
		t.Errorf("got wrong sum in:\n%s", text)
	}
}

func TestMetricsCountsAndGauges(t *testing.T) {
	m := newServerMetrics()
	m.observeRequest(200, "Success")
	m.observeRequest(200, "Success")
	m.observeRequest(200, "SandboxError")
	m.observeRequest(503, "")
	m.inFlight.Add(2)
	m.queueDepth.Add(3)
	var b strings.Builder
	if err := m.writeTo(&b); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`verl_score_run_code_requests_total{code="200"} 3`,
		`verl_score_run_code_requests_total{code="503"} 1`,
		`verl_score_run_code_responses_total{status="SandboxError"} 1`,
		`verl_score_run_code_responses_total{status="Success"} 2`,
		`verl_score_runs_in_flight 2`,
		`verl_score_queue_depth 3`,
	}
	for _, w := range want {
		if !strings.Contains(b.String(), w+"\n") {
			t.Errorf("got no line %q in:\n%s", w, b.String())
		}
	}
	if strings.Contains(b.String(), `status=""`) {
		t.Errorf("an answer without a run response was counted under an empty status:\n%s", b.String())
	}
}

func TestEscapeLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"python", "python"},
		{`a"b`, `a\"b`},
		{`a\b`, `a\\b`},
		{"a\nb", `a\nb`},
	}
	for _, tt := range tests {
		if got := escapeLabel(tt.in); got != tt.want {
			t.Errorf("escapeLabel(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
