package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/report"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
)

func newReportCmd(s Streams) *cobra.Command {
	var cases, out, dsKey, passK string
	c := &cobra.Command{
		Use:   "report SCORED",
		Short: "Render a scored output as one self-contained HTML page",
		Long: `Render SCORED (an output of 'verl-score run', parquet or JSONL) as one HTML
file that needs no network: per data source the reward histogram, the
verdict breakdown, the pass@k curve with the prompts behind each k, the
infrastructure-error rate, and, where the run kept them, the rewards a
compare mode or checkers changed (reward_exact). With --cases (the run's
--cases-out file) it adds the slowest cases, the most common failure
messages and the responses the audit flagged.

Its figures are the run's summary's (mean_score, pass_at_k, verdicts, ...),
each marked data-figure="<data source>:<name>" in the page. A prompt is
what it is for run: a row, or the lines of a rollout dump with one input
at one step.

check and diff write their own page with --html.`,
		Example: `  verl-score run data.parquet -o scored.parquet --cases-out cases.jsonl
  verl-score report scored.parquet --cases cases.jsonl -o report.html`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("report takes one SCORED output, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts := rollout.DefaultOptions()
			opts.DataSourceKey = dsKey
			ks, err := results.ParsePassK(passK)
			if err != nil {
				return &UsageError{Err: err}
			}
			rep, err := report.Build(args[0], cases, opts, ks...)
			if err != nil {
				return err
			}
			if out == "-" {
				return rep.WriteHTML(s.Out)
			}
			if err := writeFileAtomic(out, func(w io.Writer) error { return rep.WriteHTML(w) }); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(s.ErrOut, "wrote %s\n", out)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cases, "cases", "", "the run's --cases-out file, for the slowest cases, failure messages and audit flags")
	f.StringVarP(&out, "output", "o", "report.html", "the HTML file to write (- for stdout)")
	f.StringVar(&dsKey, "data-source-key", "data_source", "column holding the data source")
	f.StringVar(
		&passK,
		"pass-k",
		"",
		"the k of pass@k, as run's --pass-k (e.g. 1,5,10,100); default 1 and the powers of two",
	)
	return c
}
