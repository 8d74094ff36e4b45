// Package version says which build of verl-score this is.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at link time by
// scripts/build-wheels.sh (-ldflags "-X .../version.Version=0.1.0"). A
// plain `go build` leaves it empty, and the module's version from the
// build information stands in.
var Version string

// Commit is the VCS revision, set at link time by the same script, for
// builds where Go records none (-buildvcs=false, a tree without .git).
var Commit string

// Number returns the release version: Version when the build set it, else
// the main module's version ("(devel)" for a build from a checkout).
func Number() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Revision returns the VCS revision the binary was built from, with
// "-dirty" when the work tree had changes, or "" when the build did not
// record one.
func Revision() string {
	if Commit != "" {
		return short(Commit)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	rev = short(rev)
	if rev != "" && modified == "true" {
		rev += "-dirty"
	}
	return rev
}

// String is the one-line description `verl-score version` prints:
// "verl-score 0.1.0 (revision 1a2b3c4d5e6f, go1.26.8 linux/amd64)".
func String() string {
	rev := Revision()
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf(
		"verl-score %s (revision %s, %s %s/%s)",
		Number(),
		rev,
		runtime.Version(),
		runtime.GOOS,
		runtime.GOARCH,
	)
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
