// Package swerun runs rollouts of repository tasks in the embedded
// sandbox: the instance's image found and unpacked once (sandbox/image),
// the patch applied and the evaluation script run in one step over the
// image's root (jail.ImageRoot), and the outcome judged by the rules in
// swe.
package swerun

import (
	"os"
	"path/filepath"
	"time"

	"github.com/verl-score/verl-score/swe"
)

// Options are how rollouts of repository tasks run.
type Options struct {
	Rules swe.Rules
	// Timeout bounds a rollout: the apply and the tests (SWE-bench's
	// default, 1800 s).
	Timeout time.Duration
	// DiskMB caps what a rollout writes over its image.
	DiskMB int
	// MemoryMB bounds a rollout's processes together, its written files
	// included (they are in memory).
	MemoryMB int
	// MaxLog is how much of the test log is kept (and parsed).
	MaxLog int
}

// DefaultOptions: SWE-bench's timeout; 2 GiB of writes; 8 GiB of
// memory, which holds a test suite's processes (Django's and sympy's run in
// one or two) beside a full disk cap; 16 MiB of log.
var DefaultOptions = Options{Rules: swe.DefaultRules, Timeout: 1800 * time.Second, DiskMB: 2048,
	MemoryMB: 8192, MaxLog: 16 << 20}

// DefaultImageStore is where unpacked images are kept unless
// --image-store says otherwise: the user's cache directory.
func DefaultImageStore() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "verl-score", "images")
	}
	return filepath.Join(os.TempDir(), "verl-score-images")
}
