package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
)

func newConfigCmd(s Streams) *cobra.Command {
	var asJSON bool
	var loader *config.Loader
	c := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value comes from",
		Long: `Print every setting with its value and its source: a flag, an environment
variable (VERL_SCORE_<KEY>, or SANDBOX_FUSION_URL for sandbox_url), the
config file (--config, or ./verl-score.yaml when present), or the default.
The same keys are used in config files.` + configExitHelp,
		Example: `  VERL_SCORE_MAX_CONCURRENT=128 verl-score config --config verl-score.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := loadConfig(loader); err != nil {
				return err
			}
			entries := loader.Effective()
			if asJSON {
				return writeJSON(s.Out, entries)
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%v\t%s\n", e.Key, e.Value, e.Source)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	loader = config.AddFlags(c.Flags(), config.Run|config.Serve)
	return c
}
