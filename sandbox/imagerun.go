//go:build linux

package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/verl-score/verl-score/sandbox/jail"
)

// An ImageStep is one command run in a container image's root (a
// repository task's environment): its own writable layer over the image,
// its own namespaces and cgroup, no network, locked down as every step is.
type ImageStep struct {
	Root    jail.ImageRoot
	Argv    []string // argv[0] an absolute path in the image
	Dir     string
	Env     []string
	Files   map[string][]byte // written at these absolute paths before the start
	Fetch   []string          // absolute paths read back after the end
	Stdin   []byte
	Timeout time.Duration
	// MemoryMB bounds the memory of all its processes together, the
	// writable layer's pages included (a tmpfs); Pids their number.
	MemoryMB, Pids int
	// MergeStderr sends stderr to stdout, one stream in order (a test log).
	MergeStderr bool
	// MaxOutput is what is kept of the output and each fetched file (0:
	// the sandbox's own bound).
	MaxOutput int
}

// RunInImage runs an image step to its end or its timeout. An error means
// the sandbox failed, not the command.
func (l *Local) RunInImage(ctx context.Context, st ImageStep) (*jail.Result, error) {
	if !l.j.Iso.Contained || l.j.View == nil {
		return nil, errors.New("running in an image needs the contained sandbox (namespaces and a filesystem view): " +
			"see verl-score doctor")
	}
	root := st.Root
	spec := jail.Spec{
		Argv:        st.Argv,
		Dir:         st.Dir,
		Env:         st.Env,
		Stdin:       st.Stdin,
		Timeout:     st.Timeout,
		Image:       &root,
		MergeStderr: st.MergeStderr,
		MaxOutput:   st.MaxOutput,
		Lim: jail.Limits{CPUSec: jail.CPUSeconds(st.Timeout), Nproc: st.Pids,
			GroupMB: st.MemoryMB},
		View: jail.ViewStep{Abs: st.Files, Fetch: st.Fetch},
	}
	return l.j.Run(ctx, spec)
}
