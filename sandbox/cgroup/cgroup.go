//go:build linux

// Package cgroup gives each sandbox run a control group of its own: an
// equal CPU weight beside the other runs (a program of many threads gets
// one run's share, with no hard cap), a bound on the memory of all its
// processes together, a bound on their number, and the CPU time they used.
//
// It works on cgroup v2 (one hierarchy) and on v1 (a hierarchy per
// controller: cpu, cpuacct, memory, pids), with whatever subset of the
// controllers the host lets us use; without any it reports why, and the
// sandbox keeps its per-process limits alone.
//
// Layout: a group for the whole sandbox, verl-score-PID, under the
// cgroup this process is in (so that whatever bounds the process bounds
// the runs too), and below it one group per run slot, reused from run to
// run. The sandbox's group weighs as many runs as it runs at once, so
// that on a busy host each run weighs as one process of the host does.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of one run's group.
type Limits struct {
	MemoryBytes int64 // all processes together; 0: no bound
	Pids        int   // processes and threads together; 0: no bound
}

// Manager is the sandbox's group and the pool of its runs' groups.
type Manager struct {
	v2      bool
	dirs    map[string]string // controller -> the sandbox's group there (v2: one dir for all)
	missing []string          // controllers not used, with why

	mu     sync.Mutex
	free   []*Run
	all    map[*Run]bool
	closed bool
}

// runNames numbers the runs' groups process-wide: every Manager of a
// process has its group at the same place (verl-score-PID), so their
// runs' groups must not share names (one Manager's Close would remove
// another's groups).
var runNames atomic.Int64

// controllers the sandbox uses. cpuacct is v1's CPU time; v2's cpu has it.
var controllers = []string{"cpu", "cpuacct", "memory", "pids"}

// mount is one cgroup hierarchy as this process sees it.
type mount struct {
	point string // where it is mounted
	root  string // the path in the hierarchy that is mounted there
	v2    bool
	ctrls []string
}

// New makes the sandbox's group. weight is how many runs it weighs as:
// its CPU share beside the host's other processes. The error says why no
// group could be made; the caller goes on without one.
func New(weight int) (*Manager, error) {
	return newAt("/proc/self", weight)
}

func newAt(proc string, weight int) (*Manager, error) {
	mounts, err := readMounts(proc + "/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := readOwn(proc + "/cgroup")
	if err != nil {
		return nil, err
	}
	name := "verl-score-" + strconv.Itoa(os.Getpid())
	m := &Manager{dirs: map[string]string{}, all: map[*Run]bool{}}
	// v2 where it holds the controllers; else v1, each where it is.
	for _, mt := range mounts {
		if !mt.v2 {
			continue
		}
		parent, ok := within(mt, own[""])
		if !ok {
			continue
		}
		avail := strings.Fields(readString(filepath.Join(parent, "cgroup.controllers")))
		if !slices.Contains(avail, "cpu") && !slices.Contains(avail, "memory") && !slices.Contains(avail, "pids") {
			break
		}
		dir, err := makeV2(parent, name, avail)
		if err != nil {
			return nil, fmt.Errorf("cgroup v2 at %s: %w", parent, err)
		}
		m.v2 = true
		for _, c := range []string{"cpu", "memory", "pids"} {
			if slices.Contains(avail, c) {
				m.dirs[c] = dir
			} else {
				m.missing = append(m.missing, c+" (not delegated to "+parent+")")
			}
		}
		m.dirs["cpuacct"] = dir // cpu.stat's usage is there without the cpu controller
		break
	}
	if !m.v2 {
		for _, c := range controllers {
			var found bool
			for _, mt := range mounts {
				if mt.v2 || !slices.Contains(mt.ctrls, c) {
					continue
				}
				found = true
				parent, ok := within(mt, own[c])
				if !ok {
					m.missing = append(m.missing, c+" (this process's group is not under its mount)")
					break
				}
				sweep(parent)
				dir := filepath.Join(parent, name)
				if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
					m.missing = append(m.missing, c+" ("+err.Error()+")")
					break
				}
				m.dirs[c] = dir
				break
			}
			if !found {
				m.missing = append(m.missing, c+" (not mounted)")
			}
		}
	}
	if len(m.dirs) == 0 {
		return nil, fmt.Errorf("no cgroup controller can be used: %s", strings.Join(m.missing, ", "))
	}
	if weight < 1 {
		weight = 1
	}
	if d, ok := m.dirs["cpu"]; ok {
		if m.v2 {
			writeFile(d, "cpu.weight", strconv.Itoa(min(100*weight, 10000)))
		} else {
			writeFile(d, "cpu.shares", strconv.Itoa(min(1024*weight, 262144)))
		}
	}
	return m, nil
}

