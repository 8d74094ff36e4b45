//go:build linux

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	bpfseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	docker "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// Errno values of refusals (the same on every architecture Linux has).
const (
	EPERM  = 1
	ENOSYS = 38
)

// retErrno is SECCOMP_RET_ERRNO; the errno is its low 16 bits.
const (
	retErrno = 0x00050000
	retAllow = 0x7fff0000
)

// Denial is one of verl-score's refusals, applied before Docker's profile
// is consulted, whatever that profile says of the call.
type Denial struct {
	Names []string
	Errno int
	// CloneNewFlags: refuse only where the first argument (clone's flags)
	// asks for a new namespace.
	CloneNewFlags bool
	Why           string
}

// CloneNewFlags are clone's flags that make a new namespace: NS, UTS,
// IPC, USER, PID, NET, CGROUP and TIME.
const CloneNewFlags = 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 |
	0x20000000 | 0x40000000 | 0x02000000 | 0x00000080

// Denials are the calls verl-score refuses on top of Docker's profile
// (most of which the profile refuses too, for a process without
// capabilities: listing them here keeps them refused if the profile ever
// changes).
var Denials = []Denial{
	{
		Names: []string{"unshare", "setns"},
		Errno: EPERM,
		Why:   "no new namespaces: a user namespace hands its maker every capability inside it",
	},
	{Names: []string{"clone"}, Errno: EPERM, CloneNewFlags: true, Why: "no new namespaces through clone"},
	{
		Names: []string{"clone3"},
		Errno: ENOSYS,
		Why:   "its flags sit behind a pointer the filter cannot read; ENOSYS makes libc fall back to clone",
	},
	{Names: []string{"mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
		"move_mount", "open_tree", "open_tree_attr", "mount_setattr"}, Errno: EPERM, Why: "no mounts"},
	{Names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}, Errno: EPERM,
		Why: "io_uring: refused by Docker, ChromeOS and Android for its record of kernel bugs"},
	{Names: []string{"add_key", "keyctl", "request_key"}, Errno: EPERM, Why: "the kernel keyrings are not namespaced"},
	{
		Names: []string{"bpf", "perf_event_open", "userfaultfd"},
		Errno: EPERM,
		Why:   "refused here whatever the host's sysctls allow",
	},
	{Names: []string{"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot"},
		Errno: EPERM, Why: "no kernel modules, kexec or reboot"},
}

// Arches are the architectures the filter is built for, by GOARCH.
var Arches = map[string]*arch.Info{"amd64": arch.X86_64, "arm64": arch.AARCH64}

// dockerArch is libseccomp's name of each, as the profile's rules name it.
var dockerArch = map[string]string{"amd64": "amd64", "arm64": "arm64"}

// aliases are names the profile uses (libseccomp's) for calls the builder's
// table knows by another name: aarch64's fstatat is the kernel's
// newfstatat.
var aliases = map[string]map[string]string{"arm64": {"newfstatat": "fstatat"}}

// ErrUnsupportedArch is returned by Build for an architecture it has no
// system-call table for.
var ErrUnsupportedArch = errors.New("no system-call filter for this architecture")

// Kernel is a kernel version, major and minor ("6.1").
type Kernel struct{ Major, Minor uint64 }

// ParseKernel reads the version at the start of a release string
// ("6.1.0-18-amd64").
func ParseKernel(release string) (Kernel, error) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return Kernel{}, fmt.Errorf("kernel release %q: no major.minor", release)
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	a, err1 := strconv.ParseUint(parts[0], 10, 64)
	b, err2 := strconv.ParseUint(minor, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Kernel{}, fmt.Errorf("kernel release %q: %w", release, err)
	}
	return Kernel{a, b}, nil
}

func (k Kernel) atLeast(v *docker.KernelVersion) bool {
	return k.Major > v.Kernel || k.Major == v.Kernel && k.Minor >= v.Major
}

