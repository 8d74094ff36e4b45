// Package swerun runs rollouts of repository tasks in the embedded
// sandbox: the instance's image found and unpacked once (sandbox/image),
// the patch applied and the evaluation script run in one step over the
// image's root (jail.ImageRoot), and the outcome judged by the rules in
// swe.
package swerun

import (
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/verl-score/verl-score/sandbox/image"

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
	// Pull says when an image is fetched from its registry: PullMissing,
	// PullAlways or PullNever.
	Pull string
	// Auth are registry credentials by host (--registry-auth), tried before
	// Docker's configuration.
	Auth map[string]authn.Authenticator
	// Transport carries registry requests; nil is the default.
	Transport http.RoundTripper
	// StoreMaxGB bounds the image store: past it, the least recently used
	// images that no process holds are evicted. 0: no bound.
	StoreMaxGB float64
	// PrefetchImages is how many images of the rows ahead are readied
	// (pulled, unpacked) at once in the background; 0: none.
	PrefetchImages int
	// PrefetchMB bounds the images readied ahead and not yet used, in MB
	// unpacked: past it, prefetching waits for rollouts to use them.
	PrefetchMB int
}

// Used is an image a run used: the name rows gave, where it came from, and
// what it is (the provenance records it).
type Used struct {
	Ref string `json:"ref"`
	// Source is the --images layout or archive, the path a row named, or
	// "registry" (pulled in this run) or "store" (pulled before).
	Source string `json:"source"`
	// Digest is the manifest's digest for a pulled image; ID the store's
	// (the configuration's digest).
	Digest string `json:"digest,omitempty"`
	ID     string `json:"id"`
	// Pull is this run's pull of it, if it pulled it.
	Pull *image.Pulled `json:"pull,omitempty"`
}

// When images are pulled (Options.Pull).
const (
	// PullMissing pulls an image found neither in --images nor in the store
	// (pulled before); one found is used with no request to its registry.
	PullMissing = "missing"
	// PullAlways resolves each reference at its registry once per run, and
	// fetches what changed.
	PullAlways = "always"
	// PullNever finds images in --images and the store only.
	PullNever = "never"
)

// DefaultOptions: SWE-bench's timeout; 2 GiB of writes; 8 GiB of
// memory, which holds a test suite's processes (Django's and sympy's run in
// one or two) beside a full disk cap; 16 MiB of log.
var DefaultOptions = Options{Rules: swe.DefaultRules, Timeout: 1800 * time.Second, DiskMB: 2048,
	MemoryMB: 8192, MaxLog: 16 << 20, Pull: PullMissing, PrefetchImages: 2, PrefetchMB: 16384}

// DefaultImageStore is where unpacked images are kept unless
// --image-store says otherwise: the user's cache directory.
func DefaultImageStore() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "verl-score", "images")
	}
	return filepath.Join(os.TempDir(), "verl-score-images")
}
