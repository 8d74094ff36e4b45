//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"
)

// A run's PID 1 needs only to wait: what the program leaves behind stays
// in its namespace until the namespace ends with it. /bin/sleep would do,
// but its start (the dynamic loader, libc, about 57 page faults) costs
// five times this program's: 129 bytes of x86-64 that call pause() for
// ever, run from a memfd, which no run sees. Elsewhere it is /bin/sleep.

// reaperName is the reaper's argv[0].
const reaperName = "./.verl-score-reaper"

// tinyReaper is the reaper's ELF image (x86-64).
func tinyReaper() []byte {
	code := []byte{0xB8, 34, 0, 0, 0, 0x0F, 0x05, 0xEB, 0xF7} // mov eax, SYS_pause; syscall; jmp back
	const base, headers = 0x400000, 64 + 56
	size := uint64(headers + len(code))
	var b []byte
	le := func(v uint64, n int) {
		for i := 0; i < n; i++ {
			b = append(b, byte(v>>(8*i)))
		}
	}
	// The ELF header: 64-bit, little-endian, an executable for x86-64.
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	le(2, 2)            // e_type: ET_EXEC
	le(0x3E, 2)         // e_machine: x86-64
	le(1, 4)            // e_version
	le(base+headers, 8) // e_entry
	le(64, 8)           // e_phoff
	le(0, 8)            // e_shoff
	le(0, 4)            // e_flags
	le(64, 2)           // e_ehsize
	le(56, 2)           // e_phentsize
	le(1, 2)            // e_phnum
	le(0, 2)            // e_shentsize
	le(0, 2)            // e_shnum
	le(0, 2)            // e_shstrndx
	le(1, 4)            // p_type: PT_LOAD
	le(5, 4)            // p_flags: read, execute
	le(0, 8)            // p_offset
	le(base, 8)         // p_vaddr
	le(base, 8)         // p_paddr
	le(size, 8)         // p_filesz
	le(size, 8)         // p_memsz
	le(0x1000, 8)       // p_align
	return append(b, code...)
}

// reaperExec is how this process starts reapers: the program's path and
// its argv.
type reaperExec struct {
	path string
	argv []string
}

// newReaperExec writes the tiny reaper to a memfd where it can run here,
// and makes this process's working directory its /proc, from which the
// memfd is self/fd/N: a path that a spawn (vfork and exec, cheap) can
// take, though /proc is no longer mounted in the view.
func newReaperExec(proc int) *reaperExec {
	if tinyReaperArch {
		name := []byte("verl-score-reaper\x00")
		const mfdCloexec = 1
		fd, _, e := syscall.RawSyscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), mfdCloexec, 0)
		if e == 0 {
			if writeAll(int(fd), tinyReaper()) == nil && syscall.Fchdir(proc) == nil {
				return &reaperExec{path: "self/fd/" + Itoa(int(fd)), argv: []string{reaperName}}
			}
			syscall.Close(int(fd))
		}
	}
	return &reaperExec{path: "/bin/sleep", argv: []string{"/bin/sleep", "infinity"}}
}

// spawn starts a reaper as PID 1 of a new PID namespace, in a process
// group of its own, and returns its pid and a pidfd for it.
func (r *reaperExec) spawn() (pid, pidfd int, err error) {
	fd := -1
	attr := &syscall.ProcAttr{Env: []string{}, Sys: &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID, Setpgid: true, PidFD: &fd, Pdeathsig: syscall.SIGKILL}}
	pid, err = syscall.ForkExec(r.path, r.argv, attr)
	if err != nil {
		return 0, -1, err
	}
	return pid, fd, nil
}
