//go:build linux

package sandbox

import "github.com/verl-score/verl-score/sandbox/swerun"

// NewSWE is the runner of repository tasks over l's jail (sandbox/swerun).
func NewSWE(l *Local, imagesDir, storeDir string, opts swerun.Options) (*swerun.Runner, error) {
	if l == nil {
		return swerun.New(nil, imagesDir, storeDir, opts)
	}
	return swerun.New(l.j, imagesDir, storeDir, opts)
}
