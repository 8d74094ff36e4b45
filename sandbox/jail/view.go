//go:build linux

package jail

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/nsinit"
)

// Paths inside a contained step's view.
const (
	RunDir   = "/sandbox" // the run's own directory: cwd, HOME, TMPDIR
	BuildDir = "/build"   // the compiled program (read-only in runs)
	SizeMB   = 256        // the step's writable space: /sandbox, /tmp, /dev/shm
	// Inodes bounds the files, directories and links of that space: one
	// per page of its size, the ratio of the kernel's default for tmpfs
	// (of half the memory). Without a bound, empty files cost the host
	// memory (an inode and a dentry each) while the size stays at 0.
	Inodes       = SizeMB << 20 / 4096
	viewRunSpace = "/.run" // where that space is mounted
)

// Bind is one host path shown inside the view, at the same path unless
// target says otherwise.
type Bind struct {
	Source, Target string
	Flags          int // nsinit.Bind*
}

// View is what every contained step of a Local sees, read-only: the
// system's programs and libraries, the toolchains, the few files of /etc
// they read, and the harmless devices. Nothing else of the host.
type View struct {
	mount string // the empty directory each step mounts its view on
	binds []Bind
	links [][2]string // target, path
}

// etcEntries are what the toolchains read from /etc: the dynamic linker's
// cache, Debian's alternatives (java, c++), the JVM's configuration, TLS and
// time-zone data, PHP's, R's, Racket's and LDC's configuration, and
// Debian's matplotlibrc (matplotlib will not import without it; serve's
// /run_jupyter plots). The host's users, hosts and the rest stay out.
var etcEntries = []string{
	"ld.so.cache",
	"ld.so.conf",
	"ld.so.conf.d",
	"alternatives",
	"localtime",
	"ssl",
	"mime.types",
	"php",
	"R",
	"racket",
	"ldc2.conf",
	"matplotlibrc",
}

var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// NewView lays out the view of a Local with the given toolchains.
func NewView(mount string, tools map[string]string) *View {
	v := &View{mount: mount}
	covered := func(p string) bool {
		for _, b := range v.binds {
			if p == b.Source || strings.HasPrefix(p, b.Source+"/") {
				return true
			}
		}
		return false
	}
	// The system: /usr, and the merged-/usr links (or directories) at /.
	for _, name := range []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		p := "/" + name
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				v.links = append(v.links, [2]string{t, p})
			}
		case fi.IsDir():
			v.binds = append(v.binds, Bind{Source: p, Target: p})
		}
	}
	// Toolchains outside /usr (rustup, pyenv, a Go or Node.js tarball):
	// the tree two levels above the real binary (<root>/bin/<program>).
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := tools[n]
		if p == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || covered(real) {
			continue
		}
		if n == lang.NodeRuntime {
			// A directory, bound as it is.
			v.binds = append(v.binds, Bind{Source: real, Target: real})
			continue
		}
		root := filepath.Dir(filepath.Dir(real))
		if root == "/" || root == "." {
			root = filepath.Dir(real)
		}
		v.binds = append(v.binds, Bind{Source: root, Target: root})
	}
	etc := append([]string{}, etcEntries...)
	if m, _ := filepath.Glob("/etc/java*"); len(m) > 0 {
		for _, p := range m {
			etc = append(etc, filepath.Base(p))
		}
	}
	for _, e := range etc {
		p := "/etc/" + e
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				v.links = append(v.links, [2]string{t, p})
			}
		case fi.IsDir():
			v.binds = append(v.binds, Bind{Source: p, Target: p})
		case fi.Mode().IsRegular():
			v.binds = append(v.binds, Bind{Source: p, Target: p, Flags: nsinit.BindFile})
		}
	}
	for _, d := range devNodes {
		p := "/dev/" + d
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 {
			v.binds = append(
				v.binds,
				Bind{Source: p, Target: p, Flags: nsinit.BindFile | nsinit.BindDevice | nsinit.BindWritable},
			)
		}
	}
	v.links = append(v.links, [2]string{"/proc/self/fd", "/dev/fd"}, [2]string{"/proc/self/fd/0", "/dev/stdin"},
		[2]string{"/proc/self/fd/1", "/dev/stdout"}, [2]string{"/proc/self/fd/2", "/dev/stderr"})
	return v
}

