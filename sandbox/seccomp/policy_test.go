//go:build linux

package seccomp

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

var testKernel = Kernel{6, 1}

// eval runs the filter on one call, as the kernel would: it returns what
// the filter answers (SECCOMP_RET_*, with the errno).
func eval(t *testing.T, f *Filter, auditArch uint32, nr uint32, args ...uint64) uint32 {
	t.Helper()
	var raw []bpf.RawInstruction
	for b := f.Program; len(b) > 0; b = b[8:] {
		raw = append(
			raw,
			bpf.RawInstruction{Op: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])},
		)
	}
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the program does not disassemble")
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	// struct seccomp_data: nr, arch, instruction pointer, six arguments.
	// The VM loads words big-endian (it reads packets); the kernel in the
	// machine's order: each word is written so that the VM reads what the
	// kernel would on a little-endian machine (both architectures are).
	data := make([]byte, 64)
	put := func(off int, v uint32) { binary.BigEndian.PutUint32(data[off:], v) }
	put(0, nr)
	put(4, auditArch)
	for i, a := range args {
		put(16+8*i, uint32(a))
		put(16+8*i+4, uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

func build(t *testing.T, goarch string) *Filter {
	t.Helper()
	f, err := Build(goarch, testKernel)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func nr(t *testing.T, goarch, name string) uint32 {
	t.Helper()
	n, ok := Arches[goarch].SyscallNames[name]
	if !ok {
		if alias, ok := aliases[goarch][name]; ok {
			n = Arches[goarch].SyscallNames[alias]
		} else {
			t.Fatalf("%s has no %s", goarch, name)
		}
	}
	return uint32(n)
}

const (
	allow  = retAllow
	eperm  = retErrno | EPERM
	enosys = retErrno | ENOSYS
)

// Calls every toolchain of the sandbox makes: the filter must let each
// through, on both architectures.
var essential = []string{
	"read",
	"write",
	"openat",
	"close",
	"fstat",
	"newfstatat",
	"statx",
	"lseek",
	"mmap",
	"mprotect",
	"munmap",
	"brk",
	"rt_sigaction",
	"rt_sigprocmask",
	"rt_sigreturn",
	"ioctl",
	"pread64",
	"readv",
	"writev",
	"faccessat",
	"faccessat2",
	"sched_yield",
	"mremap",
	"madvise",
	"dup",
	"dup3",
	"getpid",
	"sendfile",
	"socketpair",
	"connect",
	"accept4",
	"sendto",
	"recvfrom",
	"bind",
	"listen",
	"getsockname",
	"setsockopt",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"wait4",
	"kill",
	"tgkill",
	"uname",
	"fcntl",
	"flock",
	"fsync",
	"getdents64",
	"getcwd",
	"chdir",
	"fchdir",
	"renameat2",
	"mkdirat",
	"unlinkat",
	"symlinkat",
	"readlinkat",
	"fchmod",
	"fchmodat",
	"fchownat",
	"umask",
	"gettimeofday",
	"getrlimit",
	"prlimit64",
	"getrusage",
	"sysinfo",
	"getuid",
	"geteuid",
	"getgid",
	"setgid",
	"setuid",
	"setgroups",
	"setresuid",
	"prctl",
	"futex",
	"futex_waitv",
	"sched_getaffinity",
	"sched_setaffinity",
	"set_tid_address",
	"set_robust_list",
	"clock_gettime",
	"clock_nanosleep",
	"nanosleep",
	"epoll_create1",
	"epoll_ctl",
	"epoll_pwait",
	"epoll_pwait2",
	"eventfd2",
	"pipe2",
	"ppoll",
	"pselect6",
	"getrandom",
	"memfd_create",
	"rseq",
	"close_range",
	"pidfd_open",
	"waitid",
	"sigaltstack",
	"timerfd_create",
	"inotify_init1",
	"capget",
	"capset",
	"process_vm_readv",
	"ptrace",
	"membarrier",
	"mlock",
	"restart_syscall",
}

func TestFilterAllowsWhatToolchainsCall(t *testing.T) {
	for goarch, info := range Arches {
		f := build(t, goarch)
		for _, name := range essential {
			if got := eval(t, f, uint32(info.ID), nr(t, goarch, name), 0, 0, 0); got != allow {
				t.Errorf("%s: %s: got %#x, want allow", goarch, name, got)
			}
		}
		if goarch == "amd64" {
			for _, name := range []string{"arch_prctl", "open", "stat", "access", "pipe", "poll", "select", "dup2", "fork",
				"vfork"} {
				if got := eval(t, f, uint32(info.ID), nr(t, goarch, name)); got != allow {
					t.Errorf("amd64: %s: got %#x, want allow", name, got)
				}
			}
		}
		t.Logf("%s: %d instructions, %d calls allowed; names the architecture lacks: %s", goarch, f.Instructions(), f.Allowed,
			strings.Join(f.Skipped, " "))
	}
}

func TestFilterRefusesWithAnErrno(t *testing.T) {
	for goarch, info := range Arches {
		f := build(t, goarch)
		a := uint32(info.ID)
		for _, d := range Denials {
			for _, name := range d.Names {
				n, ok := Arches[goarch].SyscallNames[name]
				if !ok {
					continue // not on this architecture (umount on aarch64)
				}
				args := []uint64{0}
				if d.CloneNewFlags {
					args[0] = 0x10000000 // CLONE_NEWUSER
				}
				if got, want := eval(t, f, a, uint32(n), args...), retErrno|uint32(d.Errno); got != want {
					t.Errorf("%s: %s: got %#x, want %#x", goarch, name, got, want)
				}
			}
		}
		clone := nr(t, goarch, "clone")
		const threadFlags = 0x3d0f00 // what glibc's pthread_create passes
		if got := eval(t, f, a, clone, threadFlags); got != allow {
			t.Errorf("%s: clone of a thread: got %#x, want allow", goarch, got)
		}
		for _, flag := range []uint64{0x20000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000, 0x2000000, 0x80} {
			if got := eval(t, f, a, clone, 0x11|flag); got != eperm {
				t.Errorf("%s: clone with %#x: got %#x, want EPERM", goarch, flag, got)
			}
		}
		// Docker's socket families: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
		// in, AF_ALG and AF_VSOCK out.
		socket := nr(t, goarch, "socket")
		for _, c := range []struct {
			family uint64
			want   uint32
		}{{1, allow}, {2, allow}, {10, allow}, {16, allow}, {38, eperm}, {40, eperm}} {
			if got := eval(t, f, a, socket, c.family, 1, 0); got != c.want {
				t.Errorf("%s: socket(%d): got %#x, want %#x", goarch, c.family, got, c.want)
			}
		}
		personality := nr(t, goarch, "personality")
		if got := eval(t, f, a, personality, 0xffffffff); got != allow {
			t.Errorf("%s: personality(query): got %#x, want allow", goarch, got)
		}
		if got := eval(t, f, a, personality, 0x0040000); got != eperm {
			t.Errorf("%s: personality(ADDR_NO_RANDOMIZE): got %#x, want EPERM", goarch, got)
		}
		for _, name := range []string{"swapon", "settimeofday", "ioperm", "iopl", "syslog", "sethostname", "acct", "quotactl",
			"lookup_dcookie", "fanotify_init", "open_by_handle_at", "kcmp", "pidfd_getfd", "process_madvise", "vhangup",
			"mbind"} {
			n, ok := Arches[goarch].SyscallNames[name]
			if !ok {
				continue
			}
			if got := eval(t, f, a, uint32(n)); got != eperm {
				t.Errorf("%s: %s: got %#x, want EPERM (Docker refuses it without capabilities)", goarch, name, got)
			}
		}
		if got := eval(t, f, a, 999); got != eperm {
			t.Errorf("%s: an unknown call: got %#x, want EPERM", goarch, got)
		}
		// A 32-bit call through the compatibility entry: another audit arch.
		if got := eval(t, f, uint32(arch.I386.ID), 3); got != eperm {
			t.Errorf("%s: an i386 call: got %#x, want EPERM", goarch, got)
		}
	}
	f := build(t, "amd64")
	if got := eval(t, f, uint32(arch.X86_64.ID), nr(t, "amd64", "read")|0x40000000); got != enosys {
		t.Errorf("an x32 read: got %#x, want ENOSYS", got)
	}
}

// TestFilterFollowsDockersProfile: every call the profile allows a process
// without capabilities, and that verl-score does not refuse, is allowed
// (unconditionally where the profile has no condition on it).
func TestFilterFollowsDockersProfile(t *testing.T) {
	for goarch, info := range Arches {
		f := build(t, goarch)
		prof, err := dockerRules(goarch, testKernel)
		if err != nil {
			t.Fatal(err)
		}
		refused := map[string]bool{}
		for _, d := range Denials {
			for _, n := range d.Names {
				refused[n] = !d.CloneNewFlags
			}
		}
		checked := 0
		for _, r := range prof.Syscalls {
			if r.Action != "SCMP_ACT_ALLOW" || len(r.Args) > 0 {
				continue
			}
			for _, name := range r.Names {
				n, ok := Arches[goarch].SyscallNames[name]
				if alias, isAlias := aliases[goarch][name]; isAlias {
					n, ok = Arches[goarch].SyscallNames[alias]
				}
				if !ok || refused[name] {
					continue
				}
				checked++
				if got := eval(t, f, uint32(info.ID), uint32(n), 0x10000000); got != allow {
					t.Errorf("%s: %s: got %#x, want allow", goarch, name, got)
				}
			}
		}
		if checked < 250 {
			t.Errorf("%s: only %d of the profile's calls checked", goarch, checked)
		}
		// What the profile lacks is refused: the filter allows no more.
		allowedNames := map[string]bool{}
		for _, r := range f.Rules {
			if r.Action == "allow" {
				for _, n := range r.Names {
					allowedNames[n] = true
					if alias, ok := aliases[goarch][n]; ok {
						allowedNames[alias] = true
					}
				}
			}
		}
		for name, n := range Arches[goarch].SyscallNames {
			if allowedNames[name] || slices.Contains([]string{"clone", "socket", "personality"}, name) {
				continue
			}
			if got := eval(t, f, uint32(info.ID), uint32(n)); got == allow {
				t.Errorf("%s: %s is allowed, but no rule allows it", goarch, name)
			}
		}
	}
}

func TestBuildRefusesOtherArches(t *testing.T) {
	for _, a := range []string{"riscv64", "386", "s390x"} {
		if _, err := Build(a, testKernel); err == nil {
			t.Errorf("%s: built a filter", a)
		}
	}
}

func TestParseKernel(t *testing.T) {
	for in, want := range map[string]Kernel{"6.1.0-18-amd64": {6, 1}, "5.15.153.1-microsoft-standard-WSL2": {5, 15},
		"4.8": {4, 8}, "6.12rc3": {6, 12}} {
		if got, err := ParseKernel(in); err != nil || got != want {
			t.Errorf("ParseKernel(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	if _, err := ParseKernel("six"); err == nil {
		t.Error("ParseKernel(six): no error")
	}
	// ptrace is the profile's only call for kernels from 4.8 on.
	old, err := Build("amd64", Kernel{4, 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := eval(t, old, uint32(arch.X86_64.ID), nr(t, "amd64", "ptrace")); got != eperm {
		t.Errorf("ptrace on 4.4: got %#x, want EPERM", got)
	}
}

// TestFilterIsItsRules: for every call number of both architectures (and
// some past them), with arguments that meet and miss each condition of the
// profile, the program answers what its rules, evaluated in Go, give.
func TestFilterIsItsRules(t *testing.T) {
	argSets := [][6]uint64{
		{},
		{1},
		{2},
		{3},
		{7},
		{10},
		{16},
		{17},
		{38},
		{40},
		{44},
		{45},
		{0x20000},
		{8},
		{0xffffffff},
		{0x20008},
		{0x3d0f00},
		{0x10000000},
		{0x11 | 0x20000},
		{1 << 32},
		{^uint64(0)},
		{0x80},
	}
	for goarch, info := range Arches {
		f := build(t, goarch)
		checked := 0
		for nr := uint32(0); nr < 600; nr++ {
			for _, args := range argSets {
				want := f.decide(nr, args)
				if got := eval(t, f, uint32(info.ID), nr, args[:]...); got != want {
					t.Fatalf("%s: call %d (%s) with %#x: the program gives %#x, its rules %#x", goarch, nr,
						info.SyscallNumbers[int(nr)], args[0], got, want)
				}
				checked++
			}
		}
		if got := eval(t, f, uint32(info.ID), 0x3fffffff); got != eperm {
			t.Errorf("%s: the last call number below x32's: got %#x, want EPERM", goarch, got)
		}
		t.Logf("%s: %d calls and arguments agree", goarch, checked)
	}
}
