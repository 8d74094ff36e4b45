package check

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The JUnit XML schema as CI systems read it (Jenkins, GitLab, GitHub
// test reporters): testsuites > testsuite > testcase, with failure or
// skipped children.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// ErrNoItems is returned by WriteJUnit for a report built without
// KeepItems.
var ErrNoItems = errors.New("junit: the report was built without its items (set KeepItems)")

// WriteJUnit writes the report as JUnit XML: one test suite per data
// source and one test case per response. Mismatches (regressed, improved,
// missing) are failures; responses without a reference are skipped;
// flaky responses pass with their runs in system-out.
func (r *Report) WriteJUnit(w io.Writer) error {
	if r.Items == nil && r.Counts.Responses > 0 {
		return ErrNoItems
	}
	doc := junitSuites{Name: "verl-score " + r.Command}
	idx := map[string]int{}
	for _, it := range r.Items {
		ds := dsName(it.DataSource)
		k, ok := idx[ds]
		if !ok {
			k = len(doc.Suites)
			idx[ds] = k
			doc.Suites = append(doc.Suites, junitSuite{Name: ds})
		}
		s := &doc.Suites[k]
		tc := junitCase{Name: it.Name(), Classname: "verl-score." + r.Command + "." + ds, Time: "0"}
		detail := junitDetail(it)
		switch {
		case it.Outcome.Mismatch():
			msg := fmt.Sprintf("%s: reference %s, new %s", it.Outcome, num(it.Reference), num(it.New))
			if it.Outcome == Missing {
				msg = "missing on one side: reference " + num(it.Reference) + ", new " + num(it.New)
			}
			tc.Failure = &junitMessage{Message: msg, Type: string(it.Outcome), Text: detail}
			s.Failures++
		case it.Outcome == NoReference:
			tc.Skipped = &junitMessage{Message: "no reference score"}
			s.Skipped++
		case it.Outcome == Flaky:
			tc.SystemOut = "flaky (" + it.FlakyReason + "): " + detail
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
	}
	if len(doc.Suites) > 0 {
		doc.Suites[0].Properties = &junitProperties{Props: []junitProperty{
			{"reference", r.Reference}, {"new", r.New},
			{"tolerance", fmt.Sprint(r.Tolerance)}, {"max_mismatch", fmt.Sprint(r.MaxMismatch)},
			{"result", r.Summary()},
		}}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitDetail(it *Item) string {
	var b strings.Builder
	if where := it.Where(); where != "" {
		fmt.Fprintf(&b, "%s\n", where)
	}
	fmt.Fprintf(&b, "reference %s, new %s", num(it.Reference), num(it.New))
	if len(it.Runs) > 0 {
		fmt.Fprintf(&b, ", runs %s", runs(it))
	}
	b.WriteString("\n")
	if c := cases(it); c != "" {
		fmt.Fprintf(&b, "cases: %s\n", c)
	}
	if it.Reason != "" {
		fmt.Fprintf(&b, "why: %s\n", it.Reason)
	}
	if it.Code != "" {
		fmt.Fprintf(&b, "code:\n%s\n", it.Code)
	}
	return b.String()
}