// makeV2 makes the sandbox's group under parent with the controllers
// enabled for its children. A v2 group that holds processes cannot enable
// controllers for children (the kernel's "no internal processes" rule);
// where parent holds only this process, it moves to a leaf of its own.
func makeV2(parent, name string, avail []string) (string, error) {
	var enable []string
	for _, c := range []string{"cpu", "memory", "pids"} {
		if slices.Contains(avail, c) {
			enable = append(enable, "+"+c)
		}
	}
	ctl := strings.Join(enable, " ")
	if err := writeFile(parent, "cgroup.subtree_control", ctl); err != nil {
		procs := strings.Fields(readString(filepath.Join(parent, "cgroup.procs")))
		if !errors.Is(err, syscall.EBUSY) || len(procs) != 1 || procs[0] != strconv.Itoa(os.Getpid()) {
			return "", fmt.Errorf("enable %s for child groups: %w", ctl, err)
		}
		leaf := filepath.Join(parent, name+"-supervisor")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if err := writeFile(leaf, "cgroup.procs", "0"); err != nil {
			return "", fmt.Errorf("move this process to a leaf group: %w", err)
		}
		if err := writeFile(parent, "cgroup.subtree_control", ctl); err != nil {
			return "", fmt.Errorf("enable %s for child groups: %w", ctl, err)
		}
	}
	sweep(parent)
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if err := writeFile(dir, "cgroup.subtree_control", ctl); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("enable %s for run groups: %w", ctl, err)
	}
	return dir, nil
}

// Describe is a line for doctor: the version, the controllers in use and
// where, and what is missing.
func (m *Manager) Describe() string {
	var used []string
	for _, c := range controllers {
		if _, ok := m.dirs[c]; ok {
			used = append(used, c)
		}
	}
	v := "v1"
	if m.v2 {
		v = "v2"
	}
	s := fmt.Sprintf("cgroup %s (%s)", v, strings.Join(used, ", "))
	if d, ok := m.dirs["cpu"]; ok {
		s += " under " + d
	}
	if len(m.missing) > 0 {
		s += "; not used: " + strings.Join(m.missing, ", ")
	}
	return s
}

// Has reports whether the controller is in use.
func (m *Manager) Has(controller string) bool {
	_, ok := m.dirs[controller]
	return ok
}

// Run is one run's group (a directory in each hierarchy).
type Run struct {
	m     *Manager
	dir   map[string]string // controller -> directory
	dirs  []string          // distinct directories, one per hierarchy
	procs []*os.File
	acct  string // where its CPU time is read
	start time.Duration
	// The file the CPU time is read from at every run (cpuacct.usage, or
	// in v2 cpu.stat), kept open and read from its start (acctFile nil
	// where it could not be opened: read by name). Not cgroup.procs: in
	// v1 an open one keeps answering from the list of its first read for
	// a while.
	acctPath string
	acctFile *os.File
	// The bounds last written (a group comes back from its last run
	// with them, and most runs have the same).
	mem, pids string
}

// Get hands out a run's group, empty and limited as lim says; Put takes
// it back.
func (m *Manager) Get(lim Limits) (*Run, error) {
	m.mu.Lock()
	var r *Run
	if n := len(m.free); n > 0 {
		r = m.free[n-1]
		m.free = m.free[:n-1]
	} else if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the sandbox's cgroup is closed")
	}
	name := "run-" + strconv.FormatInt(runNames.Add(1), 10)
	m.mu.Unlock()
	if r == nil {
		var err error
		if r, err = m.make(name); err != nil {
			return nil, err
		}
	}
	if err := r.limit(lim); err != nil {
		m.drop(r)
		return nil, err
	}
	r.start = 0
	r.start = r.CPU()
	return r, nil
}

