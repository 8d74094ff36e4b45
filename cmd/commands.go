package cmd

import "github.com/spf13/cobra"

// addCommands wires every subcommand into root.
func addCommands(root *cobra.Command, s Streams) {
	root.AddCommand(newRunCmd(s), newConfigCmd(s), newServeCmd(s), newDoctorCmd(s), newCheckCmd(s), newDiffCmd(s), newMergeCmd(s), newReportCmd(s), newWorkerCmd(s), newVersionCmd(s))
}
