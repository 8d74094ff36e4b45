//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"
)

// prctl options and the capability ABI (the same on every architecture).
const (
	prCapbsetDrop       = 24
	prSetNoNewPrivs     = 38
	prCapAmbient        = 47
	prCapAmbientClear   = 4
	prSetSeccomp        = 22
	seccompModeFilter   = 2
	linuxCapabilityV3   = 0x20080522
	maxCapabilityNumber = 63
)

// lockDown takes from this thread, and so from what it starts, every
// capability it could regain: the bounding set (what an exec may grant),
// the ambient and inheritable sets. It keeps its own effective set, which
// starting the program as its user needs. Then no_new_privs (no set-user
// program, no file capability, raises what it may do) and the seccomp
// filter, if any. Each is per thread: the caller runs on the thread that
// forks the program.
func lockDown(filter string) error {
	for c := uintptr(0); c <= maxCapabilityNumber; c++ {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapbsetDrop, c, 0, 0, 0, 0); e == syscall.EINVAL {
			break // past the kernel's last capability
		} else if e != 0 {
			return e
		}
	}
	// Before Linux 4.3 there is no ambient set, and nothing to clear.
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0, 0, 0, 0); e != 0 &&
		e != syscall.EINVAL {
		return e
	}
	hdr := struct {
		version uint32
		pid     int32
	}{linuxCapabilityV3, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	// The pointers become uintptr in the calls themselves (unsafe.Pointer's
	// rule 4), so lines are broken inside them.
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return e
	}
	if filter == "" {
		return nil
	}
	if len(filter)%8 != 0 || len(filter)/8 > 4096 {
		return syscall.EINVAL
	}
	// struct sock_fprog: the count, then a pointer to the records.
	prog := struct {
		n      uint16
		filter unsafe.Pointer
	}{uint16(len(filter) / 8), unsafe.Pointer(unsafe.StringData(filter))}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter,
		uintptr(unsafe.Pointer(&prog)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
