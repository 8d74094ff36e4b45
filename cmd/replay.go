package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/text"
	"github.com/verl-score/verl-score/toolcall"
)

type replayOptions struct {
	dumps   []string
	tool    toolcall.Options
	jsonOut string
	loader  *config.Loader
	s       Streams
}

// newReplayCmd builds `verl-score replay`; runF, when not nil, replaces
// runReplay (tests stop there).
func newReplayCmd(s Streams, runF func(context.Context, *replayOptions) error) *cobra.Command {
	if runF == nil {
		runF = runReplay
	}
	opts := &replayOptions{s: s}
	c := &cobra.Command{
		Use:   "replay DUMP...",
		Short: "Run the code_interpreter calls of multi-turn rollouts again and compare the observations",
		Long: `Replay reads the tool calls of multi-turn rollout dumps (the JSONL files
of verl's trainer.rollout_data_dir, or such a directory) and runs each
code_interpreter call again the way verl's tool does: the call's code with
no stdin, its timeout (else --tool-timeout) for compile and run, and
--tool-memory-mb. The new observation (stdout then stderr when the run
finished, "no stdout here" otherwise) is compared with the one recorded in
the dump. Each call is reported by file, line, step and place in its
trajectory: identical, differs (with both texts' first differing line) or
not replayable (why). Calls are read in the formats verl's tool parsers
read: Hermes (<tool_call> and <tool_response>, as Qwen's chat template
writes them) and gpt-oss's harmony (to=functions.NAME ... <|call|>).

Observations are training data: run this after a change of sandbox image
or settings, and it exits 3 when a call's observation moved.

Exit codes:
  0  every replayable call gave its recorded observation
  1  could not run (a dump unreadable, no sandbox)
  2  bad flags or arguments
  3  observations moved`,
		Example: `  verl-score replay rollouts/12.jsonl --sandbox-url http://sandbox:8080/run_code
  verl-score replay rollouts/ --tool-memory-mb 512 --json moved.jsonl`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("replay takes one or more rollout dumps (files or directories)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.dumps = args
			if opts.tool.Timeout <= 0 || opts.tool.MemoryMB <= 0 {
				return usageErrorf("--tool-timeout and --tool-memory-mb must be positive")
			}
			return runF(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.tool.Name, "tool", toolcall.DefaultName, "name of the code tool whose calls are replayed")
	f.Float64Var(
		&opts.tool.Timeout,
		"tool-timeout",
		toolcall.DefaultTimeout,
		"the tool's timeout in seconds, for calls that give none (verl's default_timeout)",
	)
	f.IntVar(
		&opts.tool.MemoryMB,
		"tool-memory-mb",
		toolcall.DefaultMemoryMB,
		"the tool's memory limit in MB (verl's memory_limit_mb)",
	)
	f.StringVar(
		&opts.tool.Language,
		"tool-language",
		toolcall.DefaultLanguage,
		"the tool's language, for calls that name none (verl's default_language)",
	)
	f.StringVar(&opts.jsonOut, "json", "", "also write every call's result to this file, one JSON object per line")
	opts.loader = config.AddFlags(f, config.Replay)
	return c
}

func runReplay(ctx context.Context, opts *replayOptions) error {
	var files []string
	for _, d := range opts.dumps {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			fs, _, err := rollout.DumpFiles(d)
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			if len(fs) == 0 {
				return fmt.Errorf("%s: no <step>.jsonl files", d)
			}
			files = append(files, fs...)
			continue
		}
		files = append(files, d)
	}
	var trajs []toolcall.Trajectory
	calls := 0
	for _, f := range files {
		ts, err := toolcall.ReadDump(f)
		if err != nil {
			return err
		}
		for _, t := range ts {
			calls += len(t.Calls)
		}
		trajs = append(trajs, ts...)
	}
	if calls == 0 {
		trajectories := fmt.Sprintf("%d trajectories", len(trajs))
		if len(trajs) == 1 {
			trajectories = "1 trajectory"
		}
		return fmt.Errorf(
			"%s in %s, and no tool call in them "+
				"(replay reads Hermes <tool_call>…</tool_call> and harmony to=functions.NAME … <|call|>)",
			trajectories,
			text.Count(len(files), "file"),
		)
	}
	cfg, err := loadConfig(opts.loader)
	if err != nil {
		return err
	}
	if len(cfg.SandboxURL) > 0 {
		if err := probeEndpoints(cfg, opts.s.ErrOut); err != nil {
			return err
		}
	}
	client, desc, closeClient, err := sandboxClient(cfg, opts.s.ErrOut)
	if err != nil {
		return err
	}
	defer closeClient()
	start := time.Now()
	results, err := toolcall.Replay(ctx, client, trajs, opts.tool, cfg.Engine.MaxConcurrent, nil)
	if err != nil {
		return err
	}
	if err := toolcall.WriteText(opts.s.Out, results); err != nil {
		return err
	}
	fmt.Fprintf(
		opts.s.ErrOut,
		"replayed %d calls of %d trajectories with %s in %.1f s\n",
		calls,
		len(trajs),
		desc,
		time.Since(start).Seconds(),
	)
	if opts.jsonOut != "" {
		if err := writeReplayJSON(opts.jsonOut, results); err != nil {
			return err
		}
	}
	if n := toolcall.Tally(results)[toolcall.Differs]; n > 0 {
		return &ExitError{Code: ExitRegression, Err: fmt.Errorf("%d of %d tool observations moved", n, calls)}
	}
	return nil
}

// writeReplayJSON writes the results, one object per line, atomically.
func writeReplayJSON(path string, results []toolcall.Result) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			f.Abort()
			return err
		}
	}
	return f.Commit()
}
