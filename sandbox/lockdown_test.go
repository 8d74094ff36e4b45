//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/seccomp"
)

// probe is one call a contained program must be refused, with the errno
// it must get (1 EPERM, 38 ENOSYS) and its arguments.
type probe struct {
	name  string
	errno int
	args  []uint64
}

// lockdownProbes are the probes: a user namespace (with a network
// and a mount one), io_uring, the keyring, mount, bpf, perf events,
// userfaultfd, setns, and clone3 (ENOSYS, so that libc falls back).
var lockdownProbes = []probe{
	{"unshare", 1, []uint64{0x10000000 | 0x40000000 | 0x20000}},
	{"io_uring_setup", 1, []uint64{8, 0}},
	{"add_key", 1, []uint64{0, 0, 0, 0, 0}},
	{"keyctl", 1, []uint64{0, 0}},
	{"mount", 1, []uint64{0, 0, 0, 0, 0}},
	{"bpf", 1, []uint64{0, 0, 0}},
	{"perf_event_open", 1, []uint64{0, 0, ^uint64(0), ^uint64(0), 0}},
	{"userfaultfd", 1, []uint64{0}},
	{"setns", 1, []uint64{0, 0}},
	{"clone3", 38, []uint64{0, 0}},
}

// wantLockdown is what every probe program prints: each call and its
// errno, then the lines of /proc/self/status that say how it started.
func wantLockdown(t *testing.T, calls bool) string {
	t.Helper()
	var b strings.Builder
	if calls {
		for _, p := range lockdownProbes {
			fmt.Fprintf(&b, "%s %d\n", p.name, p.errno)
		}
	}
	b.WriteString("NoNewPrivs 1\nSeccomp 2\nCapInh 0000000000000000\nCapPrm 0000000000000000\nCapEff 0000000000000000\n" +
		"CapBnd 0000000000000000\nCapAmb 0000000000000000\n")
	return b.String()
}

func callNumber(t *testing.T, name string) uint64 {
	t.Helper()
	info := seccomp.Arches[runtime.GOARCH]
	if info == nil {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	n, ok := info.SyscallNames[name]
	if !ok {
		t.Fatalf("%s has no %s", runtime.GOARCH, name)
	}
	return uint64(n)
}

// callArgs are a probe's call number and its arguments, each written in
// format.
func callArgs(t *testing.T, p probe, format string) []string {
	args := []string{fmt.Sprint(callNumber(t, p.name))}
	for _, a := range p.args {
		args = append(args, fmt.Sprintf(format, a))
	}
	return args
}

const statusFields = `"NoNewPrivs", "Seccomp", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"`

func pythonProbe(t *testing.T) string {
	var b strings.Builder
	b.WriteString("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n")
	for _, p := range lockdownProbes {
		args := callArgs(t, p, "ctypes.c_ulong(%d)")
		fmt.Fprintf(
			&b,
			"r = libc.syscall(%s)\nprint(%q, 0 if r >= 0 else ctypes.get_errno())\n",
			strings.Join(args, ", "),
			p.name,
		)
	}
	b.WriteString("fields = dict(l.split(':', 1) for l in open('/proc/self/status'))\n")
	b.WriteString("for k in (" + statusFields + "):\n    print(k, fields[k].strip())\n")
	return b.String()
}

func cppProbe(t *testing.T) string {
	var b strings.Builder
	b.WriteString(
		"#include <cerrno>\n#include <cstdio>\n#include <fstream>\n#include <iostream>\n#include <map>\n#include <string>\n" +
			"#include <unistd.h>\n#include <sys/syscall.h>\nint main() {\n  long r;\n",
	)
	for _, p := range lockdownProbes {
		args := callArgs(t, p, "%dUL")
		fmt.Fprintf(&b, "  errno = 0; r = syscall(%s); std::cout << %q << ' ' << (r >= 0 ? 0 : errno) << '\\n';\n",
			strings.Join(args, ", "), p.name)
	}
	b.WriteString(`  std::map<std::string, std::string> f; std::ifstream in("/proc/self/status"); std::string line;
  while (std::getline(in, line)) { auto i = line.find(':'); auto v = line.substr(i + 1); auto j = v.find_first_not_of(" \t");
    f[line.substr(0, i)] = j == std::string::npos ? "" : v.substr(j); }
  for (const char *k : {` + statusFields + `}) std::cout << k << ' ' << f[k] << '\n';
}
`)
	return b.String()
}

func goProbe(t *testing.T) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n\t\"syscall\"\n)\n\nfunc main() {\n")
	for _, p := range lockdownProbes {
		args := callArgs(t, p, "%d")
		for len(args) < 7 {
			args = append(args, "0")
		}
		fmt.Fprintf(
			&b,
			"\tif _, _, e := syscall.RawSyscall6(%s); true {\n\t\tfmt.Println(%q, int(e))\n\t}\n",
			strings.Join(args, ", "),
			p.name,
		)
	}
	b.WriteString(`	data, _ := os.ReadFile("/proc/self/status")
	f := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			f[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{` + statusFields + `} {
		fmt.Println(k, f[k])
	}
}
`)
	return b.String()
}