// ViewStep is what one step adds to the common view.
type ViewStep struct {
	Binds []Bind
	Files map[string][]byte // written into viewRunDir, owned by the step user
	// abs are the request's files at absolute paths, written into the
	// step's own space (see absoluteRoots); they exist only in its view.
	Abs   map[string][]byte
	Fetch []string          // names under viewRunDir, or absolute paths, read back after the run
	Links map[string]string // name in viewRunDir -> what it points to
}

// absoluteRoots are the top directories a step's absolute file paths
// need made in its space: those not already there (/tmp, /dev/shm and
// the run directory are).
func absoluteRoots(abs map[string][]byte, fetch []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !filepath.IsAbs(p) {
			return
		}
		top := "/" + strings.SplitN(strings.TrimPrefix(filepath.Clean(p), "/"), "/", 2)[0]
		if top == "/tmp" || top == RunDir || top == "/dev" || seen[top] {
			return
		}
		seen[top] = true
		out = append(out, top)
	}
	for p := range abs {
		add(p)
	}
	for _, p := range fetch {
		add(p)
	}
	sort.Strings(out)
	return out
}

// AbsoluteAllowed says why a request's absolute file path cannot be
// given its own place in the step's view ("" if it can): it must be clean
// and lie in /tmp, /dev/shm, the run directory, or a top directory the
// view does not already have (/mnt, /data, /home ...), never in the
// system's or a toolchain's tree.
func (v *View) AbsoluteAllowed(p string) string {
	if filepath.Clean(p) != p || p == "/" {
		return "is not a clean absolute path"
	}
	top := "/" + strings.SplitN(p[1:], "/", 2)[0]
	switch {
	case p == "/tmp" || p == "/dev/shm" || p == RunDir:
		return "is a directory of the view"
	case top == "/tmp" || top == RunDir || strings.HasPrefix(p, "/dev/shm/"):
		return ""
	}
	reserved := map[string]bool{"/proc": true, "/dev": true, "/etc": true, BuildDir: true, viewRunSpace: true}
	for _, b := range v.binds {
		reserved["/"+strings.SplitN(strings.TrimPrefix(b.Target, "/"), "/", 2)[0]] = true
	}
	for _, ln := range v.links {
		reserved["/"+strings.SplitN(strings.TrimPrefix(ln[1], "/"), "/", 2)[0]] = true
	}
	if reserved[top] {
		return "lies in " + top + ", a read-only part of the sandbox's view"
	}
	return ""
}

