//go:build !linux

package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newImagesCmd says that the image store needs Linux, as the embedded
// sandbox does.
func newImagesCmd(Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "images",
		Short: "Pull, import, list and prune the images repository tasks run in (Linux only)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the image store needs Linux, as repository tasks do")
		},
	}
}
