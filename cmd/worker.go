package cmd

import (
	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/version"
	"github.com/verl-score/verl-score/worker"
)

func newWorkerCmd(s Streams) *cobra.Command {
	var loader *config.Loader
	c := &cobra.Command{
		Use:   "worker",
		Short: "Score reward calls read from stdin as JSON lines (the Python package's back end)",
		Long: `worker keeps one engine (and one embedded sandbox, or one set of sandbox
connections) for many reward calls: it reads one JSON request per line on
stdin and writes one JSON result per line on stdout, in the order of the
requests, as soon as each is done. The Python package verl_score starts one
worker per Python process and sends it every compute_score call.

Its first line says it is ready:
  {"ready": true, "version": "0.1.0", "sandbox": "embedded sandbox (2 at once; isolation auto (…))"}
A request (id is any JSON value, handed back; language is optional):
  {"id": 1, "data_source": "taco", "solution_str": "...", "ground_truth": "{\"inputs\": ...}"}
Its result:
  {"id": 1, "score": 1, "verdicts": [1, 1], "statuses": ["success", "success"],
   "error": "", "language": "python", "continuous": true, "infra": false}

verdicts are verl's codes: 1 True, 0 False, -1 API or sandbox error, -2
runtime error, -3 timeout, -4 compile error. A line that is not a request
gets a result with score 0 and the reason in "error"; empty lines are
skipped. The worker exits when stdin ends, after the last result. Warnings
go to stderr.` + configExitHelp,
		Example: `  printf '%s\n' '{"id": 1, "data_source": "taco", "solution_str": "` + "```python\\nprint(int(input())*2)\\n```" + `", "ground_truth": {"inputs": ["2\n"], "outputs": ["4\n"]}}' | verl-score worker`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			sc, err := setupScoring(loader, s.ErrOut)
			if err != nil {
				return err
			}
			defer sc.close()
			return worker.Serve(c.Context(), sc.eng, s.In, s.Out, worker.Ready{Version: version.Number(), Sandbox: sc.desc})
		},
	}
	loader = config.AddFlags(c.Flags(), config.Worker)
	return c
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the revision it was built from and the Go toolchain",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, args []string) {
			c.Println(version.String())
		},
	}
}
