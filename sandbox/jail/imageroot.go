//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"unsafe"

	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// ImageRoot is a step whose root filesystem is a container image's (a
// repository task's environment) rather than the view: the unpacked image,
// read-only, under a writable layer of the step's own that is gone when
// the step ends.
//
// The step runs in a user namespace that maps its ids 0..IDRange-1 onto
// the host's IDBase..: the image's files were unpacked with their owners
// shifted there (sandbox/image), so root in the step owns what the image's
// root owns, and no file of the host. Root there is still locked down as
// every step is (no capability, no_new_privs, the seccomp filter), in its
// own mount, PID, IPC, UTS and network namespaces and cgroup. Every step
// in an image shares those host ids; the namespaces, not the ids, keep
// them apart (no step sees another's processes or files).
type ImageRoot struct {
	Lower string // the unpacked root
	// UpperMB bounds what the step may write (a tmpfs: memory, charged
	// to the step's cgroup); UpperInodes its files.
	UpperMB, UpperInodes int
	IDBase, IDRange      int

	lowerFD int // the init's fd of Lower (set by start)
}

// openTree is a detached copy of the mount of dir (open_tree with
// OPEN_TREE_CLONE): an fd the init attaches in its own mount namespace
// (move_mount), so that it reaches the unpacked tree however closed the
// store's parent directories are to the image's root user.
func openTree(dir string) (*os.File, error) {
	p, err := syscall.BytePtrFromString(dir)
	if err != nil {
		return nil, err
	}
	const openTreeClone, atRecursive = 1, 0x8000
	cwd := atFDCWD
	fd, _, errno := syscall.Syscall(sysOpenTree, uintptr(cwd), uintptr(unsafe.Pointer(p)),
		openTreeClone|syscall.O_CLOEXEC|atRecursive)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(fd, dir), nil
}

// open_tree's number, the same on x86-64 and aarch64 (the unified table).
const (
	sysOpenTree = 428
	atFDCWD     = -100
)

// attr starts the init of a step in an image: new namespaces, the user's
// mapped onto the image's ids.
func (im *ImageRoot) attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC |
			syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET,
		// the init becomes the namespace's root (the host's IDBase) before
		// its exec, so that it keeps root's powers there to build the view
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: im.IDBase, Size: im.IDRange}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: im.IDBase, Size: im.IDRange}},
	}
}

// ImageScript is the init's script for a step in an image's root: the
// overlay, the harmless devices, a procfs, the request's files at their
// absolute paths, and the program run as the image's root (uid is unused:
// the namespace's root).
func (v *View) ImageScript(s *Spec, _ int, argv []string, maxFetch int) []byte {
	itoa := nsinit.Itoa
	im := s.Image
	var sc nsinit.Script
	inodes := im.UpperInodes
	if inodes <= 0 {
		inodes = im.UpperMB << 20 / 4096
	}
	lower := im.Lower
	if im.lowerFD > 0 {
		lower = "fd:" + itoa(im.lowerFD) // a detached mount to attach (openTree)
	}
	sc.Op(nsinit.OpOverlay, v.mount, lower, itoa(im.UpperMB), itoa(inodes), "0", "0")
	for _, d := range devNodes {
		p := "/dev/" + d
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 {
			sc.Op(nsinit.OpBind, p, p, itoa(nsinit.BindFile|nsinit.BindDevice|nsinit.BindWritable))
		}
	}
	for _, ln := range [][2]string{{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"}} {
		if _, err := os.Lstat(filepath.Join(im.Lower, ln[1])); os.IsNotExist(err) {
			sc.Op(nsinit.OpSymlink, ln[0], ln[1])
		}
	}
	sc.Op(nsinit.OpMkdir, "/dev/shm", itoa(0o1777), "-1", "-1")
	sc.Op(nsinit.OpFile, "/etc/hosts", itoa(0o644), "-1", "-1", "127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	names := make([]string, 0, len(s.View.Abs))
	for n := range s.View.Abs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sc.Op(nsinit.OpFile, n, itoa(0o644), "-1", "-1", string(s.View.Abs[n]))
	}
	sc.Op(nsinit.OpProc, "/proc")
	sc.Op(nsinit.OpPivot, v.mount)
	RunOps(&sc, s, -1, argv, maxFetch)
	return sc.Bytes()
}