// Build assembles the filter for goarch on a kernel of version k (the
// profile's rules for later kernels are left out, as Docker does).
func Build(goarch string, k Kernel) (*Filter, error) {
	info, ok := Arches[goarch]
	if !ok {
		return nil, fmt.Errorf("%w: %s (x86-64 and aarch64 have one)", ErrUnsupportedArch, goarch)
	}
	b := &builder{f: &Filter{Arch: goarch, ArchName: info.Name, Source: profileSource(), Refusals: len(Denials)},
		table: make(map[string]int, len(info.SyscallNames)), allowed: map[string]bool{}}
	// The builder's table, with the profile's names for calls it names
	// otherwise.
	for n, nr := range info.SyscallNames {
		b.table[n] = nr
	}
	for alias, name := range aliases[goarch] {
		if nr, ok := info.SyscallNames[name]; ok {
			b.table[alias] = nr
		}
	}
	prof, err := dockerRules(goarch, k)
	if err != nil {
		return nil, err
	}
	def, err := defaultAction(prof)
	if err != nil {
		return nil, err
	}
	b.denials()
	if err := b.profile(prof); err != nil {
		return nil, err
	}
	b.f.Allowed = len(b.allowed)
	ds := decisions(b.groups, def)
	if b.f.Program, err = assemble(ds, def, info); err != nil {
		return nil, err
	}
	b.f.decide = func(nr uint32, args [6]uint64) uint32 { return ds.eval(nr, args, def) }
	return b.f, nil
}

// builder gathers a filter's groups, in the order they are tried.
type builder struct {
	f       *Filter
	table   map[string]int // call numbers by name
	groups  []group
	denied  map[string]bool // refused whatever the arguments (Denials)
	allowed map[string]bool // allowed by some rule of the profile
}

// known are the names the architecture has a call for; the others are
// noted as skipped.
func (b *builder) known(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := b.table[n]; ok {
			out = append(out, n)
		} else if !slices.Contains(b.f.Skipped, n) {
			b.f.Skipped = append(b.f.Skipped, n)
		}
	}
	return out
}

// add adds one rule: its calls, its action, the conditions on arguments
// (nil for none) and how the audit shows them.
func (b *builder) add(names []string, act bpfseccomp.Action, conds bpfseccomp.ArgumentConditions, args, source string) {
	g := group{action: act}
	for _, n := range names {
		c := bpfseccomp.SyscallWithConditions{Num: uint32(b.table[n])}
		if conds != nil {
			c.Conditions = []bpfseccomp.ArgumentConditions{conds}
		}
		g.calls = append(g.calls, c)
	}
	b.groups = append(b.groups, g)
	b.f.Rules = append(b.f.Rules, Rule{Names: names, Action: actionName(act), Args: args, Source: source})
}

// denials adds verl-score's refusals, first.
func (b *builder) denials() {
	b.denied = map[string]bool{}
	for _, d := range Denials {
		names := b.known(d.Names)
		if len(names) == 0 {
			continue
		}
		act := bpfseccomp.Action(retErrno | uint32(d.Errno))
		if d.CloneNewFlags {
			b.add(names, act, bpfseccomp.ArgumentConditions{{Argument: 0, Operation: bpfseccomp.BitsSet, Value: CloneNewFlags}},
				fmt.Sprintf("arg0 & %#x != 0", CloneNewFlags), "verl-score")
			continue
		}
		b.add(names, act, nil, "", "verl-score")
		for _, n := range names {
			b.denied[n] = true
		}
	}
}

