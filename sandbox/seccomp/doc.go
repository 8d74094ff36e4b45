// Package seccomp builds the system-call filter every contained step of
// the embedded sandbox runs under: Docker's default profile, as Docker
// applies it to a container that holds no capability, with verl-score's
// own refusals in front of it, assembled into classic BPF for one
// architecture. The sandbox's init (sandbox/nsinit) and the Python fork
// server's programs install the bytes Build returns; nothing here runs a
// filter.
//
// Every refused call fails with an errno (EPERM; ENOSYS for clone3, so
// that libc falls back to clone, and for the x32 ABI): a refusal never
// kills, since a program killed by the filter would read as a runtime
// error its author could not explain.
package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Rule is one entry of the filter, as an audit reads it: calls, what
// happens to them, and on which arguments.
type Rule struct {
	Names  []string
	Action string // "allow", "EPERM", "ENOSYS"
	Args   string // "" for every call; else the condition, as text
	Source string // "verl-score" or "docker"
}

// Filter is the assembled filter for one architecture.
type Filter struct {
	Arch     string // GOARCH
	ArchName string // the kernel's name of it
	Refusals int    // verl-score's refusals (Denials) in front of the profile
	Program  []byte // sock_filter records, 8 bytes each, in native byte order
	Rules    []Rule
	Allowed  int      // calls allowed, with or without a condition on arguments
	Skipped  []string // names of the profile that this architecture has no call for
	Source   string   // the profile's module and version, for doctor and provenance
	// decide is what the rules give a call, evaluated here rather than by
	// the program (the tests hold the two together).
	decide func(nr uint32, args [6]uint64) uint32
}

// Instructions is the program's length in BPF instructions.
func (f *Filter) Instructions() int { return len(f.Program) / 8 }

// Digest is the program's SHA-256, which names the filter in provenance.
func (f *Filter) Digest() string {
	sum := sha256.Sum256(f.Program)
	return hex.EncodeToString(sum[:])
}

// Summary is one line for doctor and a run's provenance.
func (f *Filter) Summary() string {
	return fmt.Sprintf("%s for a process without capabilities, and %d refusals of verl-score's; %s, %d calls allowed, "+
		"every other call EPERM, x32 and 32-bit calls refused; %d BPF instructions, sha256 %s",
		f.Source, f.Refusals, f.ArchName, f.Allowed, f.Instructions(), f.Digest()[:16])
}
