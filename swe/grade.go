package swe

import (
	"regexp"
	"strconv"
	"strings"
)

// failOnlyRepos are graded on failures alone (SWE-bench's FAIL_ONLY_REPOS).
var failOnlyRepos = map[string]bool{"chartjs/Chart.js": true, "processing/p5.js": true, "markedjs/marked": true}

// suiteRanRe is v5's evidence that a test runner ran at all, for an empty
// status map (every count non-zero).
var suiteRanRe = regexp.MustCompile(`(?m)Executed [1-9]\d* of \d+|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)|[1-9]\d* passing` +
	`|Tests:\s+[1-9]\d*|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total|^# tests [1-9]\d*|[1-9]\d* specs?, \d+ failures?|': ok$`)

var exitCodeRe = regexp.MustCompile(regexp.QuoteMeta(markExitCode) + `:\s*(-?\d+)`)

// A Log is an evaluation's test log read as SWE-bench reads it.
type Log struct {
	// Graded is false when SWE-bench grades nothing from the log: a failure
	// marker in it, or no start and end markers (the test patch did not
	// apply), or, under v5, a suite that never ran or a failing test command
	// with nothing failing in the log.
	Graded bool
	// Why says why a log is not graded.
	Why string
	// Statuses are the tests the log names.
	Statuses *StatusMap
	// ExitCode is the test command's own exit status, -1 when the log has
	// none recorded.
	ExitCode int
}

// ReadLog parses an evaluation's output with the named parser.
func ReadLog(content string, parser Parser, r Rules) Log {
	l := Log{ExitCode: -1, Statuses: newStatusMap()}
	if g := exitCodeRe.FindStringSubmatch(content); g != nil {
		if n, err := strconv.Atoi(g[1]); err == nil {
			l.ExitCode = n
		}
	}
	for _, bad := range []string{markApplyFailed, markResetFailed, markTestsError, markTestsTimeout} {
		if strings.Contains(content, bad) {
			l.Why = "the log holds " + strconv.Quote(bad)
			return l
		}
	}
	if !strings.Contains(content, markStart) || !strings.Contains(content, markEnd) {
		l.Why = "the log has no start and end markers (the test patch did not apply or the script stopped early)"
		return l
	}
	section := strings.SplitN(strings.SplitN(content, markStart, 2)[1], markEnd, 2)[0]
	sm := parser(section, r)
	if sm.Len() == 0 {
		sm = parser(content, r)
	}
	if r.Version == V5 {
		if sm.Len() == 0 && !suiteRanRe.MatchString(content) {
			l.Why = "no test ran (v5)"
			return l
		}
		if l.ExitCode > 0 && sm.Len() > 0 && !anyFailing(sm) {
			l.Why = "the test command failed and the log shows no failing test (v5)"
			return l
		}
	}
	l.Graded, l.Statuses = true, sm
	return l
}

func anyFailing(sm *StatusMap) bool {
	for _, s := range sm.status {
		if s == StatusFailed || s == StatusError {
			return true
		}
	}
	return false
}

// A TestResult is one FAIL_TO_PASS or PASS_TO_PASS test's grade.
type TestResult struct {
	Name string
	// Status is the log's word for it, "" when the log does not name it.
	Status string
	// Passed: in the success list; Failed: in the failure list. Under v4.1.0
	// a test may be in neither (a skipped one), and then it does not count.
	Passed, Failed bool
}

// A Report is an instance's grade, as SWE-bench's get_eval_tests_report and
// get_resolution_status make it.
type Report struct {
	FailToPass, PassToPass []TestResult
	// Resolution is "RESOLVED_FULL", "RESOLVED_PARTIAL" or "RESOLVED_NO".
	Resolution string
}

// Resolved is SWE-bench's resolved: every FAIL_TO_PASS and PASS_TO_PASS
// test in the success list (neither list empty of tests that count).
func (r *Report) Resolved() bool { return r.Resolution == ResolvedFull }

// The resolution statuses.
const (
	ResolvedFull    = "RESOLVED_FULL"
	ResolvedPartial = "RESOLVED_PARTIAL"
	ResolvedNo      = "RESOLVED_NO"
)

// Grade grades a parsed log against an instance's test lists.
func Grade(inst *Instance, sm *StatusMap, r Rules) *Report {
	failOnly := failOnlyRepos[inst.Repo]
	rep := &Report{}
	for _, t := range inst.FailToPass {
		rep.FailToPass = append(rep.FailToPass, gradeTest(t, sm, r, failOnly, false))
	}
	for _, t := range inst.PassToPass {
		rep.PassToPass = append(rep.PassToPass, gradeTest(t, sm, r, failOnly, true))
	}
	f2p, p2p := fraction(rep.FailToPass), fraction(rep.PassToPass)
	switch {
	case f2p == 1 && p2p == 1:
		rep.Resolution = ResolvedFull
	case f2p < 1 && f2p > 0 && p2p == 1:
		rep.Resolution = ResolvedPartial
	default:
		rep.Resolution = ResolvedNo
	}
	return rep
}

// FailToPassRate is SWE-bench's compute_fail_to_pass: the share of the
// FAIL_TO_PASS tests that count which passed, 1 when none count.
func (r *Report) FailToPassRate() float64 { return fraction(r.FailToPass) }

// PassToPassRate is compute_pass_to_pass.
func (r *Report) PassToPassRate() float64 { return fraction(r.PassToPass) }

func fraction(ts []TestResult) float64 {
	ok, bad := 0, 0
	for _, t := range ts {
		if t.Passed {
			ok++
		} else if t.Failed {
			bad++
		}
	}
	if ok+bad == 0 {
		return 1
	}
	return float64(ok) / float64(ok+bad)
}

func gradeTest(name string, sm *StatusMap, r Rules, failOnly, maintained bool) TestResult {
	key, found := name, false
	if r.Version == V5 {
		key, found = resolveCase(name, sm)
	} else {
		_, found = sm.Get(name)
	}
	tr := TestResult{Name: name}
	if found {
		tr.Status, _ = sm.Get(key)
	}
	if failOnly {
		// the exact name, under both rules
		st, ok := sm.Get(name)
		tr.Status = st
		tr.Failed = ok && st == StatusFailed
		tr.Passed = !tr.Failed
		return tr
	}
	passed := found && (tr.Status == StatusPassed || tr.Status == StatusXFail)
	switch {
	case passed:
		tr.Passed = true
	case r.Version == V5 && maintained && found && tr.Status == StatusSkipped:
		tr.Passed = true
	case !found || tr.Status == StatusFailed || tr.Status == StatusError:
		tr.Failed = true
	case r.Version == V5 && tr.Status == StatusSkipped:
		tr.Failed = true
	}
	return tr
}

// resolveCase is v5's lookup: the name itself, else, for a parametrized
// name cut short (more "[" than "]"), the first logged name it begins when
// all those agree on pass or fail.
func resolveCase(name string, sm *StatusMap) (string, bool) {
	if _, ok := sm.Get(name); ok {
		return name, true
	}
	if strings.Count(name, "[") <= strings.Count(name, "]") {
		return "", false
	}
	var matches []string
	outcomes := map[bool]bool{}
	for _, k := range sm.order {
		if strings.HasPrefix(k, name) {
			matches = append(matches, k)
			s := sm.status[k]
			outcomes[s == StatusPassed || s == StatusXFail] = true
		}
	}
	if len(matches) > 0 && len(outcomes) == 1 {
		return matches[0], true
	}
	return "", false
}