// profile adds the profile's rules, in its order, without the calls the
// refusals took whole.
func (b *builder) profile(prof *specs.LinuxSeccomp) error {
	for _, r := range prof.Syscalls {
		act, err := action(r)
		if err != nil {
			return err
		}
		var names []string
		for _, n := range b.known(r.Names) {
			if !b.denied[n] {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		var conds bpfseccomp.ArgumentConditions
		var text string
		if len(r.Args) > 0 {
			if conds, text, err = conditions(r.Args); err != nil {
				return fmt.Errorf("docker profile, %v: %w", r.Names, err)
			}
		}
		b.add(names, act, conds, text, "docker")
		if act == bpfseccomp.ActionAllow {
			for _, n := range names {
				b.allowed[n] = true
			}
		}
	}
	return nil
}

// group is calls that share an action.
type group struct {
	calls  []bpfseccomp.SyscallWithConditions
	action bpfseccomp.Action
}

// decision is what the filter does with one call number: the
// alternatives with conditions on arguments, tried in turn, then the
// action where none holds.
type decision struct {
	alts     []alternative
	fallback bpfseccomp.Action
}

type alternative struct {
	conds  bpfseccomp.ArgumentConditions
	action bpfseccomp.Action
}

// decisions resolves the groups, in order, first match winning, into
// what each call number gets; a number no group names gets def.
func decisions(groups []group, def bpfseccomp.Action) decisionTable {
	out := decisionTable{}
	final := map[uint32]bool{} // an unconditional rule decided it
	for _, g := range groups {
		for _, c := range g.calls {
			if final[c.Num] {
				continue
			}
			d := out[c.Num]
			if d == nil {
				d = &decision{fallback: def}
				out[c.Num] = d
			}
			if len(c.Conditions) == 0 {
				d.fallback, final[c.Num] = g.action, true
				continue
			}
			for _, conds := range c.Conditions {
				d.alts = append(d.alts, alternative{conds, g.action})
			}
		}
	}
	return out
}

// decisionTable is what each call number named by some rule gets.
type decisionTable map[uint32]*decision

// eval is what the table gives a call, evaluated here rather than by the
// program (the tests hold the two together).
func (ds decisionTable) eval(nr uint32, args [6]uint64, def bpfseccomp.Action) uint32 {
	d := ds[nr]
	if d == nil {
		return uint32(def)
	}
alts:
	for _, alt := range d.alts {
		for _, c := range alt.conds {
			a := args[c.Argument]
			var ok bool
			switch c.Operation {
			case bpfseccomp.Equal:
				ok = a == c.Value
			case bpfseccomp.LessThan:
				ok = a < c.Value
			case bpfseccomp.BitsNotSet:
				ok = a&c.Value == 0
			case bpfseccomp.BitsSet:
				ok = a&c.Value != 0
			}
			if !ok {
				continue alts
			}
		}
		return uint32(alt.action)
	}
	return uint32(d.fallback)
}

// interval is the call numbers from start up to the next interval's
// start: one action for all, or one number's alternatives.
type interval struct {
	start uint32
	d     *decision
}

// assemble lays the decisions out as a binary search over intervals of
// call numbers, libseccomp's shape at its highest optimisation: a call
// takes a dozen comparisons, and the kernel's preparation of the filter
// (which tries every call number through it to find those it may allow
// without running it) stays short. A list of calls, one comparison each
// (the builder's layout), made each program's installation cost about
// 0.6 ms here. In front: a call of another architecture (a 32-bit one on
// a 64-bit kernel) gets the default action; numbers from x32's bit up get
// ENOSYS on x86-64.
func assemble(ds decisionTable, def bpfseccomp.Action, info *arch.Info) ([]byte, error) {
	maxNr := uint32(0)
	for nr := range ds {
		maxNr = max(maxNr, nr)
	}
	top := uint32(0xffffffff)
	if info.ID == arch.X86_64.ID {
		top = uint32(arch.X32.SeccompMask)
	}
	if maxNr >= top {
		return nil, fmt.Errorf("seccomp filter: call %d is past %#x", maxNr, top)
	}
	defaults := &decision{fallback: def}
	var ivs []interval
	add := func(start uint32, d *decision) {
		if n := len(ivs); n > 0 && len(d.alts) == 0 && len(ivs[n-1].d.alts) == 0 && ivs[n-1].d.fallback == d.fallback {
			return // the same action as the numbers before it
		}
		ivs = append(ivs, interval{start, d})
	}
	for nr := uint32(0); nr <= maxNr+1; nr++ {
		if d, ok := ds[nr]; ok {
			add(nr, d)
		} else {
			add(nr, defaults)
		}
	}
	if top != 0xffffffff {
		ivs = append(ivs, interval{top, &decision{fallback: bpfseccomp.Action(retErrno | ENOSYS)}})
	}
	body, err := searchTree(ivs)
	if err != nil {
		return nil, err
	}
	insts := []bpf.Instruction{bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(def)},
		bpf.LoadAbsolute{Off: offNr, Size: 4}}
	insts = append(insts, body...)
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("the seccomp filter has %d instructions, over the kernel's 4096", len(raw))
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// searchTree decides among the intervals (sorted, the first from 0, the
// last open-ended) by the call number in the accumulator. Every path ends
// in a return, so subtrees are simply laid one after the other.
func searchTree(ivs []interval) ([]bpf.Instruction, error) {
	if len(ivs) == 1 {
		return leaf(ivs[0].d)
	}
	m := len(ivs) / 2
	left, err := searchTree(ivs[:m])
	if err != nil {
		return nil, err
	}
	right, err := searchTree(ivs[m:])
	if err != nil {
		return nil, err
	}
	k := ivs[m].start
	var head []bpf.Instruction
	if len(left) <= 255 {
		head = []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: k, SkipTrue: uint8(len(left))}}
	} else {
		// Too far for a conditional jump: an unconditional one over the left.
		head = []bpf.Instruction{
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: k, SkipFalse: 1},
			bpf.Jump{Skip: uint32(len(left))},
		}
	}
	return append(append(head, left...), right...), nil
}

