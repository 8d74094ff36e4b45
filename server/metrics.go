package server

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// durationBuckets are the upper bounds (seconds) of the run duration
// histogram: from a trivial interpreted program to a compile that hits a
// long timeout.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// serverMetrics holds the counters the server exposes on /metrics. It is
// written by hand in the Prometheus text exposition format (version 0.0.4)
// to keep the module free of a metrics dependency.
type serverMetrics struct {
	inFlight   atomic.Int64
	queueDepth atomic.Int64

	mu        sync.Mutex
	byCode    map[int]uint64        // HTTP status of /run_code answers
	byStatus  map[string]uint64     // top-level status of 200 answers
	durations map[string]*histogram // client run time by language
}

type histogram struct {
	counts []uint64 // one per bucket, not cumulative
	count  uint64
	sum    float64
}

func newServerMetrics() *serverMetrics {
	return &serverMetrics{
		byCode:    map[int]uint64{},
		byStatus:  map[string]uint64{},
		durations: map[string]*histogram{},
	}
}

// observeRequest counts one /run_code answer; status is the response's
// top-level status, empty when no run response was sent.
func (m *serverMetrics) observeRequest(code int, status string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byCode[code]++
	if status != "" {
		m.byStatus[status]++
	}
}

// observeRun records how long the client took to run one request.
func (m *serverMetrics) observeRun(language string, d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.durations[language]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(durationBuckets))}
		m.durations[language] = h
	}
	for i, ub := range durationBuckets {
		if s <= ub {
			h.counts[i]++
			break
		}
	}
	h.count++
	h.sum += s
}

// meanRun is the mean run time over every language so far; 0 before the
// first run.
func (m *serverMetrics) meanRun() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n uint64
	var sum float64
	for _, h := range m.durations {
		n += h.count
		sum += h.sum
	}
	if n == 0 {
		return 0
	}
	return time.Duration(sum / float64(n) * float64(time.Second))
}

// writeTo renders every series in the Prometheus text format.
func (m *serverMetrics) writeTo(w io.Writer) error {
	var b strings.Builder
	m.mu.Lock()
	b.WriteString("# HELP verl_score_run_code_requests_total Answers to POST /run_code by HTTP status code.\n")
	b.WriteString("# TYPE verl_score_run_code_requests_total counter\n")
	codes := make([]int, 0, len(m.byCode))
	for c := range m.byCode {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "verl_score_run_code_requests_total{code=\"%d\"} %d\n", c, m.byCode[c])
	}

	b.WriteString(
		"# HELP verl_score_run_code_responses_total Run responses by top-level status (Success, Failed, SandboxError).\n",
	)
	b.WriteString("# TYPE verl_score_run_code_responses_total counter\n")
	for _, s := range sortedKeys(m.byStatus) {
		fmt.Fprintf(&b, "verl_score_run_code_responses_total{status=\"%s\"} %d\n", escapeLabel(s), m.byStatus[s])
	}

	b.WriteString(
		"# HELP verl_score_run_duration_seconds Time the sandbox took to compile and run one request, by language.\n",
	)
	b.WriteString("# TYPE verl_score_run_duration_seconds histogram\n")
	for _, lang := range sortedKeys(m.durations) {
		h := m.durations[lang]
		l := escapeLabel(lang)
		var cum uint64
		for i, ub := range durationBuckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "verl_score_run_duration_seconds_bucket{language=\"%s\",le=\"%s\"} %d\n", l, formatFloat(ub), cum)
		}
		fmt.Fprintf(&b, "verl_score_run_duration_seconds_bucket{language=\"%s\",le=\"+Inf\"} %d\n", l, h.count)
		fmt.Fprintf(&b, "verl_score_run_duration_seconds_sum{language=\"%s\"} %s\n", l, formatFloat(h.sum))
		fmt.Fprintf(&b, "verl_score_run_duration_seconds_count{language=\"%s\"} %d\n", l, h.count)
	}
	m.mu.Unlock()

	b.WriteString("# HELP verl_score_runs_in_flight Requests being run by the sandbox now.\n")
	b.WriteString("# TYPE verl_score_runs_in_flight gauge\n")
	fmt.Fprintf(&b, "verl_score_runs_in_flight %d\n", m.inFlight.Load())
	b.WriteString("# HELP verl_score_queue_depth Requests waiting for a free run slot.\n")
	b.WriteString("# TYPE verl_score_queue_depth gauge\n")
	fmt.Fprintf(&b, "verl_score_queue_depth %d\n", m.queueDepth.Load())

	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// escapeLabel escapes a label value as the text format requires.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return r.Replace(s)
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
