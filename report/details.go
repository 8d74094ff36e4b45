package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"unicode/utf8"

	"github.com/verl-score/verl-score/explain"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/verdict"
)

// The page details every response of a run of up to maxAll responses.
// Beyond that it keeps a bound so that it stays one file a browser opens
// at once: every failing response up to maxFailing, then sampleSize of
// each (data source, kind of failure) beyond it, and sampleSize passing
// responses per data source. It says what it left out.
const (
	maxAll     = 5000
	maxFailing = 3000
	sampleSize = 20
	// maxText bounds each input, output and stderr on the page.
	maxText = 2000
)

// detail is one response as the page's script shows it.
type detail struct {
	Key    string       `json:"k"` // "row-response", the anchor #r-row-response
	Name   string       `json:"n"`
	Row    int          `json:"row"`
	Resp   int          `json:"resp"`
	Source string       `json:"src"`
	Reward float64      `json:"reward"`
	Error  string       `json:"err,omitempty"`
	Code   string       `json:"code,omitempty"`
	Fence  string       `json:"fence,omitempty"`
	Text   string       `json:"text,omitempty"`
	Kind   string       `json:"kind"`             // passed, or the first failing case's status
	Causes []string     `json:"causes,omitempty"` // distinct, in case order
	Cases  []caseDetail `json:"cases"`
	SWE    *sweDetail   `json:"swe,omitempty"`
}

// sweDetail is a repository task's outcome as the page shows it.
type sweDetail struct {
	Headline string   `json:"head"`            // sweHeadline
	Flags    []string `json:"flags,omitempty"` // "kind path"
	Apply    string   `json:"apply,omitempty"` // the apply output, when the patch did not apply
	Log      string   `json:"log,omitempty"`   // the test log's end
}

// caseDetail is one case of a detailed response.
type caseDetail struct {
	Index    int      `json:"i"`
	Verdict  string   `json:"v"`
	Status   string   `json:"s"`
	Input    *string  `json:"in,omitempty"`
	Expected *string  `json:"exp,omitempty"`
	Stdout   *string  `json:"out,omitempty"`
	Stderr   *string  `json:"errout,omitempty"`
	Compile  *string  `json:"compile,omitempty"`
	Seconds  *float64 `json:"t,omitempty"`
	Cause    string   `json:"cause,omitempty"`
	DiffLine int      `json:"diff,omitempty"` // 1-based line of the first difference
}

// details reads the responses of the scored output (with the cases file's
// cases) and keeps those the page details.
func (r *Report) details(opts rollout.Options) error {
	rs, err := ReadResponses(r.Scored, r.Cases, opts, nil)
	if err != nil {
		return err
	}
	var failing, passing []*Response
	for _, x := range rs {
		if x.Failed() {
			failing = append(failing, x)
		} else {
			passing = append(passing, x)
		}
	}
	kept := failing
	if len(rs) > maxAll && len(failing) > maxFailing {
		kept = append(failing[:maxFailing:maxFailing], sample(failing[maxFailing:], func(x *Response) string {
			return x.DataSource + "\x00" + toDetail(x).Kind
		})...)
	}
	keptPassing := passing
	if len(rs) > maxAll {
		keptPassing = sample(passing, func(x *Response) string { return x.DataSource })
	}
	kept = append(kept, keptPassing...)
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Row != kept[j].Row {
			return kept[i].Row < kept[j].Row
		}
		return kept[i].Index < kept[j].Index
	})
	ds := make([]detail, len(kept))
	for i, x := range kept {
		ds[i] = toDetail(x)
	}
	b, err := json.Marshal(ds)
	if err != nil {
		return err
	}
	r.DetailsJSON = template.JS(b) // json.Marshal escapes <, > and &: safe inside <script>
	r.Detailed = len(ds)
	r.ResponsesTotal = len(rs)
	r.LeftOutFailing = len(failing) - (len(kept) - len(keptPassing))
	r.LeftOutPassing = len(passing) - len(keptPassing)
	return nil
}

// sample keeps the first sampleSize responses of each kind.
func sample(rs []*Response, kind func(*Response) string) []*Response {
	n := map[string]int{}
	var out []*Response
	for _, x := range rs {
		k := kind(x)
		if n[k] < sampleSize {
			n[k]++
			out = append(out, x)
		}
	}
	return out
}

func toDetail(x *Response) detail {
	d := detail{
		Key:    fmt.Sprintf("%d-%d", x.Row, x.Index),
		Name:   x.Name(),
		Row:    x.Row,
		Resp:   x.Index,
		Source: x.DataSource,
		Reward: x.Reward,
		Error:  x.Error,
		Code:   x.Code,
		Fence:  x.Fence,
		Text:   clip(x.Text),
		Kind:   "passed",
	}
	if x.Error != "" {
		d.Kind = "error"
	}
	if s := x.SWE; s != nil {
		d.SWE = &sweDetail{Headline: sweHeadline(s), Log: clipEnd(s.Log)}
		for _, f := range s.Flags {
			d.SWE.Flags = append(d.SWE.Flags, f.Kind+" "+f.Path)
		}
		if !s.PatchApplied {
			d.SWE.Apply = clipEnd(s.ApplyOutput)
		}
	}
	seen := map[string]bool{}
	note := func(status, cause string) {
		if d.Kind == "passed" && status != verdict.StatusSuccess {
			d.Kind = status
		}
		if cause != "" && !seen[cause] {
			seen[cause] = true
			d.Causes = append(d.Causes, cause)
		}
	}
	if x.Cases == nil {
		for i, v := range x.Verdicts {
			c := caseDetail{Index: i, Verdict: verdict.Code(v).String()}
			if i < len(x.Statuses) {
				c.Status = x.Statuses[i]
			}
			note(c.Status, "")
			d.Cases = append(d.Cases, c)
		}
		return d
	}
	for i := range x.Cases {
		c := &x.Cases[i]
		cd := caseDetail{
			Index:   c.CaseIndex,
			Verdict: c.Verdict.String(),
			Status:  c.Status,
			Seconds: c.Duration,
			Cause:   explain.Cause(c),
		}
		if c.Status != verdict.StatusSuccess {
			in, exp := c.Input, c.ExpectedOutput
			cd.Input, cd.Expected = clipp(&in), clipp(&exp)
			cd.Stdout, cd.Stderr = clipp(c.Stdout), clipp(tail(c.Stderr))
			if c.Status == verdict.StatusCompileError {
				cd.Compile = clipp(c.CompileStderr)
			}
			if c.Stdout != nil && c.Status == verdict.StatusWrongAnswer {
				if df, ok := explain.FirstDiff(c.ExpectedOutput, *c.Stdout); ok {
					cd.DiffLine = df.Line
				}
			}
		}
		note(c.Status, cd.Cause)
		d.Cases = append(d.Cases, cd)
	}
	return d
}

func tail(s *string) *string {
	if s == nil {
		return nil
	}
	t := explain.Tail(*s, 20)
	return &t
}

// clipEnd is the end of s, maxText bytes of it at most (a log's summary
// is at its end).
func clipEnd(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := len(s) - maxText
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return fmt.Sprintf("[%d bytes before] …", i) + s[i:]
}

func clip(s string) string {
	if len(s) > maxText {
		return s[:maxText] + fmt.Sprintf("… [%d bytes in all]", len(s))
	}
	return s
}

func clipp(s *string) *string {
	if s == nil {
		return nil
	}
	c := clip(*s)
	return &c
}
