//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/seccomp"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
)

// Protections reports which containment measures this host allows the
// local sandbox, for `verl-score doctor`.
func Protections() []Protection {
	var iso jail.Isolation
	var rootOnly map[string]bool
	viewErr := "needs mount and PID namespaces"
	// A real sandbox, so that the view is proved by a step, as run does.
	var notes strings.Builder
	cgUsed, cgDetail := false, "needs a sandbox"
	if l, err := New(Options{Warn: &notes, Concurrency: 1}); err == nil {
		iso, rootOnly = l.j.Iso, l.rootOnly
		cgUsed, cgDetail = l.j.Cgroups != nil, l.cgroupNote
		if cgUsed {
			cgDetail = l.j.Cgroups.Describe()
		}
		l.Close()
	} else {
		iso = jail.Probe(false, false)
		_, rootOnly = toolchain.Find(iso.PerRunUser)
	}
	if i := strings.Index(notes.String(), "filesystem view of its own per run"); i >= 0 {
		viewErr = strings.TrimSpace(notes.String()[i:])
	}
	var unreachable []string
	for _, prog := range toolchain.Programs() {
		if !rootOnly[prog] {
			continue
		}
		if prog == "rustc" && !iso.Contained {
			if f := openSysroot(toolchain.Resolve("rustc")); f != nil {
				f.Close() // reached through an open directory instead
				continue
			}
		}
		unreachable = append(unreachable, prog)
	}
	ps := []Protection{
		{Name: "fresh directory per run", Available: true, Detail: "created for each step, removed afterwards"},
		{Name: "scrubbed environment", Available: true, Detail: "only PATH, HOME, TMPDIR, LANG and toolchain settings"},
		{Name: "process group", Available: true, Detail: "the whole group is killed on timeout and after exit"},
		{Name: "resource limits", Available: toolchain.IsExecutable(jail.WrapperShell),
			Detail: "address space (memory_limit_MB; heap flags for JVM and Node.js), CPU time, file size, " +
				"open files, via " + jail.WrapperShell},
		{Name: "per-run user", Available: iso.PerRunUser,
			Detail: pick(
				iso.PerRunUser,
				"each step runs as a user of its own: fork bombs are bounded, leftover processes and files are removed",
				"needs root",
			)},
		{Name: "process-count limit", Available: iso.PerRunUser && iso.NprocFlag != "",
			Detail: pick(iso.PerRunUser, "per step user", "needs a per-run user")},
		{Name: "network namespace", Available: iso.NetNS,
			Detail: pick(iso.NetNS, "steps have no network", "the kernel refused a new network namespace")},
		{Name: "filesystem view", Available: iso.Contained,
			Detail: pick(iso.Contained, "a mount namespace per step: toolchains read-only, a "+fmt.Sprint(jail.SizeMB)+
				" MiB tmpfs for its directory and /tmp, no host path (input, output, project, /root) visible", viewErr)},
		{Name: "PID namespace", Available: iso.Contained,
			Detail: pick(
				iso.Contained,
				"a step sees only its own processes; its init reaps them and the kernel kills what is left when it ends",
				"needs the filesystem view; leftover processes are found by user instead",
			)},
		{Name: "IPC namespace", Available: iso.Contained,
			Detail: pick(
				iso.Contained,
				"the System V shared memory, semaphores and message queues of a step vanish with it",
				"needs the filesystem view",
			)},
		{Name: "no privileges", Available: iso.Contained,
			Detail: pick(
				iso.Contained,
				"every program starts with empty capability sets (bounding, ambient, inheritable included) and no_new_privs",
				"needs the filesystem view's init: programs keep what the host gives this user",
			)},
		filterProtection(iso.Contained),
		{Name: "cgroup per run", Available: cgUsed,
			Detail: pick(
				cgUsed,
				"an equal CPU weight per run, a bound on a run's total memory and processes, its CPU time measured: ",
				"runs share the CPU with no weight of their own; memory and processes bounded per process only: ",
			) + cgDetail},
	}
	if len(unreachable) > 0 {
		ps = append(ps, Protection{Name: "unprivileged toolchains", Available: false,
			Detail: "not reachable by an unprivileged user, so run as root: " + strings.Join(unreachable, ", ")})
	}
	return ps
}

// filterProtection is doctor's line on the seccomp filter.
func filterProtection(contained bool) Protection {
	p := Protection{Name: "seccomp filter"}
	f, err := seccomp.Host()
	switch {
	case err != nil:
		p.Detail = err.Error() + ": the sandbox does not start without --seccomp=off"
	case !contained:
		p.Detail = "needs the filesystem view's init (built: " + f.Summary() + ")"
	default:
		p.Available, p.Detail = true, f.Summary()+" (verl-score doctor --seccomp lists it)"
	}
	return p
}

// Filter is the seccomp filter contained programs start under on this
// host, for `verl-score doctor --seccomp`.
func Filter() (*seccomp.Filter, error) { return seccomp.Host() }

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
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
		resp, err := l.Run(
			ctx,
			&sandboxclient.Request{Language: "python", Code: "print(1)", RunTimeout: 10, MemoryLimitMB: 1024},
		)
		using, detail := l.forks.State()
		if using && l.Stats().ForkedRuns == 0 {
			using, detail = false, "plain starts: the fork server did not serve"
		}
		if err != nil || resp.RunResult == nil || resp.RunResult.Stdout != "1\n" {
			using, detail = false, "a probe run failed: "+respSummary(resp, err)
		}
		out = append(out, Protection{Name: "python: fork server", Available: using, Detail: detail})
	}
	if l.tools["g++"] != "" {
		l.caches.WaitPCH(ctx)
		using, detail := l.caches.PCHState()
		out = append(out, Protection{Name: "cpp: precompiled header", Available: using, Detail: detail})
	}
	if l.tools["javac"] != "" {
		l.caches.WaitJavacArchive(ctx)
		using, detail := l.caches.JavacArchiveState()
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
	tools, _ := toolchain.Find(false)
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
	mode := l.opts.Isolation.String()
	var in []string
	if l.j.Iso.Contained {
		in = append(in, "filesystem view", "PID and IPC namespaces")
	}
	if l.j.Iso.Contained {
		in = append(in, "no privileges")
		if l.filter != nil {
			in = append(in, "seccomp filter sha256:"+l.filter.Digest()[:16])
		} else {
			in = append(in, "seccomp off")
		}
	}
	if l.j.Iso.NetNS {
		in = append(in, "no network")
	}
	if l.j.Iso.PerRunUser {
		in = append(in, "a user per run")
	}
	if l.j.Cgroups != nil {
		in = append(in, "a cgroup per run")
	}
	if len(in) == 0 {
		return mode + " (resource limits only)"
	}
	return mode + " (" + strings.Join(in, ", ") + ")"
}
