package image

// IDBase is where an image's user and group ids start on the host: an
// image's uid u is written as IDBase+u, and a rollout's user namespace maps
// its 0..IDRange-1 onto IDBase.. (so root in a rollout owns what the
// image's root owns, and no host user's file). Below the embedded
// sandbox's per-step users (0x40000000 and up).
const (
	IDBase  = 0x30000000
	IDRange = 65536
	// nobody is where an id beyond the range goes.
	nobody = 65534
)