// make makes a run's group: a directory in each hierarchy.
func (m *Manager) make(name string) (*Run, error) {
	r := &Run{m: m, dir: map[string]string{}}
	seen := map[string]bool{}
	for _, c := range controllers {
		parent, ok := m.dirs[c]
		if !ok {
			continue
		}
		dir := filepath.Join(parent, name)
		r.dir[c] = dir
		if c == "cpuacct" {
			r.acct = dir
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			r.remove()
			return nil, fmt.Errorf("make a run's cgroup: %w", err)
		}
		r.dirs = append(r.dirs, dir)
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			r.remove()
			return nil, fmt.Errorf("open a run's cgroup: %w", err)
		}
		r.procs = append(r.procs, f)
	}
	if r.acct != "" {
		r.acctPath = filepath.Join(r.acct, "cpuacct.usage")
		if m.v2 {
			r.acctPath = filepath.Join(r.acct, "cpu.stat")
		}
		r.acctFile, _ = os.Open(r.acctPath)
	}
	var err error
	if d, ok := r.dir["cpu"]; ok {
		if m.v2 {
			err = writeFile(d, "cpu.weight", "100")
		} else {
			err = writeFile(d, "cpu.shares", "1024")
		}
	}
	if err != nil {
		r.remove()
		return nil, fmt.Errorf("weigh a run's cgroup: %w", err)
	}
	m.mu.Lock()
	m.all[r] = true
	m.mu.Unlock()
	return r, nil
}

// limit sets the group's memory and process bounds ("max": none).
func (r *Run) limit(lim Limits) error {
	mem, pids := "max", "max"
	if lim.MemoryBytes > 0 {
		mem = strconv.FormatInt(lim.MemoryBytes, 10)
	}
	if lim.Pids > 0 {
		pids = strconv.Itoa(lim.Pids)
	}
	if d, ok := r.dir["memory"]; ok && mem != r.mem {
		var err error
		if r.m.v2 {
			err = writeFile(d, "memory.max", mem)
		} else {
			if mem == "max" {
				mem = "-1"
			}
			err = writeFile(d, "memory.limit_in_bytes", mem)
		}
		if err != nil {
			r.mem = ""
			return fmt.Errorf("bound a run's memory: %w", err)
		}
		r.mem = mem
	}
	if d, ok := r.dir["pids"]; ok && pids != r.pids {
		if err := writeFile(d, "pids.max", pids); err != nil {
			r.pids = ""
			return fmt.Errorf("bound a run's processes: %w", err)
		}
		r.pids = pids
	}
	return nil
}

func (m *Manager) drop(r *Run) {
	r.Kill()
	r.remove()
	m.mu.Lock()
	delete(m.all, r)
	m.mu.Unlock()
}

// JoinFiles are the group's cgroup.procs files, open for writing: a
// process joins the group by writing "0" to each. A run's first process
// joins before it starts the program, so that nothing of the run is ever
// outside the group.
func (r *Run) JoinFiles() []*os.File { return r.procs }

// Join moves process pid into the group.
func (r *Run) Join(pid int) error {
	for _, f := range r.procs {
		if _, err := f.WriteString(strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("join a run's cgroup: %w", err)
		}
	}
	return nil
}

// CPU is the CPU time the group's processes used since Get, dead ones
// included; 0 where the host does not account it.
func (r *Run) CPU() time.Duration {
	if r.acct == "" {
		return 0
	}
	var total time.Duration
	if r.m.v2 {
		for _, line := range strings.Split(r.readAcct(), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, _ := strconv.ParseInt(v, 10, 64)
				total = time.Duration(us) * time.Microsecond
			}
		}
	} else {
		ns, _ := strconv.ParseInt(strings.TrimSpace(r.readAcct()), 10, 64)
		total = time.Duration(ns)
	}
	return total - r.start
}

