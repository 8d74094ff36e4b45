package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/verl-score/verl-score/report"
	"github.com/verl-score/verl-score/rollout"
)

type showOptions struct {
	scored string
	which  string // ROW, ROW:RESPONSE, a task id, or "" for all
	cases  string
	failed bool
	idKey  string
	dsKey  string
	pager  bool
	s      Streams
}

// newShowCmd builds `verl-score show`; runF, when not nil, replaces
// runShow (tests stop there).
func newShowCmd(s Streams, runF func(context.Context, *showOptions) error) *cobra.Command {
	if runF == nil {
		runF = runShow
	}
	opts := &showOptions{s: s}
	c := &cobra.Command{
		Use:   "show SCORED [ROW[:RESPONSE] | ID]",
		Short: "Show scored responses in the terminal: code, cases and why they failed",
		Long: `Show the responses of SCORED (an output of 'verl-score run', parquet or
JSONL): the code verl extracted, each case's verdict and status, and for a
failing case why: the first line where the output differs from the
expected one (marked in the output), the exception and the frame it came
from, the compiler's first error, or the last line a timed-out program
printed. With --cases (the run's --cases-out file) every case shows its
input, expected output, output and stderr's tail.

Pick a row (ROW, 0-based), one response (ROW:RESPONSE), or a task id (the
dataset's id: --id-key, else id, task_id or extra_info.index when the rows
have one). --failed steps through the responses that did not pass. On a
terminal the text goes through $PAGER (less -R by default).` + configExitHelp,
		Example: `  verl-score run data.parquet -o scored.parquet --cases-out cases.jsonl
  verl-score show scored.parquet --cases cases.jsonl --failed
  verl-score show scored.parquet 12:3 --cases cases.jsonl`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErrorf("show takes SCORED and at most one ROW[:RESPONSE] or id, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.scored = args[0]
			if len(args) == 2 {
				opts.which = args[1]
			}
			return runF(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVar(
		&opts.cases,
		"cases",
		"",
		"the run's --cases-out file: each case's input, expected output, output and stderr",
	)
	f.BoolVar(&opts.failed, "failed", false, "only the responses that did not pass every case")
	f.StringVar(
		&opts.idKey,
		"id-key",
		"",
		"dotted path of the rows' task id (default: id, task_id, extra_info.task_id or extra_info.index, the first found)",
	)
	f.StringVar(&opts.dsKey, "data-source-key", "data_source", "column holding the data source")
	f.BoolVar(&opts.pager, "pager", true, "page the text on a terminal ($PAGER, else less -R)")
	return c
}

// selector turns ROW[:RESPONSE] or an id into a filter.
func selector(which string) func(*report.Response) bool {
	if which == "" {
		return func(*report.Response) bool { return true }
	}
	rowText, respText, hasResp := strings.Cut(which, ":")
	row, err1 := strconv.Atoi(rowText)
	resp, err2 := strconv.Atoi(respText)
	if err1 == nil && (!hasResp || err2 == nil) {
		return func(r *report.Response) bool { return r.Row == row && (!hasResp || r.Index == resp) }
	}
	id, idx, hasIdx := strings.Cut(which, "#")
	n, err := strconv.Atoi(idx)
	return func(r *report.Response) bool {
		return r.ID == id && (!hasIdx || (err == nil && r.Index == n))
	}
}

func runShow(_ context.Context, opts *showOptions) error {
	ro := rollout.DefaultOptions()
	ro.DataSourceKey, ro.IDKey = opts.dsKey, opts.idKey
	pick := selector(opts.which)
	rs, err := report.ReadResponses(opts.scored, opts.cases, ro, func(r *report.Response) bool {
		return pick(r) && (!opts.failed || r.Failed())
	})
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		what := "no response"
		if opts.failed {
			what = "no failing response"
		}
		if opts.which != "" {
			what += " matches " + opts.which
		}
		return fmt.Errorf("%s: %s", opts.scored, what)
	}
	out, done := pager(opts.s.Out, opts.pager)
	defer done()
	for _, r := range rs {
		if err := report.WriteText(out, r); err != nil {
			return err
		}
	}
	return nil
}

// pager pipes w through $PAGER when w is a terminal; done waits for it.
func pager(w io.Writer, on bool) (io.Writer, func()) {
	f, ok := w.(*os.File)
	if !on || !ok || !term.IsTerminal(int(f.Fd())) {
		return w, func() {}
	}
	cmdline := os.Getenv("PAGER")
	if cmdline == "" {
		cmdline = "less -R"
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil || cmd.Start() != nil {
		return w, func() {}
	}
	return in, func() {
		in.Close()
		cmd.Wait()
	}
}