// leaf is one interval's decision: each alternative in turn, the first
// whose conditions all hold returning its action, then the fallback.
func leaf(d *decision) ([]bpf.Instruction, error) {
	var block []bpf.Instruction
	for i := 0; i < len(d.alts); {
		if n := valueRun(d.alts[i:]); n > 1 {
			block = append(block, valueSet(d.alts[i:i+n])...)
			i += n
			continue
		}
		insts, err := alternativeBlock(d.alts[i])
		if err != nil {
			return nil, err
		}
		block = append(block, insts...)
		i++
	}
	return append(block, bpf.RetConstant{Val: uint32(d.fallback)}), nil
}

// valueRun is how many alternatives from the first are each one argument
// (the same one) equal to a value below 2^32, with one action: socket's
// address families, personality's personas.
func valueRun(alts []alternative) int {
	n := 0
	for _, a := range alts {
		if len(a.conds) != 1 || a.conds[0].Operation != bpfseccomp.Equal || a.conds[0].Value>>32 != 0 ||
			a.conds[0].Argument != alts[0].conds[0].Argument || a.action != alts[0].action || n == 200 {
			break
		}
		n++
	}
	return n
}

// valueSet tests a run of valueRun's alternatives at once: the high word
// once, then the low one against each value, one return for all.
func valueSet(alts []alternative) []bpf.Instruction {
	arg := alts[0].conds[0].Argument
	n := len(alts)
	insts := []bpf.Instruction{
		bpf.LoadAbsolute{Off: argOff(arg) + 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: uint8(n + 3)}, // past the return
		bpf.LoadAbsolute{Off: argOff(arg), Size: 4},
	}
	for i, a := range alts {
		insts = append(insts, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.conds[0].Value), SkipTrue: uint8(n - i)})
	}
	return append(insts, bpf.Jump{Skip: 1}, bpf.RetConstant{Val: uint32(alts[0].action)})
}

