package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func num(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'g', 6, 64)
}

func delta(it *Item) string {
	if it.Reference == nil || it.New == nil {
		return "-"
	}
	d := strconv.FormatFloat(it.Delta, 'g', 4, 64)
	if it.Delta > 0 {
		d = "+" + d
	}
	return d
}

// cases describes an item's verdicts: the cases that changed when the
// reference verdicts are known, else the new verdicts.
func cases(it *Item) string {
	if len(it.Changes) > 0 {
		const max = 8
		var parts []string
		for i, c := range it.Changes {
			if i == max {
				parts = append(parts, fmt.Sprintf("…(%d changed)", len(it.Changes)))
				break
			}
			parts = append(parts, fmt.Sprintf("#%d %s→%s", c.Case, c.From, c.To))
		}
		return strings.Join(parts, ", ")
	}
	s := it.NewVerdicts.String()
	if it.Err != "" {
		if s != "" {
			s += " "
		}
		s += "(" + it.Err + ")"
	}
	return s
}

func runs(it *Item) string {
	parts := []string{num(it.New)}
	for _, s := range it.Runs {
		parts = append(parts, strconv.FormatFloat(s, 'g', 6, 64))
	}
	return strings.Join(parts, ", ")
}

func (r *Report) title() string {
	if r.Command == "diff" {
		return fmt.Sprintf("verl-score diff: %s (A) → %s (B)", r.Reference, r.New)
	}
	return fmt.Sprintf("verl-score check: %s re-scored against %s", r.New, r.Reference)
}

func outcomeText(r *Report, o Outcome) string {
	if o == Missing && r.Command == "check" {
		return "missing"
	}
	return string(o)
}

// WriteText writes the report for a terminal: counts, per data source,
// the top worst mismatches and flaky responses, verdict changes and
// notes, and the result line.
func (r *Report) WriteText(w io.Writer, top int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, r.title())
	fmt.Fprintf(tw, "tolerance %g, allowed mismatch fraction %s", r.Tolerance, pct(r.MaxMismatch))
	if r.Command == "check" {
		fmt.Fprintf(tw, ", reruns %d", r.Reruns)
	}
	fmt.Fprint(tw, "\n\n")
	c := r.Counts
	fmt.Fprintln(tw, "RESPONSES\tCOMPARED\tEQUAL\tREGRESSED\tIMPROVED\tFLAKY\tMISSING\tNO REFERENCE")
	fmt.Fprintf(
		tw,
		"%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n\n",
		c.Responses,
		c.Compared,
		c.Equal,
		c.Regressed,
		c.Improved,
		c.Flaky,
		c.Missing,
		c.NoReference,
	)
	fmt.Fprintln(
		tw,
		"DATA SOURCE\tCOMPARED\tEQUAL\tREGRESSED\tIMPROVED\tFLAKY\tMISSING\tREF MEAN/PROMPT\tNEW MEAN/PROMPT\tREF "+
			"MEAN/RESPONSE\tNEW MEAN/RESPONSE",
	)
	for _, s := range r.BySource {
		fmt.Fprintf(
			tw,
			"%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\n",
			dsName(s.DataSource),
			s.Compared,
			s.Equal,
			s.Regressed,
			s.Improved,
			s.Flaky,
			s.Missing,
			s.PromptMeanReference,
			s.PromptMeanNew,
			s.MeanReference,
			s.MeanNew,
		)
	}
	fmt.Fprintln(
		tw,
		"(mean/prompt is verl's test_score/<data_source> and run's mean/prompt; both means cover the responses compared)",
	)
	if len(r.Mismatches) > 0 {
		fmt.Fprintf(tw, "\nWORST MISMATCHES (%d of %d)\n", min(top, len(r.Mismatches)), len(r.Mismatches))
		fmt.Fprintln(tw, "RESPONSE\tWHERE\tDATA SOURCE\tREFERENCE\tNEW\tDELTA\tOUTCOME\tCASES\tWHY")
		for _, it := range r.Mismatches[:min(top, len(r.Mismatches))] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Name(), it.Where(), dsName(it.DataSource),
				num(it.Reference), num(it.New), delta(it), outcomeText(r, it.Outcome), cases(it), firstLine(it.Reason))
		}
	}
	if len(r.Flaky) > 0 {
		fmt.Fprintf(tw, "\nFLAKY (%d of %d; not counted as mismatches)\n", min(top, len(r.Flaky)), len(r.Flaky))
		fmt.Fprintln(tw, "RESPONSE\tWHERE\tDATA SOURCE\tREFERENCE\tRUNS\tCASES (FIRST RUN)\tWHY")
		for _, it := range r.Flaky[:min(top, len(r.Flaky))] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Name(), it.Where(), dsName(it.DataSource),
				num(it.Reference), runs(it), cases(it), it.FlakyReason)
		}
	}
	if ch := r.Changed(); len(ch) > 0 {
		fmt.Fprintln(tw, "\nVERDICT CHANGES (cases)")
		for _, t := range ch {
			fmt.Fprintf(tw, "%s → %s\t%d\n", t.From, t.To, t.Count)
		}
	} else if len(r.Transitions) > 0 {
		fmt.Fprintln(tw, "\nVERDICT CHANGES (cases): none")
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(tw, "\nNOTES")
		for _, n := range r.Notes {
			fmt.Fprintln(tw, "- "+n)
		}
	}
	fmt.Fprintln(tw, "\n"+strings.ToUpper(r.Summary()[:1])+r.Summary()[1:])
	return tw.Flush()
}

