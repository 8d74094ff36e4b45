package sandbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandboxclient"
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

// Protection is one containment measure and whether this host allows it.
type Protection struct {
	Name      string
	Available bool
	Detail    string
}

// toolOrder lists every program of the language registry once, with the
// languages it serves.
var toolOrder = func() []struct{ lang, prog string } {
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

// findTools resolves every program to an absolute path of the real binary
// (not a version manager's shim, which would cost a process per run and
// may not be reachable by an unprivileged user). rootOnly lists those an
// unprivileged user cannot reach, when steps run as such a user.
func findTools(unprivileged bool) (tools map[string]string, rootOnly map[string]bool) {
	tools = map[string]string{}
	rootOnly = map[string]bool{}
	for _, t := range toolOrder {
		p := resolveTool(t.prog)
		tools[t.prog] = p
		if p != "" && unprivileged && !reachableByOthers(p) {
			rootOnly[t.prog] = true
		}
	}
	return tools, rootOnly
}

func resolveTool(prog string) string {
	switch prog {
	case "python3":
		if isExecutable("/usr/bin/python3") {
			return "/usr/bin/python3"
		}
		if p, err := exec.LookPath("python3"); err == nil {
			if out, err := quickOutput(p, "-c", "import sys; print(sys.executable)"); err == nil {
				if real := strings.TrimSpace(out); real != "" && isExecutable(real) {
					return real
				}
			}
			return p
		}
		return ""
	case lang.NodeRuntime:
		return findNodeRuntime()
	case lang.JUnitConsole:
		// A jar, not a program: java runs it.
		if fi, err := os.Stat(junitConsoleJar); err == nil && fi.Mode().IsRegular() {
			return junitConsoleJar
		}
		return ""
	case "bash":
		if isExecutable("/bin/bash") {
			return "/bin/bash"
		}
	case "rustc":
		// rustup's proxy needs its home; the toolchain's own rustc does not.
		if p, err := exec.LookPath("rustc"); err == nil {
			if out, err := quickOutput(p, "--print", "sysroot"); err == nil {
				real := filepath.Join(strings.TrimSpace(out), "bin", "rustc")
				if isExecutable(real) {
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

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// reachableByOthers reports whether a user other than the owner can run p
// (read it, for a jar): every directory on the way must be searchable by
// others.
func reachableByOthers(p string) bool {
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

// childPath is the PATH of a step: the toolchains' directories, then the
// system's.
func childPath(tools map[string]string) string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, t := range toolOrder {
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
	for _, t := range toolOrder {
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
func toolchain(lang, prog string) Toolchain {
	tc := Toolchain{Language: lang, Program: prog, Path: resolveTool(prog)}
	tc.Found = tc.Path != ""
	if tc.Found {
		args := []string{"--version"}
		switch prog {
		case "go":
			args = []string{"version"}
		case "java", "javac":
			args = []string{"-version"}
		}
		if v, err := quickOutput(tc.Path, args...); err == nil {
			tc.Version = strings.TrimSpace(strings.SplitN(v, "\n", 2)[0])
		}
	}
	return tc
}

// Protections reports which containment measures this host allows the
// local sandbox, for `verl-score doctor`.
func Protections() []Protection {
	var iso isolation
	var rootOnly map[string]bool
	viewErr := "needs mount and PID namespaces"
	// A real sandbox, so that the view is proved by a step, as run does.
	var notes strings.Builder
	cgUsed, cgDetail := false, "needs a sandbox"
	if l, err := New(Options{Warn: &notes, Concurrency: 1}); err == nil {
		iso, rootOnly = l.iso, l.rootOnly
		cgUsed, cgDetail = l.Cgroups()
		l.Close()
	} else {
		iso = probeIsolation(IsolationAuto)
		_, rootOnly = findTools(iso.perRunUser)
	}
	if i := strings.Index(notes.String(), "filesystem view of its own per run"); i >= 0 {
		viewErr = strings.TrimSpace(notes.String()[i:])
	}
	var unreachable []string
	for _, t := range toolOrder {
		if !rootOnly[t.prog] {
			continue
		}
		if t.prog == "rustc" && !iso.contained {
			if f := openSysroot(resolveTool("rustc")); f != nil {
				f.Close() // reached through an open directory instead
				continue
			}
		}
		unreachable = append(unreachable, t.prog)
	}
	ps := []Protection{
		{Name: "fresh directory per run", Available: true, Detail: "created for each step, removed afterwards"},
		{Name: "scrubbed environment", Available: true, Detail: "only PATH, HOME, TMPDIR, LANG and toolchain settings"},
		{Name: "process group", Available: true, Detail: "the whole group is killed on timeout and after exit"},
		{Name: "resource limits", Available: isExecutable(wrapperShell),
			Detail: "address space (memory_limit_MB; heap flags for JVM and Node.js), CPU time, file size, open files, via " + wrapperShell},
		{Name: "per-run user", Available: iso.perRunUser,
			Detail: pick(iso.perRunUser, "each step runs as a user of its own: fork bombs are bounded, leftover processes and files are removed",
				"needs root")},
		{Name: "process-count limit", Available: iso.perRunUser && iso.nprocFlag != "",
			Detail: pick(iso.perRunUser, "per step user", "needs a per-run user")},
		{Name: "network namespace", Available: iso.netns,
			Detail: pick(iso.netns, "steps have no network", "the kernel refused a new network namespace")},
		{Name: "filesystem view", Available: iso.contained,
			Detail: pick(iso.contained, "a mount namespace per step: toolchains read-only, a "+fmt.Sprint(viewSizeMB)+
				" MiB tmpfs for its directory and /tmp, no host path (input, output, project, /root) visible", viewErr)},
		{Name: "PID namespace", Available: iso.contained,
			Detail: pick(iso.contained, "a step sees only its own processes; its init reaps them and the kernel kills what is left when it ends",
				"needs the filesystem view; leftover processes are found by user instead")},
		{Name: "IPC namespace", Available: iso.contained,
			Detail: pick(iso.contained, "the System V shared memory, semaphores and message queues of a step vanish with it", "needs the filesystem view")},
		{Name: "cgroup per run", Available: cgUsed,
			Detail: pick(cgUsed, "an equal CPU weight per run, a bound on a run's total memory and processes, its CPU time measured: ",
				"runs share the CPU with no weight of their own; memory and processes bounded per process only: ") + cgDetail},
	}
	if len(unreachable) > 0 {
		ps = append(ps, Protection{Name: "unprivileged toolchains", Available: false,
			Detail: "not reachable by an unprivileged user, so run as root: " + strings.Join(unreachable, ", ")})
	}
	return ps
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
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

// FastPaths reports which fast path each language takes here, for
// `verl-score doctor`: it starts a sandbox and runs a Python program
// through it, and waits for the precompiled C++ header and javac's archive
// (built the first time on a machine).
func FastPaths() []Protection {
	l, err := New(Options{Warn: io.Discard, Concurrency: 1})
	if err != nil {
		return []Protection{{Name: "fast paths", Detail: "no sandbox: " + err.Error()}}
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out []Protection
	if l.tools["python3"] != "" {
		resp, err := l.Run(ctx, &sandboxclient.Request{Language: "python", Code: "print(1)", RunTimeout: 10, MemoryLimitMB: 1024})
		using, detail := l.ForkServerState()
		if using && l.Stats().ForkedRuns == 0 {
			using, detail = false, "plain starts: the fork server did not serve"
		}
		if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "1\n" {
			using, detail = false, "a probe run failed: "+respSummary(resp, err)
		}
		out = append(out, Protection{Name: "python: fork server", Available: using, Detail: detail})
	}
	if l.tools["g++"] != "" {
		l.waitPCH(ctx)
		using, detail := l.PCHState()
		out = append(out, Protection{Name: "cpp: precompiled header", Available: using, Detail: detail})
	}
	if l.tools["javac"] != "" {
		l.waitJavacArchive(ctx)
		using, detail := l.JavacArchiveState()
		out = append(out, Protection{Name: "java: javac class-data archive", Available: using, Detail: detail})
	}
	return out
}

func respSummary(resp *sandboxclient.Response, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case resp.RunResult == nil:
		return resp.Status + " " + resp.Message
	}
	return fmt.Sprintf("%s: %q", resp.Status, resp.RunResult.Stderr)
}

// Languages reports, for every language verl may send, whether this
// machine's embedded sandbox runs it and, where not, what it would need.
func Languages() []Protection {
	tools, _ := findTools(false)
	var out []Protection
	for _, spec := range lang.All() {
		p := Protection{Name: spec.Name}
		switch {
		case !spec.Runnable():
			p.Detail = "no runner here; SandboxError. Would need " + spec.Packages()
		default:
			var missing, found []string
			for _, prog := range spec.Programs() {
				if tools[prog] == "" {
					missing = append(missing, prog)
				} else {
					found = append(found, tools[prog])
				}
			}
			p.Available = len(missing) == 0
			if p.Available {
				p.Detail = strings.Join(found, ", ")
			} else {
				p.Detail = strings.Join(missing, ", ") + " missing: install " + spec.Packages()
			}
		}
		out = append(out, p)
	}
	return out
}

// RunnableLanguages are the verl languages this sandbox runs: those with a
// runner whose programs were all found.
func (l *Local) RunnableLanguages() []string {
	var out []string
	for _, spec := range lang.All() {
		if !spec.Runnable() {
			continue
		}
		all := true
		for _, prog := range spec.Programs() {
			if l.tools[prog] == "" {
				all = false
			}
		}
		if all {
			out = append(out, spec.Name)
		}
	}
	return out
}

// IsolationSummary names the mode and the protections in force, for a
// start line: "auto (view, pid, net, user per run, cgroup v1)".
func (l *Local) IsolationSummary() string {
	mode := map[IsolationMode]string{IsolationAuto: "auto", IsolationBasic: "basic", IsolationNone: "none"}[l.opts.Isolation]
	var in []string
	if l.iso.contained {
		in = append(in, "filesystem view", "PID and IPC namespaces")
	}
	if l.iso.netns {
		in = append(in, "no network")
	}
	if l.iso.perRunUser {
		in = append(in, "a user per run")
	}
	if l.cg != nil {
		in = append(in, "a cgroup per run")
	}
	if len(in) == 0 {
		return mode + " (resource limits only)"
	}
	return mode + " (" + strings.Join(in, ", ") + ")"
}
