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