// firstLine is the first line of s, cut for a table cell.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// fence keeps text from closing a markdown code fence.
func fence(s string) string { return strings.ReplaceAll(s, "```", "`\u200b``") }

func dsName(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// mdEscape makes s safe inside a Markdown table cell.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "`", "'")
	return s
}

// WriteMarkdown writes the report as Markdown to paste in a pull request
// (or into $GITHUB_STEP_SUMMARY): the result, the counts, per data
// source, the top worst mismatches, flaky responses and, when verdicts are
// known on both sides, the verdict transition matrix.
func (r *Report) WriteMarkdown(w io.Writer, top int) error {
	var b strings.Builder
	mark := "✅"
	if r.Regression {
		mark = "❌"
	}
	fmt.Fprintf(&b, "### %s %s\n\n", mark, mdEscape(r.title()))
	fmt.Fprintf(&b, "**%s**\n\n", mdEscape(r.Summary()))
	fmt.Fprintf(&b, "Tolerance %g, allowed mismatch fraction %s", r.Tolerance, pct(r.MaxMismatch))
	if r.Command == "check" {
		fmt.Fprintf(&b, ", reruns %d", r.Reruns)
	}
	b.WriteString(".\n\n")
	c := r.Counts
	b.WriteString(
		"| responses | compared | equal | regressed | improved | flaky | missing | no reference " +
			"|\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	)
	fmt.Fprintf(
		&b,
		"| %d | %d | %d | %d | %d | %d | %d | %d |\n\n",
		c.Responses,
		c.Compared,
		c.Equal,
		c.Regressed,
		c.Improved,
		c.Flaky,
		c.Missing,
		c.NoReference,
	)
	b.WriteString(
		"| data source | compared | equal | regressed | improved | flaky | missing | reference mean/prompt | new " +
			"mean/prompt | reference mean/response | new mean/response " +
			"|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	)
	for _, s := range r.BySource {
		fmt.Fprintf(
			&b,
			"| %s | %d | %d | %d | %d | %d | %d | %.4f | %.4f | %.4f | %.4f |\n",
			mdEscape(dsName(s.DataSource)),
			s.Compared,
			s.Equal,
			s.Regressed,
			s.Improved,
			s.Flaky,
			s.Missing,
			s.PromptMeanReference,
			s.PromptMeanNew,
			s.MeanReference,
			s.MeanNew,
		)
	}
	if len(r.Mismatches) > 0 {
		fmt.Fprintf(&b, "\n#### Worst mismatches (%d of %d)\n\n", min(top, len(r.Mismatches)), len(r.Mismatches))
		b.WriteString(
			"| response | where | data source | reference | new | delta | outcome | cases | why " +
				"|\n|---|---|---|---:|---:|---:|---|---|---|\n",
		)
		for _, it := range r.Mismatches[:min(top, len(r.Mismatches))] {
			fmt.Fprintf(
				&b,
				"| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				mdEscape(it.Name()),
				mdEscape(it.Where()),
				mdEscape(dsName(it.DataSource)),
				num(it.Reference),
				num(it.New),
				delta(it),
				it.Outcome,
				mdEscape(cases(it)),
				mdEscape(firstLine(it.Reason)),
			)
		}
		for _, it := range r.Mismatches[:min(top, len(r.Mismatches))] {
			if it.Reason == "" && it.Code == "" {
				continue
			}
			fmt.Fprintf(&b, "\n<details><summary>%s: %s</summary>\n\n", mdEscape(it.Name()), mdEscape(firstLine(it.Reason)))
			if it.Reason != "" {
				fmt.Fprintf(&b, "```\n%s\n```\n", fence(it.Reason))
			}
			if it.Code != "" {
				fmt.Fprintf(&b, "\n```\n%s\n```\n", fence(it.Code))
			}
			b.WriteString("\n</details>\n")
		}
	}
	if len(r.Flaky) > 0 {
		fmt.Fprintf(&b, "\n#### Flaky (%d of %d, not counted)\n\n", min(top, len(r.Flaky)), len(r.Flaky))
		b.WriteString(
			"| response | where | data source | reference | runs | cases (first run) | why |\n|---|---|---|---:|---|---|---|\n",
		)
		for _, it := range r.Flaky[:min(top, len(r.Flaky))] {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(it.Name()), mdEscape(it.Where()),
				mdEscape(dsName(it.DataSource)), num(it.Reference), runs(it), mdEscape(cases(it)), mdEscape(it.FlakyReason))
		}
	}
	if labels, counts := r.Matrix(); len(labels) > 0 {
		b.WriteString("\n#### Verdict transitions (cases; rows: reference, columns: new)\n\n| from \\ to |")
		for _, l := range labels {
			fmt.Fprintf(&b, " %s |", l)
		}
		b.WriteString("\n|---|")
		for range labels {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		for i, l := range labels {
			fmt.Fprintf(&b, "| **%s** |", l)
			for j := range labels {
				n := counts[i][j]
				switch {
				case n == 0:
					b.WriteString(" · |")
				case i != j:
					fmt.Fprintf(&b, " **%d** |", n)
				default:
					fmt.Fprintf(&b, " %d |", n)
				}
			}
			b.WriteString("\n")
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n#### Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