// alternativeBlock tests one alternative's conditions on the arguments
// (64 bits each, as two words) and returns its action where all hold;
// otherwise it falls through, past its end.
func alternativeBlock(alt alternative) ([]bpf.Instruction, error) {
	var insts []bpf.Instruction
	var fails []int // jumps to the end of the block, set once its length is known
	failIf := func(j bpf.JumpIf, onTrue bool) {
		fails = append(fails, len(insts))
		if onTrue {
			j.SkipTrue = 1 // placeholder
		} else {
			j.SkipFalse = 1
		}
		insts = append(insts, j)
	}
	for _, cond := range alt.conds {
		hi, lo := uint32(cond.Value>>32), uint32(cond.Value)
		ldHi := bpf.LoadAbsolute{Off: argOff(cond.Argument) + 4, Size: 4}
		ldLo := bpf.LoadAbsolute{Off: argOff(cond.Argument), Size: 4}
		switch cond.Operation {
		case bpfseccomp.Equal, bpfseccomp.BitsNotSet:
			// Each word must pass: equal to the value's, or sharing no
			// bit with the mask's.
			test, onTrue := bpf.JumpEqual, false
			if cond.Operation == bpfseccomp.BitsNotSet {
				test, onTrue = bpf.JumpBitsSet, true
			}
			insts = append(insts, ldHi)
			failIf(bpf.JumpIf{Cond: test, Val: hi}, onTrue)
			insts = append(insts, ldLo)
			failIf(bpf.JumpIf{Cond: test, Val: lo}, onTrue)
		case bpfseccomp.LessThan:
			insts = append(insts, ldHi)
			failIf(bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: hi}, true)
			insts = append(insts, bpf.JumpIf{Cond: bpf.JumpEqual, Val: hi, SkipFalse: 2}, ldLo) // high word below: holds
			failIf(bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: lo}, true)
		case bpfseccomp.BitsSet:
			insts = append(insts, ldHi, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: hi, SkipTrue: 2}, ldLo) // a high bit: holds
			failIf(bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: lo}, false)
		default:
			return nil, fmt.Errorf("seccomp filter: condition %s is not built", cond.Operation)
		}
	}
	insts = append(insts, bpf.RetConstant{Val: uint32(alt.action)})
	for _, i := range fails {
		j := insts[i].(bpf.JumpIf)
		skip := len(insts) - i - 1
		if skip > 255 {
			return nil, errors.New("seccomp filter: a call's conditions are too long")
		}
		if j.SkipTrue == 1 {
			j.SkipTrue = uint8(skip)
		} else {
			j.SkipFalse = uint8(skip)
		}
		insts[i] = j
	}
	return insts, nil
}

// argOff is where argument i's low word lies in struct seccomp_data (both
// architectures are little-endian: its high word follows).
func argOff(i uint32) uint32 { return offArgs + 8*i }

// Offsets in the kernel's struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// dockerRules is Docker's default profile as Docker resolves it for a
// container with no capabilities on this architecture and kernel.
func dockerRules(goarch string, k Kernel) (*specs.LinuxSeccomp, error) {
	prof := docker.DefaultProfile()
	out := prof.LinuxSeccomp
	out.Syscalls = nil
	a := dockerArch[goarch]
	for _, r := range prof.Syscalls {
		names := append(slices.Clone(r.Names), oldName(r)...)
		if ex := r.Excludes; ex != nil {
			// No capability is held, so none excludes a rule.
			if slices.Contains(ex.Arches, a) || ex.MinKernel != nil && k.atLeast(ex.MinKernel) {
				continue
			}
		}
		if in := r.Includes; in != nil {
			if len(in.Caps) > 0 || len(in.Arches) > 0 && !slices.Contains(in.Arches, a) ||
				in.MinKernel != nil && !k.atLeast(in.MinKernel) {
				continue
			}
		}
		s := r.LinuxSyscall
		s.Names = names
		out.Syscalls = append(out.Syscalls, s)
	}
	return &out, nil
}

func action(r specs.LinuxSyscall) (bpfseccomp.Action, error) {
	switch r.Action {
	case specs.ActAllow:
		return bpfseccomp.ActionAllow, nil
	case specs.ActErrno:
		e := uint32(EPERM)
		if r.ErrnoRet != nil {
			e = uint32(*r.ErrnoRet)
		}
		return bpfseccomp.Action(retErrno | e), nil
	}
	return 0, fmt.Errorf("docker profile, %v: action %s is not one this filter takes", r.Names, r.Action)
}