// Pids are the processes in the group now.
func (r *Run) Pids() []int {
	var out []int
	if len(r.dirs) == 0 {
		return nil
	}
	// Every hierarchy holds the same processes; the pids one (or any) tells.
	for _, f := range strings.Fields(readString(filepath.Join(r.dirs[len(r.dirs)-1], "cgroup.procs"))) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Kill ends every process in the group and waits, a bounded while, for
// the group to be empty; it reports whether it is.
func (r *Run) Kill() bool {
	if len(r.dirs) == 0 {
		return true
	}
	if r.m.v2 {
		writeFile(r.dirs[0], "cgroup.kill", "1") // 5.14 and later
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids := r.Pids()
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Put gives the group back once every process in it has ended; a group
// that does not empty is dropped (removed at Close, or left to the host).
func (m *Manager) Put(r *Run) {
	if !r.Kill() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		r.remove()
		delete(m.all, r)
		return
	}
	m.free = append(m.free, r)
}

func (r *Run) remove() {
	for _, f := range r.procs {
		f.Close()
	}
	if r.acctFile != nil {
		r.acctFile.Close()
	}
	for _, d := range r.dirs {
		os.Remove(d)
	}
}

// Close removes every run's group and the sandbox's own.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	runs := make([]*Run, 0, len(m.all))
	for r := range m.all {
		runs = append(runs, r)
	}
	m.all, m.free = map[*Run]bool{}, nil
	m.mu.Unlock()
	for _, r := range runs {
		r.Kill()
		r.remove()
	}
	var errs []error
	seen := map[string]bool{}
	for _, d := range m.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sweep removes the groups of sandboxes that died without removing
// their own (killed with SIGKILL), and whatever still runs in them.
func sweep(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		pid, ok := strings.CutPrefix(e.Name(), "verl-score-")
		if !e.IsDir() || !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(pid, "-supervisor"))
		if err != nil || n == os.Getpid() || strings.HasSuffix(pid, "-supervisor") {
			continue
		}
		if syscall.Kill(n, 0) == nil || !errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			continue // alive (or not ours to ask about)
		}
		dir := filepath.Join(parent, e.Name())
		runs, _ := os.ReadDir(dir)
		for _, r := range runs {
			if !r.IsDir() {
				continue
			}
			for _, f := range strings.Fields(readString(filepath.Join(dir, r.Name(), "cgroup.procs"))) {
				if p, err := strconv.Atoi(f); err == nil {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
			os.Remove(filepath.Join(dir, r.Name()))
		}
		os.Remove(dir)
	}
}

// readMounts reads the cgroup hierarchies from a mountinfo file.
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		switch b[0] {
		case "cgroup2":
			out = append(out, mount{point: unescape(a[4]), root: unescape(a[3]), v2: true})
		case "cgroup":
			mt := mount{point: unescape(a[4]), root: unescape(a[3])}
			for _, o := range strings.Split(b[2], ",") {
				if slices.Contains(controllers, o) {
					mt.ctrls = append(mt.ctrls, o)
				}
			}
			out = append(out, mt)
		}
	}
	return out, sc.Err()
}

// readOwn reads this process's group in each hierarchy: by controller for
// v1, under "" for v2.
func readOwn(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, nil
}

// within is the directory of group path under mount mt.
func within(mt mount, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	rel := path
	if mt.root != "/" {
		var ok bool
		if rel, ok = strings.CutPrefix(path, mt.root); !ok || (rel != "" && rel[0] != '/') {
			return "", false
		}
	}
	dir := filepath.Join(mt.point, rel)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	return dir, true
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readAcct reads the group's CPU time file whole: the open one from its
// start, else by name.
func (r *Run) readAcct() string {
	f := r.acctFile
	if f == nil {
		return readString(r.acctPath)
	}
	buf := make([]byte, 512)
	for {
		n, err := f.ReadAt(buf, 0)
		if n < len(buf) || err != nil {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
