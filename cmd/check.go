package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/check"
	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/progress"
	"github.com/verl-score/verl-score/report"
	"github.com/verl-score/verl-score/rollout"
)

// checkExitHelp is the EXIT STATUS block of check and diff.
const checkExitHelp = `

EXIT STATUS
  0  consistent: no reward moved beyond --tolerance, or at most a
     --max-mismatch fraction of them did (flaky responses never count)
  1  could not run: I/O, configuration, an unusable sandbox, no reference
     score
  2  usage error
  3  regression: more than --max-mismatch of the responses moved beyond
     --tolerance (regressed, improved or missing)
  4  interrupted (check; run it again: a check keeps no journal)
`

// reportOptions are the report flags shared by check and diff.
type reportOptions struct {
	tolerance   float64
	maxMismatch float64
	junit       string
	markdown    string
	html        string
	json        bool
	show        int
}

func (o *reportOptions) addFlags(f *pflag.FlagSet) {
	f.Float64Var(
		&o.tolerance,
		"tolerance",
		check.DefaultTolerance,
		"absolute difference between two rewards still counted as equal",
	)
	f.Float64Var(
		&o.maxMismatch,
		"max-mismatch",
		0,
		"fraction of responses (0..1) allowed to move before the exit code is 3 (default 0: any move fails)",
	)
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report (one test case per response) to this file")
	f.StringVar(
		&o.markdown,
		"markdown",
		"",
		"also write a Markdown report to this file (- for stdout), e.g. $GITHUB_STEP_SUMMARY",
	)
	f.StringVar(
		&o.html,
		"html",
		"",
		"also write the report as one self-contained HTML page (transition heat map, mismatched responses with their "+
			"differing cases) to this file",
	)
	f.BoolVar(&o.json, "json", false, "print the report as JSON on stdout instead of text")
	f.IntVar(&o.show, "show", 20, "worst mismatches and flaky responses listed in the text and Markdown reports")
}

func (o *reportOptions) validate() error {
	switch {
	case o.tolerance < 0:
		return usageErrorf("--tolerance must be >= 0, got %g", o.tolerance)
	case o.maxMismatch < 0 || o.maxMismatch > 1:
		return usageErrorf("--max-mismatch is a fraction between 0 and 1, got %g", o.maxMismatch)
	case o.json && o.markdown == "-":
		return usageErrorf("--json and --markdown - both write to stdout; give --markdown a file")
	case o.show < 0:
		return usageErrorf("--show must be >= 0, got %d", o.show)
	}
	return nil
}

// emit writes the report in the forms asked for and turns a regression
// into exit code 3.
func (o *reportOptions) emit(s Streams, rep *check.Report) error {
	if o.junit != "" {
		if err := writeFileAtomic(o.junit, rep.WriteJUnit); err != nil {
			return fmt.Errorf("junit report: %w", err)
		}
	}
	if o.html != "" {
		if err := writeFileAtomic(o.html, func(w io.Writer) error { return report.WriteCheckHTML(w, rep) }); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
	}
	if o.markdown == "-" {
		if err := rep.WriteMarkdown(s.Out, o.show); err != nil {
			return err
		}
	} else if o.markdown != "" {
		if err := writeFileAtomic(o.markdown, func(w io.Writer) error { return rep.WriteMarkdown(w, o.show) }); err != nil {
			return fmt.Errorf("markdown report: %w", err)
		}
	}
	switch {
	case o.json:
		if err := rep.WriteJSON(s.Out); err != nil {
			return err
		}
	case o.markdown != "-":
		if err := rep.WriteText(s.Out, o.show); err != nil {
			return err
		}
	}
	if rep.Regression {
		return &ExitError{Code: ExitRegression, Err: errors.New(rep.Summary())}
	}
	return nil
}

// writeFileAtomic writes path through a temporary file renamed into place.
// A path that is not a regular file (a pipe, /dev/stdout) is written
// directly.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	if err := write(af); err != nil {
		af.Abort()
		return err
	}
	return af.Commit()
}

type checkOptions struct {
	input    string
	baseline string
	reruns   int
	quiet    bool
	idKey    string
	report   reportOptions
	loader   *config.Loader
	streams  Streams
}

