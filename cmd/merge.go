package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/job"
)

type mergeOptions struct {
	output   string
	shards   []string
	casesOut string
	summary  string
	json     bool
	streams  Streams
}

func newMergeCmd(s Streams) *cobra.Command {
	opts := &mergeOptions{streams: s}
	c := &cobra.Command{
		Use:   "merge OUT SHARD_OUTPUTS...",
		Short: "Join the outputs of 'run --shard K/N' into the output of one run",
		Long: `Join the outputs of the N shards of one job ('verl-score run INPUT
--shard K/N -o SHARD_K') into OUT: the output one unsharded run would have
written, byte for byte, with its summary computed again from every row
(means and pass@k over all prompts, not averaged). The shard outputs may
be given in any order; each needs the .shard file its run left beside it,
and the input must still be where the shards read it. --cases-out joins
the shards' --cases-out files.

Requests, dedup and cache counts in the summary are what the shards sent:
identical executions are shared within one process only.` + exitHelp,
		Example: `  verl-score merge scored.parquet shards/scored-*.parquet --summary summary.json
  verl-score merge scored.jsonl s0.jsonl s1.jsonl s2.jsonl --cases-out cases.jsonl`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("merge takes OUT and at least one shard output, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.output, opts.shards = args[0], args[1:]
			return runMerge(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.casesOut, "cases-out", "", "also join the shards' --cases-out files into this file")
	f.StringVar(&opts.summary, "summary", "", "also write the summary as JSON to this file")
	f.BoolVar(&opts.json, "json", false, "print the summary as JSON on stdout instead of a table")
	return c
}

// runMerge is the merge command.
func runMerge(_ context.Context, opts *mergeOptions) error {
	sum, err := job.Merge(
		job.MergeOptions{Output: opts.output, Shards: opts.shards, CasesOut: opts.casesOut, Summary: opts.summary},
	)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(opts.streams.Out, sum)
	}
	sum.WriteTable(opts.streams.Out)
	return nil
}