// The JVM and Node make no raw system calls; they read their status and
// run unshare(1), whose call the filter refuses as it refuses theirs.
const javaProbe = `import java.nio.file.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        Map<String, String> f = new HashMap<>();
        for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
            int i = l.indexOf(':');
            f.put(l.substring(0, i), l.substring(i + 1).trim());
        }
        for (String k : new String[]{` + statusFields + `}) System.out.println(k + " " + f.get(k));
        Process p = new ProcessBuilder("unshare", "--user", "--net", "--mount", "true").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        System.out.println("unshare(1): " + p.waitFor() + " " + out);
    }
}
`

const nodeProbe = `const fs = require('fs');
const cp = require('child_process');
const f = {};
for (const l of fs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
  const i = l.indexOf(':');
  if (i > 0) f[l.slice(0, i)] = l.slice(i + 1).trim();
}
for (const k of [` + statusFields + `]) console.log(k + ' ' + f[k]);
const r = cp.spawnSync('unshare', ['--user', '--net', '--mount', 'true'], {encoding: 'utf8'});
console.log('unshare(1): ' + r.status + ' ' + (r.stdout + r.stderr).trim());
`

const unshareRefused = "unshare(1): 1 unshare: unshare failed: Operation not permitted\n"

// TestLockdownProbes runs the probes as programs of each language: every
// call is refused with its errno, and each program started with
// no_new_privs, under a filter, and without a capability it holds or
// could regain. Python runs both forked (from the server) and plainly.
func TestLockdownProbes(t *testing.T) {
	forked := sharedSandbox(t)
	needContained(t, forked)
	plain := newLocal(t, Options{NoFastPaths: true})
	cases := []struct {
		name, lang, code, want string
		l                      *Local
	}{
		{"python-forked", "python", pythonProbe(t), wantLockdown(t, true), forked},
		{"python-plain", "python", pythonProbe(t), wantLockdown(t, true), plain},
		{"cpp", "cpp", cppProbe(t), wantLockdown(t, true), forked},
		{"go", "go", goProbe(t), wantLockdown(t, true), forked},
		{"java", "java", javaProbe, wantLockdown(t, false) + unshareRefused, forked},
		{"nodejs", "nodejs", nodeProbe, wantLockdown(t, false) + unshareRefused, forked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needTools(t, c.l, c.lang)
			if (c.lang == "java" || c.lang == "nodejs") && c.l.tools["unshare"] == "" {
				if _, err := os.Stat("/usr/bin/unshare"); err != nil {
					t.Skip("no unshare(1) here")
				}
			}
			before := c.l.Stats().ForkedRuns
			resp := runCode(t, c.l, c.lang, c.code, 20, 1024)
			if got := resp.RunResult.Stdout; got != c.want {
				t.Fatalf("got\n%s\nwant\n%s\n%s", got, c.want, respText(resp, nil))
			}
			if c.name == "python-forked" && !plainPython && c.l.Stats().ForkedRuns == before {
				t.Error("the forked probe was not forked")
			}
		})
	}
}

// TestRunSpaceInodeBound: a program that makes empty files without end
// is stopped by the bound on its space's inodes (ENOSPC), not by the
// host's memory; /tmp, /dev/shm and its directory share the bound.
func TestRunSpaceInodeBound(t *testing.T) {
	l := sharedSandbox(t)
	needContained(t, l)
	code := `import errno, os
n = 0
try:
    while True:
        d = ("/tmp", "/dev/shm", ".")[n % 3]
        os.close(os.open("%s/f%d" % (d, n), os.O_CREAT | os.O_WRONLY))
        n += 1
except OSError as e:
    print(errno.errorcode[e.errno], n)
`
	resp := runCode(t, l, "python", code, 60, 1024)
	var name string
	var n int
	if _, err := fmt.Sscan(resp.RunResult.Stdout, &name, &n); err != nil || name != "ENOSPC" {
		t.Fatalf("want ENOSPC after some files; %s", respText(resp, nil))
	}
	if n > jail.Inodes || n < jail.Inodes-64 {
		t.Errorf("%d files before ENOSPC, want a little under the bound of %d", n, jail.Inodes)
	}
}

// TestSeccompOff: --seccomp=off says so as the sandbox starts, and its
// programs run without the filter, still with no capability and
// no_new_privs.
func TestSeccompOff(t *testing.T) {
	var warn bytes.Buffer
	l := newLocal(t, Options{NoSeccomp: true, Warn: &warn})
	needContained(t, l)
	if !strings.Contains(warn.String(), "WARNING: --seccomp=off") {
		t.Errorf("no warning; the sandbox said %q", warn.String())
	}
	code := "f = dict(l.split(':', 1) for l in open('/proc/self/status'))\nprint(f['NoNewPrivs'].strip(), f['Seccomp'].strip(), f['CapBnd'].strip())\n"
	resp := runCode(t, l, "python", code, 10, 1024)
	if got, want := resp.RunResult.Stdout, "1 0 0000000000000000\n"; got != want {
		t.Errorf("got %q, want %q; %s", got, want, respText(resp, nil))
	}
	if s := l.IsolationSummary(); !strings.Contains(s, "seccomp off") {
		t.Errorf("the sandbox describes itself as %q", s)
	}
}