// newCheckCmd builds the command; runF, when not nil, is called with the parsed
// options in place of runCheck (tests stop there).
func newCheckCmd(s Streams, runF func(context.Context, *checkOptions) error) *cobra.Command {
	if runF == nil {
		runF = runCheck
	}
	opts := &checkOptions{streams: s}
	c := &cobra.Command{
		Use:   "check INPUT",
		Short: "Re-score INPUT and fail when rewards moved (for CI)",
		Long: `Re-score every response of INPUT and compare each new reward with a
reference: the score field of a rollout dump (the reward the trainer
computed), a score column of a dataset (ScoreKey "score"; a list aligned
with the responses, or a number for a single response), or with
--baseline a previous output of 'verl-score run' on the same input
(matched by row and response index; its case verdicts are compared too).

Each response is:
  equal       |new - reference| <= --tolerance
  regressed   new < reference beyond the tolerance
  improved    new > reference beyond the tolerance. An improvement moves
              the reward too, so it counts as a mismatch for the exit code,
              but it is reported apart.
  flaky       a mismatch whose new verdicts included an API/sandbox error
              (-1) or a timeout (-3), and whose verdicts changed when it was
              scored again (--reruns times at most); or, with --baseline, a
              mismatch where every changed case was -1 or -3 in the
              baseline. Reported apart, never counted. A mismatch whose
              verdicts repeat on every rerun is regressed or improved.
  missing     (--baseline) a response present on one side only; a mismatch
  no reference  a null or absent reference score: not compared

The report gives the counts, per data source, the worst mismatches (row,
response, file:line, reference, new, the case verdicts) and the flaky
responses; --junit and --markdown write it for CI systems and pull
requests, --json prints it as JSON.

Scoring settings are those of 'run' (same flags, environment and config
file); keep them as they were when the reference was computed.` + checkExitHelp,
		Example: `  verl-score check rollouts/                       # a dump directory against its score fields
  verl-score check data.parquet --baseline main.scored.parquet --junit report.xml
  verl-score check rollouts/ --max-mismatch 0.01 --reruns 3 --markdown "$GITHUB_STEP_SUMMARY"`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("check takes one INPUT, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.input = args[0]
			return runF(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVar(
		&opts.baseline,
		"baseline",
		"",
		"compare with this previous output of run (parquet or JSONL) instead of INPUT's score field",
	)
	f.IntVar(
		&opts.reruns,
		"reruns",
		2,
		"times a mismatch with -1 or -3 verdicts is scored again to tell flaky from reproducible",
	)
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress display")
	f.StringVar(
		&opts.idKey,
		"id-key",
		"",
		"dotted path of the rows' task id that names responses in the reports (default: id, task_id, extra_info.task_id or "+
			"extra_info.index, the first found; else row:response)",
	)
	opts.report.addFlags(f)
	opts.loader = config.AddFlags(f, config.Check)
	return c
}

// runCheck is the check command.
func runCheck(ctx context.Context, opts *checkOptions) error {
	if err := opts.report.validate(); err != nil {
		return err
	}
	if opts.reruns < 0 {
		return usageErrorf("--reruns must be >= 0, got %d", opts.reruns)
	}
	errOut := opts.streams.ErrOut
	sc, err := setupScoring(opts.loader, errOut)
	if err != nil {
		return err
	}
	defer sc.close()
	if opts.input != "-" {
		if _, err := os.Stat(opts.input); err != nil {
			return fmt.Errorf("cannot read input %s: %w", opts.input, errors.Unwrap(err))
		}
	}
	if err := sc.probe(); err != nil {
		return err
	}
	if !opts.quiet {
		fmt.Fprintf(errOut, "verl-score: checking %s with the %s\n", opts.input, sc.desc)
	}
	reporter := progress.Start(errOut, progressMode(opts.quiet), sc.eng, nil, 5*time.Second)
	unwatch := stopOnInterrupt(opts.streams, sc.eng)
	rep, err := check.Check(ctx, sc.eng, check.Options{
		Input: opts.input, Stdin: opts.streams.In, Baseline: opts.baseline,
		Reader: withIDKey(sc.reader, opts.idKey), DataSource: sc.cfg.Job.DataSource,
		Tolerance: opts.report.tolerance, MaxMismatch: opts.report.maxMismatch, Reruns: opts.reruns,
		KeepItems: opts.report.junit != "",
	})
	unwatch()
	reporter.Stop()
	if errors.Is(err, check.ErrInterrupted) {
		return &ExitError{Code: ExitInterrupted, Err: err}
	}
	if err != nil {
		return err
	}
	return opts.report.emit(opts.streams, rep)
}

// withIDKey is ro naming rows by the id at key ("" keeps the defaults).
func withIDKey(ro rollout.Options, key string) rollout.Options {
	ro.IDKey = key
	return ro
}
