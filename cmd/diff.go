package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/check"
	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/rollout"
)

type diffOptions struct {
	a, b    string
	idKey   string
	report  reportOptions
	loader  *config.Loader
	streams Streams
}

func newDiffCmd(s Streams) *cobra.Command {
	opts := &diffOptions{streams: s}
	c := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two outputs of run, response by response and case by case",
		Long: `Compare two outputs of 'verl-score run' (parquet or JSONL, in any mix):
A is the reference, B the new one. Rows are matched by identity: their
--id-key field when given, else their prompt ("prompt", or a rollout
dump's "input"; the ground truth where there is no prompt), the k-th row
with one prompt on one side against the k-th on the other, so that
reordered or sharded-and-merged outputs compare as they should. Rows with
nothing to match them by are matched by position, and the report says so.
When fewer than half the rows match, A and B are not outputs of the same
input and diff refuses (exit 1). Responses are matched by index; a row or
response present on one side only is reported as missing (a mismatch),
with a note giving both counts.

The report gives the counts (equal, regressed, improved, missing), per
data source with the mean rewards of A and B, the worst mismatches with the
cases whose verdicts changed, and the verdict transition matrix over all
cases (e.g. True → -3: 12). A diff runs nothing, so nothing is flaky: a
score that moved is a mismatch whatever verdicts moved it.` + checkExitHelp,
		Example: `  verl-score diff main.scored.parquet branch.scored.parquet
  verl-score diff old.scored.jsonl new.scored.parquet --markdown diff.md --junit diff.xml`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("diff takes two outputs A and B, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.a, opts.b = args[0], args[1]
			return runDiff(c.Context(), opts)
		},
	}
	opts.report.addFlags(c.Flags())
	c.Flags().StringVar(&opts.idKey, "id-key", "", "dotted path of a row id to match the rows of A and B by "+
		"(default: their prompt), and to name responses by (default: id, task_id, extra_info.task_id or "+
		"extra_info.index, the first found; else row:response)")
	opts.loader = config.AddFlags(c.Flags(), config.Diff)
	return c
}

func runDiff(_ context.Context, opts *diffOptions) error {
	if err := opts.report.validate(); err != nil {
		return err
	}
	cfg, err := loadConfig(opts.loader)
	if err != nil {
		return err
	}
	ro := rollout.DefaultOptions()
	ro.DataSourceKey = cfg.Reader.DataSourceKey
	ro.IDKey = opts.idKey
	rep, err := check.Diff(opts.a, opts.b, check.DiffOptions{
		Reader: ro, Tolerance: opts.report.tolerance, MaxMismatch: opts.report.maxMismatch,
		KeepItems: opts.report.junit != "",
	})
	if err != nil {
		return err
	}
	return opts.report.emit(opts.streams, rep)
}
