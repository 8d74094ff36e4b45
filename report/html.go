package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"net/url"
	"strings"

	"github.com/verl-score/verl-score/check"
)

// Every figure the page shows that a summary also holds is marked
// data-figure="<data source>:<summary JSON name>", so that a test (or a
// script) can read the page back; every chart is an <svg> with
// data-chart="<kind>" inside the section of its data source.

const style = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2430; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #d6dbe3; }
h3 { font-size: 14px; margin: 12px 0 4px; }
table { border-collapse: collapse; margin: 4px 0 12px; }
td, th { padding: 2px 10px; border-bottom: 1px solid #eceff3; text-align: right; }
td.l, th.l { text-align: left; }
.grid { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.card { border: 1px solid #d6dbe3; border-radius: 6px; padding: 8px 12px; }
.muted { color: #6b7482; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2430; }
code { font-size: 12px; }
a { color: #2a5db0; }
#responses .filters { display: flex; gap: 12px; flex-wrap: wrap; margin: 8px 0; }
#detail { border: 1px solid #d6dbe3; border-radius: 6px; padding: 8px 16px; margin: 12px 0; }
#detail:empty { display: none; }
pre { background: #f6f8fa; padding: 6px 8px; overflow-x: auto; font-size: 12px; margin: 2px 0 8px; max-height: 420px; }
pre.code .ln { color: #9aa3af; user-select: none; display: inline-block; width: 3.5em; }
pre.code .kw { color: #8a3ab9; } pre.code .st { color: #1f7a45; } pre.code .cm { color: #8a93a3; font-style: italic; } pre.code .nu { color: #b35900; }
mark.first-diff { background: #ffd9d2; }
table.cases td { vertical-align: top; text-align: left; }
.case-ok { color: #3f9e6e; } .case-bad { color: #c2553a; }
`

var funcs = template.FuncMap{
	"f4":  func(f float64) string { return fmt.Sprintf("%.4f", f) },
	"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) },
	"histogram": func(g *Group) template.HTML {
		labels := []string{"0", ".0–.1", ".1–.2", ".2–.3", ".3–.4", ".4–.5", ".5–.6", ".6–.7", ".7–.8", ".8–.9", ".9–1", "1"}
		return bars("histogram", "responses by reward", labels, g.Histogram[:], func(string) string { return "#4f7bd9" })
	},
	"verdictChart": func(g *Group) template.HTML {
		var labels []string
		var counts []int
		for _, v := range g.Verdicts {
			labels, counts = append(labels, v.Name), append(counts, v.Count)
		}
		return bars("verdicts", "cases by verdict", labels, counts, verdictColor)
	},
	"passChart": passChart,
	"heatmap":   heatmap,
	"key":       func(g *Group, name string) string { return g.Name + ":" + name },
	"deref":     func(f *float64) float64 { return *f },
	// The links into the Responses section: filters in the fragment, made
	// here (query-escaped), so the template must not escape them again.
	"filterLink": func(source, cause string) template.URL {
		return template.URL("#cause=" + url.QueryEscape(cause) + sourcePart(source))
	},
	"verdictLink": func(source, name string) template.URL {
		kind := map[string]string{"True": "passed", "False": "wrong_answer", "-1": "infra", "-2": "runtime_error", "-3": "timeout", "-4": "compile_error"}[name]
		return template.URL("#kind=" + kind + sourcePart(source))
	},
	"sourceLink": func(source string) template.URL { return template.URL("#all=1" + sourcePart(source)) },
	"maxFailing": func() int { return maxFailing },
	"maxAll":     func() int { return maxAll },
	"sampleSize": func() int { return sampleSize },
}

// sourcePart is a filter link's data source, none for the overall group.
func sourcePart(source string) string {
	if source == "overall" {
		return ""
	}
	return "&source=" + url.QueryEscape(source)
}

// verdictColors tell the verdicts apart: passed green, wrong red, the
// program's failures in warm tones, the sandbox's grey.
var verdictColors = map[string]string{"True": "#3f9e6e", "False": "#c2553a", "-1": "#8a93a3", "-2": "#d68a2e", "-3": "#8e5bb5", "-4": "#7a5a3a"}

func verdictColor(label string) string {
	if c, ok := verdictColors[label]; ok {
		return c
	}
	return "#4f7bd9"
}

// bars draws a bar chart of counts, each bar in color(its label).
func bars(kind, title string, labels []string, counts []int, color func(string) string) template.HTML {
	const w, h, left, bottom, top = 420, 180, 36, 28, 32
	peak := 1
	for _, c := range counts {
		peak = max(peak, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg data-chart="%s" width="%d" height="%d" role="img" aria-label="%s">`, kind, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="12">%s</text>`, left, template.HTMLEscapeString(title))
	slot := float64(w-left-8) / float64(len(counts))
	for i, c := range counts {
		bh := float64(h-bottom-top) * float64(c) / float64(peak)
		x := float64(left) + float64(i)*slot
		y := float64(h-bottom) - bh
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" data-label="%s" data-count="%d"><title>%s: %d</title></rect>`,
			x+2, y, slot-4, bh, color(labels[i]), template.HTMLEscapeString(labels[i]), c, template.HTMLEscapeString(labels[i]), c)
		if c > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`, x+slot/2, y-3, c)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x+slot/2, h-bottom+14, template.HTMLEscapeString(labels[i]))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8a93a3"/></svg>`, left, h-bottom, w-8, h-bottom)
	return template.HTML(b.String())
}

// passChart draws pass@k against k, each point labelled with the prompts
// behind it.
func passChart(g *Group) template.HTML {
	const w, h, left, bottom, top = 420, 190, 36, 40, 32
	var b strings.Builder
	fmt.Fprintf(&b, `<svg data-chart="pass_at_k" width="%d" height="%d" role="img" aria-label="pass@k">`, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="12">pass@k (prompts behind each k below it)</text>`, left)
	n := len(g.PassAtK)
	slot := float64(w-left-16) / float64(max(n, 1))
	var pts []string
	for i, p := range g.PassAtK {
		x := float64(left) + slot*(float64(i)+0.5)
		y := float64(h-bottom) - float64(h-bottom-top)*p.Value
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#c2553a" data-k="%d" data-value="%.4f" data-prompts="%d"><title>pass@%d = %.4f over %d prompts</title></circle>`,
			x, y, p.K, p.Value, p.Prompts, p.K, p.Value, p.Prompts)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.3f</text>`, x, y-7, p.Value)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">k=%d</text>`, x, h-bottom+14, p.K)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" class="muted">%d prompts</text>`, x, h-bottom+28, p.Prompts)
	}
	if len(pts) > 1 {
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#c2553a"/>`, strings.Join(pts, " "))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8a93a3"/></svg>`, left, h-bottom, w-8, h-bottom)
	return template.HTML(b.String())
}

// heatmap draws a verdict transition matrix: rows are the reference's
// verdicts, columns the new ones.
func heatmap(r *check.Report) template.HTML {
	labels, counts := r.Matrix()
	if len(labels) == 0 {
		return ""
	}
	const cell, left, top = 56, 60, 40
	peak := 1
	for i := range counts {
		for j := range counts[i] {
			if i != j {
				peak = max(peak, counts[i][j])
			}
		}
	}
	const title = "reference verdict (rows) → new verdict (columns)"
	// Wide enough for the title too (about 7 px a character at 11 px).
	w, h := max(left+cell*len(labels)+8, 7*len([]rune(title))+8), top+cell*len(labels)+8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg data-chart="transitions" width="%d" height="%d" role="img" aria-label="verdict transitions">`, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="12">%s</text>`, 0, title)
	for j, l := range labels {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+cell*j+cell/2, top-6, template.HTMLEscapeString(l))
	}
	for i, from := range labels {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, top+cell*i+cell/2+4, template.HTMLEscapeString(from))
		for j, to := range labels {
			c := counts[i][j]
			fill := "#eef1f5"
			if i != j && c > 0 {
				a := 0.25 + 0.75*math.Sqrt(float64(c)/float64(peak))
				fill = fmt.Sprintf("rgba(194,85,58,%.2f)", a)
			} else if i == j && c > 0 {
				fill = "#d9efe3"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff" data-from="%s" data-to="%s" data-count="%d"><title>%s → %s: %d</title></rect>`,
				left+cell*j, top+cell*i, cell, cell, fill, from, to, c, from, to, c)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%d</text>`, left+cell*j+cell/2, top+cell*i+cell/2+4, c)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var page = template.Must(template.New("report").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>verl-score report: {{.Scored}}</title><style>` + style + `</style></head>
<body>
<h1>verl-score report</h1>
<p class="muted">scored output <code>{{.Scored}}</code>{{if .Cases}}, cases <code>{{.Cases}}</code>{{else}}; no cases file given (--cases): no slowest cases, failure messages or audit flags{{end}}</p>
<table><tr><th class="l">data source</th><th>prompts</th><th>responses</th><th>mean/prompt</th><th>mean/response</th><th>infra errors</th></tr>
{{range .Groups}}<tr><td class="l">{{.Name}}</td><td data-figure="{{key . "prompts"}}">{{.Prompts}}</td><td data-figure="{{key . "responses"}}">{{.Responses}}</td>
<td data-figure="{{key . "mean_score"}}">{{f4 .MeanScore}}</td><td data-figure="{{key . "mean_over_responses"}}">{{f4 .MeanOverResponses}}</td>
<td data-figure="{{key . "infra_error_rate"}}" data-value="{{.InfraRate}}">{{pct .InfraRate}}</td></tr>
{{end}}</table>
{{range .Groups}}{{$g := .}}
<section data-source="{{.Name}}">
<h2>{{.Name}} <a class="muted" style="font-size:12px" href="{{sourceLink .Name}}">responses</a></h2>
<div class="grid">
<div class="card">{{histogram .}}</div>
<div class="card">{{verdictChart .}}
<table>{{range .Verdicts}}<tr><td class="l"><a href="{{verdictLink $g.Name .Name}}">{{.Name}}</a></td><td data-figure="{{key $g (printf "verdicts.%s" .Name)}}">{{.Count}}</td></tr>{{end}}</table>
{{if .SWEOutcomes}}<h3>repository tasks</h3><table>{{range .SWEOutcomes}}<tr><td class="l">{{.Name}}</td><td data-figure="{{key $g (printf "swe_outcomes.%s" .Name)}}">{{.Count}}</td></tr>{{end}}</table>{{end}}</div>
<div class="card">{{passChart .}}
<table><tr><th class="l">k</th><th>pass@k</th><th>prompts</th></tr>{{range .PassAtK}}<tr><td class="l">{{.K}}</td>
<td data-figure="{{key $g (printf "pass_at_k.pass@%d" .K)}}">{{f4 .Value}}</td><td data-figure="{{key $g (printf "pass_at_k_prompts.pass@%d" .K)}}">{{.Prompts}}</td></tr>{{end}}</table></div>
</div>
<p>Responses with an infrastructure error: <span data-figure="{{key . "responses_with_infra_error"}}">{{.InfraResponses}}</span> ({{pct .InfraRate}}).</p>
{{if .HasExact}}<h3>Compare mode or checkers against verl's exact rule</h3>
<p><span data-figure="{{key . "rewards_differ_from_exact"}}">{{.FlipCount}}</span> rewards differ from reward_exact; mean/prompt
<span data-figure="{{key . "mean_score_exact"}}">{{f4 .MeanScoreExact}}</span> exact, {{f4 .MeanScore}} now.</p>
{{if .Flips}}<ul>{{range .Flips}}<li><a href="#r-{{.Row}}-{{.Response}}">row {{.Row}} response {{.Response}}</a>: {{.Text}}</li>{{end}}</ul>{{end}}{{end}}
{{if .HasAudit}}<h3>Audit</h3>
<p><span data-figure="{{key . "audit_flagged"}}">{{.FlagCount}}</span> responses flagged{{range .FlagCounts}}; {{.Name}} {{.Count}}{{end}}.</p>
{{if .Flagged}}<ul>{{range .Flagged}}<li><a href="#r-{{.Row}}-{{.Response}}">row {{.Row}} response {{.Response}}</a>: {{.Text}}</li>{{end}}</ul>{{end}}{{end}}
{{if .Slowest}}<h3>Slowest cases</h3><table data-list="slowest"><tr><th class="l">case</th><th>seconds</th><th class="l">status</th></tr>
{{range .Slowest}}<tr><td class="l"><a href="#r-{{.Row}}-{{.Response}}">{{.Where}}</a></td><td>{{printf "%.3f" .Seconds}}</td><td class="l">{{.Status}}</td></tr>{{end}}</table>{{end}}
{{if .Failures}}<h3>Most common failure causes</h3><table data-list="failures"><tr><th>cases</th><th class="l">cause</th></tr>
{{range .Failures}}<tr><td>{{.Count}}</td><td class="l"><a href="{{filterLink $g.Name .Name}}"><code>{{.Name}}</code></a></td></tr>{{end}}</table>{{end}}
</section>
{{end}}
<section id="responses">
<h2>Responses</h2>
<p class="muted" data-detailed="{{.Detailed}}">{{.Detailed}} of {{.ResponsesTotal}} responses detailed{{if or .LeftOutFailing .LeftOutPassing}}: left out
{{.LeftOutFailing}} failing responses (a run of more than {{maxAll}} responses keeps every failing one up to {{maxFailing}}, then {{sampleSize}} of each data source and kind) and {{.LeftOutPassing}} passing ones ({{sampleSize}} per data source kept){{end}}.
{{if not .Cases}}Without the cases file (--cases) a response shows its code and verdicts, not its inputs and outputs.{{end}}</p>
<div class="filters">
<label>data source <select id="f-source"><option value="">all</option>{{range .Groups}}{{if ne .Name "overall"}}<option>{{.Name}}</option>{{end}}{{end}}</select></label>
<label>verdict <select id="f-kind"><option value="">all</option><option value="failed">failed</option><option value="passed">passed</option>
<option value="wrong_answer">wrong answer</option><option value="runtime_error">runtime error</option><option value="timeout">timeout</option>
<option value="compile_error">compile error</option><option value="infra">infrastructure</option></select></label>
<label>task id <input id="f-id" size="16" placeholder="search"></label>
<span id="f-cause" class="muted"></span>
</div>
<div id="detail"></div>
<table id="list" data-list="responses"><thead><tr><th class="l">response</th><th class="l">data source</th><th>reward</th><th class="l">why</th></tr></thead><tbody></tbody></table>
</section>
<script type="application/json" id="responses-data">{{.DetailsJSON}}</script>
<script>` + pageScript + `</script>
</body></html>
`))

// WriteHTML writes r as one HTML page.
func (r *Report) WriteHTML(w io.Writer) error { return page.Execute(w, r) }

var checkPage = template.Must(template.New("check").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>verl-score {{.Command}}</title><style>` + style + `</style></head>
<body>
<h1>verl-score {{.Command}}</h1>
<p class="muted">reference <code>{{.Reference}}</code>, new <code>{{.New}}</code>; tolerance {{.Tolerance}}, mismatches allowed {{.MaxMismatch}}</p>
<p data-figure="regression" data-value="{{.Regression}}">{{if .Regression}}<strong>Regression:</strong>{{else}}No regression:{{end}}
<span data-figure="mismatches">{{.Counts.Mismatches}}</span> mismatches of <span data-figure="compared">{{.Counts.Compared}}</span> compared
({{pct .MismatchFraction}}); <span data-figure="regressed">{{.Counts.Regressed}}</span> regressed, <span data-figure="improved">{{.Counts.Improved}}</span> improved,
<span data-figure="flaky">{{.Counts.Flaky}}</span> flaky, <span data-figure="missing">{{.Counts.Missing}}</span> missing.</p>
<table><tr><th class="l">data source</th><th>responses</th><th>equal</th><th>regressed</th><th>improved</th><th>flaky</th><th>mean reference</th><th>mean new</th></tr>
{{range .BySource}}<tr><td class="l">{{.DataSource}}</td><td>{{.Responses}}</td><td>{{.Equal}}</td><td>{{.Regressed}}</td><td>{{.Improved}}</td><td>{{.Flaky}}</td>
<td>{{f4 .PromptMeanReference}}</td><td>{{f4 .PromptMeanNew}}</td></tr>{{end}}</table>
<h2>Verdict transitions</h2>
<div class="card" style="display:inline-block">{{heatmap .}}</div>
<h2>Regressed and other mismatched responses</h2>
{{if .Mismatches}}<table data-list="mismatches"><tr><th class="l">response</th><th class="l">data source</th><th>reference</th><th>new</th><th class="l">outcome</th><th class="l">differing cases</th><th class="l">why</th></tr>
{{range .Mismatches}}<tr><td class="l" title="row {{.Row}} response {{.Response}}">{{.Name}}</td><td class="l">{{.DataSource}}</td>
<td>{{if .Reference}}{{f4 (deref .Reference)}}{{else}}–{{end}}</td><td>{{if .New}}{{f4 (deref .New)}}{{else}}–{{end}}</td><td class="l">{{.Outcome}}</td>
<td class="l">{{range $i, $c := .Changes}}{{if $i}}, {{end}}case {{$c.Case}}: {{$c.From}}→{{$c.To}}{{end}}</td>
<td class="l">{{if .Reason}}<code>{{.Reason}}</code>{{end}}{{if .Code}}<details><summary>code</summary><pre>{{.Code}}</pre></details>{{end}}</td></tr>{{end}}</table>
{{else}}<p>None.</p>{{end}}
{{if .Flaky}}<h2>Flaky responses</h2><ul>{{range .Flaky}}<li>{{.Name}} ({{.DataSource}}): {{.FlakyReason}}</li>{{end}}</ul>{{end}}
</body></html>
`))

// WriteCheckHTML writes a check or diff report as one HTML page: its
// counts, the verdict transition matrix as a heat map, and the mismatched
// responses with their differing cases.
func WriteCheckHTML(w io.Writer, r *check.Report) error { return checkPage.Execute(w, r) }
