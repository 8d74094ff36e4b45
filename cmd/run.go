package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/job"
	"github.com/verl-score/verl-score/progress"
	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/sandbox/swerun"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/version"
)

type runOptions struct {
	input    string
	output   string
	casesOut string
	summary  string
	json     bool
	resume   bool
	quiet    bool
	shard    string
	shardAt  *rollout.ShardSpec
	loader   *config.Loader
	streams  Streams
	// resumeCmd is the command line that continues this run.
	resumeCmd string
}

// newRunCmd builds the command; runF, when not nil, is called with the parsed
// options in place of runScore (tests stop there).
func newRunCmd(s Streams, runF func(context.Context, *runOptions) error) *cobra.Command {
	if runF == nil {
		runF = runScore
	}
	opts := &runOptions{streams: s}
	c := &cobra.Command{
		Use:   "run INPUT",
		Short: "Score every response of a dataset, JSONL file or rollout dump",
		Long: `Score every response of INPUT and write it back with four added columns:
reward, case_results, case_status and reward_error.

INPUT is a verl parquet dataset, a JSONL file (one row per line), a rollout
dump directory (trainer.rollout_data_dir: <step>.jsonl files), a single
dump file, or - for JSONL on stdin.

Without --sandbox-url (or SANDBOX_FUSION_URL) the code runs in the embedded
sandbox on this machine.

An interrupted run (Ctrl-C, SIGTERM) finishes the cases in flight (a
second signal abandons them), writes the finished rows and a journal, and
prints the command that resumes it.` + exitHelp,
		Example: `  verl-score run data.parquet -o scored.parquet
  verl-score run rollouts/ --data-source codecontests -o rescored.jsonl --summary summary.json
  SANDBOX_FUSION_URL=http://sandbox:8080/run_code verl-score run data.parquet --max-concurrent 128
  verl-score run data.parquet --language auto --mode all --cases-out cases.jsonl`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("run takes one INPUT, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.input = args[0]
			if opts.shard != "" {
				s, err := rollout.ParseShard(opts.shard)
				if err != nil {
					return &UsageError{Err: fmt.Errorf("--shard: %w", err)}
				}
				opts.shardAt = &s
				if opts.output == "" {
					opts.output = job.ShardOutput(opts.input, s)
				}
			}
			opts.resumeCmd = resumeCommand(c, opts)
			return runF(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVarP(
		&opts.output,
		"output",
		"o",
		"",
		"output file: .parquet, or .jsonl (.json is taken as JSON lines too); a directory (DIR/) gets INPUT's name with "+
			".scored before the extension, as the default does next to INPUT; - writes JSONL to stdout",
	)
	f.StringVar(
		&opts.casesOut,
		"cases-out",
		"",
		"also write each case with its metadata: one JSON line per case, or with a .parquet name a parquet row per case",
	)
	f.StringVar(&opts.summary, "summary", "", "also write the summary as JSON to this file")
	f.BoolVar(
		&opts.json,
		"json",
		false,
		"print the summary as JSON instead of a table, on stdout (on stderr with -o -, whose rows take stdout)",
	)
	f.BoolVar(&opts.resume, "resume", false, "continue an interrupted run from its journal")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress display")
	f.StringVar(
		&opts.shard,
		"shard",
		"",
		"score only shard K/N of INPUT's rows (0 <= K < N; contiguous, prompts kept whole) and leave OUTPUT.shard for "+
			"'verl-score merge'",
	)
	opts.loader = config.AddFlags(f, config.Run)
	return c
}

// runScore is the run command: it scores opts.input into its output.
func runScore(ctx context.Context, opts *runOptions) error {
	errOut := opts.streams.ErrOut
	sc, err := setupScoring(opts.loader, errOut)
	if err != nil {
		return err
	}
	defer sc.close()
	cfg := sc.cfg
	output := job.ResolveOutput(opts.input, opts.output)
	if opts.input != "-" {
		if _, err := os.Stat(opts.input); err != nil {
			return fmt.Errorf("cannot read input %s: %w", opts.input, errors.Unwrap(err))
		}
	}
	if err := sc.probe(); err != nil {
		return err
	}
	if !opts.quiet {
		fmt.Fprintf(errOut, "verl-score: scoring %s into %s with the %s\n", opts.input, output, sc.desc)
	}

	// With the data on stdout, the summary goes to stderr.
	sumOut := opts.streams.Out
	if output == "-" {
		sumOut = errOut
	}
	rows := progress.NewRows()
	jo := cfg.Job // the settings; then what this command adds
	jo.Input, jo.Stdin, jo.Output, jo.Stdout = opts.input, opts.streams.In, output, opts.streams.Out
	jo.CasesOut, jo.Summary, jo.Resume, jo.Shard = opts.casesOut, opts.summary, opts.resume, opts.shardAt
	jo.Reader, jo.Warn, jo.Progress, jo.Endpoints = sc.reader, sc.warn, rows, sc.endpoints
	jo.Provenance, jo.Toolchains = provenance(opts.loader, sc)
	if sc.swe != nil {
		jo.Images = func() []results.Image { return imagesUsed(sc.swe) }
	}
	reporter := progress.Start(errOut, progressMode(opts.quiet), sc.eng, rows, 5*time.Second)
	if sc.swe != nil && !opts.quiet {
		watchUnpacks(sc.swe, reporter, rows)
	}
	unwatch := stopOnInterrupt(opts.streams, sc.eng)
	started := time.Now()
	sum, err := job.Run(ctx, sc.eng, jo)
	unwatch()
	if sc.swe != nil && !opts.quiet && len(sc.swe.Used()) > 0 {
		fmt.Fprintf(errOut, "verl-score: the sandbox's slots were idle %.1f slot-s waiting for images (found, "+
			"pulled, unpacked; the first ready after %.1f s) in a %.1f s run\n", sc.swe.IdleWaiting().Seconds(),
			sc.swe.FirstReady().Seconds(), time.Since(started).Seconds())
	}
	reporter.Stop()
	if sum != nil && (err == nil || errors.Is(err, job.ErrInterrupted)) {
		if opts.json {
			if jerr := writeJSON(sumOut, sum); jerr != nil {
				return jerr
			}
		} else {
			sum.WriteTable(sumOut)
		}
	}
	if errors.Is(err, job.ErrInterrupted) {
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("%w\nresume with: %s", err, opts.resumeCmd)}
	}
	if err != nil {
		return err
	}
	for _, w := range sum.Warnings() {
		sc.warn(w)
	}
	if err := sum.CheckInfra(cfg.MaxInfraErrors); err != nil {
		return fmt.Errorf(
			"%w (sandbox: %s); the output %s holds the rows, with these failures as verdict -1",
			err,
			sc.desc,
			output,
		)
	}
	if err := sum.CheckInput(cfg.MaxInputErrors); err != nil {
		return fmt.Errorf("%w; the output %s holds the rows, each with its reward_error", err, output)
	}
	if frac, sent := sum.InfraFraction(); frac > 0 {
		fmt.Fprintf(
			errOut,
			"verl-score: warning: %d of %d responses (%.1f%%) met an infrastructure error; their failed cases are -1, not the "+
				"code's fault\n",
			sum.Overall.InfraResponses,
			sent,
			100*frac,
		)
	}
	return nil
}

// progressMode is the display of a command with or without --quiet.
func progressMode(quiet bool) progress.Mode {
	if quiet {
		return progress.Off
	}
	return progress.Auto
}

// resumeCommand is the command line that continues an interrupted run.
func resumeCommand(c *cobra.Command, opts *runOptions) string {
	parts := []string{"verl-score", "run", shellQuote(opts.input)}
	c.Flags().Visit(func(f *pflagFlag) {
		if f.Name == "resume" {
			return
		}
		// A list flag prints as [a,b]; it is given back one value at a time.
		if sv, ok := f.Value.(pflagSliceValue); ok {
			for _, v := range sv.GetSlice() {
				parts = append(parts, "--"+f.Name+"="+shellQuote(v))
			}
			return
		}
		parts = append(parts, "--"+f.Name+"="+shellQuote(f.Value.String()))
	})
	if !c.Flags().Lookup("output").Changed {
		parts = append(parts, "-o", shellQuote(job.ResolveOutput(opts.input, opts.output)))
	}
	parts = append(parts, "--resume")
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '=' || r == ',' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// provenance is how this run's outputs are made: the build, the time, the
// host, every setting (redacted) with its source, and the sandbox; for the
// embedded sandbox, a function giving the toolchains of the languages used.
func provenance(loader *config.Loader, sc *scoring) (*results.Provenance, func([]string) []results.Toolchain) {
	host, _ := os.Hostname()
	p := &results.Provenance{Tool: "verl-score", Version: version.Number(), Commit: version.Revision(),
		Started: time.Now().UTC().Format(time.RFC3339), Host: host, Sandbox: sc.desc, Settings: map[string]results.Setting{}}
	for _, e := range loader.Effective() {
		p.Settings[e.Key] = results.Setting{Value: e.Value, Source: e.Source}
	}
	if len(sc.cfg.SandboxURL) > 0 {
		return p, nil
	}
	return p, func(langs []string) []results.Toolchain {
		var out []results.Toolchain
		for _, t := range toolchain.ToolchainsOf(langs) {
			out = append(out, results.Toolchain{Language: t.Language, Program: t.Program, Path: t.Path, Version: t.Version})
		}
		return out
	}
}

// watchUnpacks shows an image's pull and unpack, the long first steps of
// a repository task's first rollout: a line as each starts and ends, and
// its bytes so far beside the run's progress.
func watchUnpacks(r *swerun.Runner, reporter *progress.Reporter, rows *progress.Rows) {
	r.Notify = func(msg string) { reporter.Println("verl-score: " + msg) }
	task := func(what string) func(string) (func(int64), func()) {
		return func(ref string) (func(int64), func()) {
			t := rows.Tasks.Begin(what + " " + ref)
			return t.Add, func() { rows.Tasks.End(t) }
		}
	}
	r.Unpacking, r.Pulling = task("unpacking image"), task("pulling image")
}

// imagesUsed are the images a run's repository tasks used, for its
// provenance.
func imagesUsed(r *swerun.Runner) []results.Image {
	var out []results.Image
	for _, u := range r.Used() {
		im := results.Image{Ref: u.Ref, Source: u.Source, Digest: u.Digest, ID: u.ID}
		if p := u.Pull; p != nil {
			im.Bytes, im.Fetched, im.Layers, im.Shared = p.Bytes, p.Fetched, p.Layers, p.Shared
		}
		out = append(out, im)
	}
	return out
}
