package cmd

import "github.com/spf13/cobra"

// addCommands wires every subcommand into root.
func addCommands(root *cobra.Command, s Streams) {
	root.AddCommand(
		newRunCmd(s, nil),
		newConfigCmd(s),
		newServeCmd(s, nil),
		newDoctorCmd(s),
		newCheckCmd(s, nil),
		newDiffCmd(s),
		newMergeCmd(s),
		newReportCmd(s),
		newShowCmd(s, nil),
		newReplayCmd(s, nil),
		newWorkerCmd(s),
		newImagesCmd(s),
		newVersionCmd(s),
	)
}
