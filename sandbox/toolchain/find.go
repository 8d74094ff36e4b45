// Package toolchain finds the programs the embedded sandbox runs (the real
// binaries, not version managers' shims) and builds, once per machine, the
// caches its fast paths use: the precompiled C++ header, javac's
// class-data archive and the Go module cache.
package toolchain

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
)

// Toolchain is one program the local sandbox uses, as found on this
// machine.
type Toolchain struct {
	Language string
	Program  string
	Path     string
	Version  string
	Found    bool
}

// order lists every program of the language registry once, with the
// languages it serves.
var order = func() []struct{ lang, prog string } {
	var out []struct{ lang, prog string }
	at := map[string]int{}
	for _, l := range lang.All() {
		for _, prog := range l.Programs() {
			if i, ok := at[prog]; ok {
				out[i].lang += ", " + l.Name
				continue
			}
			at[prog] = len(out)
			out = append(out, struct{ lang, prog string }{l.Name, prog})
		}
	}
	return out
}()

// Find resolves every program to an absolute path of the real binary
// (not a version manager's shim, which would cost a process per run and
// may not be reachable by an unprivileged user). rootOnly lists those an
// unprivileged user cannot reach, when steps run as such a user.
func Find(unprivileged bool) (tools map[string]string, rootOnly map[string]bool) {
	tools = map[string]string{}
	rootOnly = map[string]bool{}
	for _, t := range order {
		p := Resolve(t.prog)
		tools[t.prog] = p
		if p != "" && unprivileged && !ReachableByOthers(p) {
			rootOnly[t.prog] = true
		}
	}
	return tools, rootOnly
}

func Resolve(prog string) string {
	switch prog {
	case "python3":
		if IsExecutable("/usr/bin/python3") {
			return "/usr/bin/python3"
		}
		if p, err := exec.LookPath("python3"); err == nil {
			if out, err := quickOutput(p, "-c", "import sys; print(sys.executable)"); err == nil {
				if real := strings.TrimSpace(out); real != "" && IsExecutable(real) {
					return real
				}
			}
			return p
		}
		return ""
	case lang.NodeRuntime:
		return FindNodeRuntime()
	case lang.JUnitConsole:
		// A jar, not a program: java runs it.
		if fi, err := os.Stat(junitConsoleJar); err == nil && fi.Mode().IsRegular() {
			return junitConsoleJar
		}
		return ""
	case "bash": // the program, not the language
		if IsExecutable("/bin/bash") {
			return "/bin/bash"
		}
	case "rustc":
		// rustup's proxy needs its home; the toolchain's own rustc does not.
		if p, err := exec.LookPath("rustc"); err == nil {
			if out, err := quickOutput(p, "--print", "sysroot"); err == nil {
				real := filepath.Join(strings.TrimSpace(out), "bin", "rustc")
				if IsExecutable(real) {
					return real
				}
			}
			return p
		}
		return ""
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}

func IsExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// ReachableByOthers reports whether a user other than the owner can run p
// (read it, for a jar): every directory on the way must be searchable by
// others.
func ReachableByOthers(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	need := fs.FileMode(0o001)
	if strings.HasSuffix(real, ".jar") {
		need = 0o004
	}
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm()&need == 0 {
		return false
	}
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

func quickOutput(prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	return string(out), err
}

// ChildPath is the PATH of a step: the toolchains' directories, then the
// system's.
func ChildPath(tools map[string]string) string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, t := range order {
		if p := tools[t.prog]; p != "" {
			add(filepath.Dir(p))
		}
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		add(d)
	}
	return strings.Join(dirs, ":")
}

// Toolchains reports the programs the local sandbox would use and their
// versions, for `verl-score doctor`.
func Toolchains() []Toolchain {
	var out []Toolchain
	for _, t := range order {
		out = append(out, toolchain(t.lang, t.prog))
	}
	return out
}

// ToolchainsOf are the programs the given languages run with, and their
// versions: what a run that used them depended on.
func ToolchainsOf(langs []string) []Toolchain {
	var out []Toolchain
	seen := map[string]bool{}
	for _, name := range langs {
		spec := lang.Get(name)
		if spec == nil {
			continue
		}
		for _, prog := range spec.Programs() {
			if !seen[prog] {
				seen[prog] = true
				out = append(out, toolchain(name, prog))
			}
		}
	}
	return out
}

// toolchain finds prog and asks it its version.
func toolchain(language, prog string) Toolchain {
	tc := Toolchain{Language: language, Program: prog, Path: Resolve(prog)}
	tc.Found = tc.Path != ""
	if tc.Found {
		if v, err := quickOutput(tc.Path, lang.VersionArgs(prog)...); err == nil {
			tc.Version = strings.TrimSpace(strings.SplitN(v, "\n", 2)[0])
		}
	}
	return tc
}

// Identity names this machine's embedded sandbox for a result cache: the
// isolation asked for and every toolchain with its version, so that an
// answer kept under one toolchain is not reused under another.
func Identity(isolation string) string {
	var b strings.Builder
	b.WriteString("embedded sandbox, isolation " + isolation)
	for _, t := range Toolchains() {
		fmt.Fprintf(&b, "\n%s %s %s", t.Program, t.Path, t.Version)
	}
	return b.String()
}

// nodeRuntimeDirs are where the runtime is looked for, after
// $VERL_SCORE_NODE_RUNTIME.
var nodeRuntimeDirs = []string{"/usr/local/lib/verl-score/node"}

func FindNodeRuntime() string {
	dirs := nodeRuntimeDirs
	if d := os.Getenv("VERL_SCORE_NODE_RUNTIME"); d != "" {
		dirs = []string{d}
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, "node_modules")); err == nil && fi.IsDir() {
			if abs, err := filepath.Abs(d); err == nil {
				return abs
			}
		}
	}
	return ""
}

// junitConsoleJar is where Debian's junit5 puts JUnit 5's console launcher.
const junitConsoleJar = "/usr/share/java/junit-platform-console-standalone.jar"

// GoCacheDir is the Go build cache of the sandbox's compiles. It is shared
// by every Local and outlives them, like the go command's own cache, so that
// the standard library is compiled once per machine, not once per process.
// Only root-run or same-user go commands write it.
func GoCacheDir(tempDir string) string {
	if d, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(d, "verl-score", "go-build")
		if os.MkdirAll(p, 0o700) == nil {
			return p
		}
	}
	return filepath.Join(tempDir, fmt.Sprintf("verl-score-go-build-%d", os.Getuid()))
}

// Programs are every program the registry's languages need, once each, in
// the registry's order.
func Programs() []string {
	out := make([]string, len(order))
	for i, t := range order {
		out[i] = t.prog
	}
	return out
}