func defaultAction(p *specs.LinuxSeccomp) (bpfseccomp.Action, error) {
	if p.DefaultAction != specs.ActErrno {
		return 0, fmt.Errorf("docker profile: default action %s, not an errno", p.DefaultAction)
	}
	e := uint32(EPERM)
	if p.DefaultErrnoRet != nil {
		e = uint32(*p.DefaultErrnoRet)
	}
	return bpfseccomp.Action(retErrno | e), nil
}

// conditions are a rule's argument checks, all of which must hold. The
// filter builds the operators Docker's profile uses: ==, < and a masked
// test for zero.
func conditions(args []specs.LinuxSeccompArg) (bpfseccomp.ArgumentConditions, string, error) {
	var out bpfseccomp.ArgumentConditions
	var text []string
	for _, a := range args {
		c := bpfseccomp.Condition{Argument: uint32(a.Index), Value: a.Value}
		switch {
		case a.Op == specs.OpEqualTo:
			c.Operation = bpfseccomp.Equal
			text = append(text, fmt.Sprintf("arg%d == %#x", a.Index, a.Value))
		case a.Op == specs.OpLessThan:
			c.Operation = bpfseccomp.LessThan
			text = append(text, fmt.Sprintf("arg%d < %#x", a.Index, a.Value))
		case a.Op == specs.OpMaskedEqual && a.ValueTwo == 0:
			c.Operation = bpfseccomp.BitsNotSet
			text = append(text, fmt.Sprintf("arg%d & %#x == 0", a.Index, a.Value))
		default:
			return nil, "", fmt.Errorf(
				"arg%d %s %#x (%#x) is not a condition this filter builds",
				a.Index,
				a.Op,
				a.Value,
				a.ValueTwo,
			)
		}
		out = append(out, c)
	}
	return out, strings.Join(text, " && "), nil
}

func errnoName(e int) string {
	switch e {
	case EPERM:
		return "EPERM"
	case ENOSYS:
		return "ENOSYS"
	}
	return "errno " + strconv.Itoa(e)
}

func actionName(a bpfseccomp.Action) string {
	if a == bpfseccomp.ActionAllow {
		return "allow"
	}
	return errnoName(int(uint32(a) & 0xffff))
}

// profileSource names Docker's profile by its module and version.
func profileSource() string {
	const mod = "github.com/moby/profiles/seccomp"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				return "Docker's default profile (" + mod + " " + d.Version + ")"
			}
		}
	}
	return "Docker's default profile (" + mod + ")"
}

var host struct {
	once sync.Once
	f    *Filter
	err  error
}

// Host is the filter for this machine's architecture and kernel, built
// once. It fails where the architecture has no filter or the kernel no
// seccomp.
func Host() (*Filter, error) {
	host.once.Do(func() {
		if err := Supported(); err != nil {
			host.err = err
			return
		}
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			host.err = fmt.Errorf("uname: %w", err)
			return
		}
		var rel []byte
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			rel = append(rel, byte(c))
		}
		k, err := ParseKernel(string(rel))
		if err != nil {
			host.err = err
			return
		}
		host.f, host.err = Build(runtime.GOARCH, k)
	})
	return host.f, host.err
}

// Supported says whether the kernel filters system calls (PR_GET_SECCOMP
// fails with EINVAL where it was built without seccomp).
func Supported() error {
	const prGetSeccomp = 21
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prGetSeccomp, 0, 0); e == syscall.EINVAL {
		return errors.New("this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)")
	}
	return nil
}

// oldName is the call a rule names by its deprecated single-name field,
// which a profile written before Names may still use.
func oldName(r *docker.Syscall) []string {
	//lint:ignore SA1019 read on purpose, for older profiles
	if r.Name == "" {
		return nil
	}
	//lint:ignore SA1019 as above
	return []string{r.Name}
}