// Script is the init's script for one step: argv runs in dir as uid
// (-1: as the init's own user).
func (v *View) Script(s *Spec, uid int, argv []string, maxFetch int) []byte {
	var sc nsinit.Script
	itoa := nsinit.Itoa
	sc.Op(nsinit.OpTmpfs, v.mount, itoa(SizeMB), itoa(Inodes))
	for _, b := range append(v.binds[:len(v.binds):len(v.binds)], s.View.Binds...) {
		sc.Op(nsinit.OpBind, b.Source, b.Target, itoa(b.Flags))
	}
	for _, ln := range v.links {
		sc.Op(nsinit.OpSymlink, ln[0], ln[1])
	}
	sc.Op(nsinit.OpFile, "/etc/hosts", itoa(0o644), "-1", "-1", "127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	v.RunSpace(&sc, s, uid)
	sc.Op(nsinit.OpPivot, v.mount)
	RunOps(&sc, s, uid, argv, maxFetch)
	return sc.Bytes()
}

// RunSpace adds what is the step's own: one tmpfs holding its directory,
// /tmp, /dev/shm and its user's /etc/passwd and /etc/group, each bound at
// its place, the request's files, and a procfs of its PID namespace. A
// fork-server run builds just this part over the server's view, so both
// ways give the same mounts.
func (v *View) RunSpace(sc *nsinit.Script, s *Spec, uid int) {
	itoa := nsinit.Itoa
	owner := uid // -1: the init's own user (root of a user namespace)
	shown := max(owner, 0)
	sp := viewRunSpace
	sc.Op(nsinit.OpRunSpace, sp, itoa(SizeMB), itoa(Inodes))
	sc.Op(nsinit.OpMkdir, sp+"/tmp", itoa(0o1777), "-1", "-1")
	sc.Op(nsinit.OpMkdir, sp+"/shm", itoa(0o1777), "-1", "-1")
	sc.Op(nsinit.OpFile, sp+"/passwd", itoa(0o644), "-1", "-1",
		fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\n", shown, shown, RunDir))
	sc.Op(nsinit.OpFile, sp+"/group", itoa(0o644), "-1", "-1", fmt.Sprintf("root:x:0:\nsandbox:x:%d:\n", shown))
	inView := nsinit.BindInView
	sc.Op(nsinit.OpBind, sp+"/tmp", "/tmp", itoa(inView|nsinit.BindWritable))
	sc.Op(nsinit.OpBind, sp+"/shm", "/dev/shm", itoa(inView|nsinit.BindWritable))
	sc.Op(nsinit.OpBind, sp+"/passwd", "/etc/passwd", itoa(inView|nsinit.BindFile))
	sc.Op(nsinit.OpBind, sp+"/group", "/etc/group", itoa(inView|nsinit.BindFile))
	if s.Dir == RunDir {
		sc.Op(nsinit.OpMkdir, sp+"/sandbox", itoa(0o755), itoa(owner), itoa(owner))
		sc.Op(nsinit.OpBind, sp+"/sandbox", RunDir, itoa(inView|nsinit.BindWritable))
		names := make([]string, 0, len(s.View.Files))
		for n := range s.View.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sc.Op(nsinit.OpFile, RunDir+"/"+filepath.Clean(n), itoa(0o644), itoa(owner), itoa(owner), string(s.View.Files[n]))
		}
	}
	links := make([]string, 0, len(s.View.Links))
	for n := range s.View.Links {
		links = append(links, n)
	}
	sort.Strings(links)
	for _, n := range links {
		sc.Op(nsinit.OpSymlink, s.View.Links[n], RunDir+"/"+n)
	}
	// Absolute paths outside the directories above get a directory of
	// their own at the top, in the step's space: nothing reaches the host.
	for _, top := range absoluteRoots(s.View.Abs, s.View.Fetch) {
		sc.Op(nsinit.OpMkdir, sp+"/abs", itoa(0o755), "-1", "-1")
		sc.Op(nsinit.OpMkdir, sp+"/abs"+top, itoa(0o755), itoa(owner), itoa(owner))
		sc.Op(nsinit.OpBind, sp+"/abs"+top, top, itoa(inView|nsinit.BindWritable))
	}
	names := make([]string, 0, len(s.View.Abs))
	for n := range s.View.Abs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sc.Op(nsinit.OpFile, n, itoa(0o644), itoa(owner), itoa(owner), string(s.View.Abs[n]))
	}
	sc.Op(nsinit.OpProc, "/proc")
}

// RunOps say what to run, as whom, and what to read back.
func RunOps(sc *nsinit.Script, s *Spec, uid int, argv []string, maxFetch int) {
	itoa := nsinit.Itoa
	gid := uid
	sc.Op(nsinit.OpExec, append([]string{s.Dir, itoa(uid), itoa(gid)}, argv...)...)
	sc.Op(nsinit.OpEnv, s.Env...)
	if len(s.View.Fetch) > 0 {
		sc.Op(nsinit.OpFetch, append([]string{itoa(maxFetch)}, s.View.Fetch...)...)
	}
}

// Reachable reports whether a user other than root can run p (read it,
// for a jar) inside the view: it lies in a bound tree, and every directory from the tree's root
// down, and p itself, are open to others.
func (v *View) Reachable(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	for _, b := range v.binds {
		if real != b.Source && !strings.HasPrefix(real, b.Source+"/") {
			continue
		}
		need := os.FileMode(0o001) // run by others; a jar is read
		if strings.HasSuffix(real, ".jar") {
			need = 0o004
		}
		fi, err := os.Stat(real)
		if err != nil || fi.Mode().Perm()&need == 0 {
			return false
		}
		for d := filepath.Dir(real); len(d) >= len(b.Source); d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil || fi.Mode().Perm()&0o001 == 0 {
				return false
			}
			if d == b.Source {
				break
			}
		}
		return true
	}
	return false
}
