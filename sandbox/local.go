//go:build linux

package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/sandbox/cgroup"
	"github.com/verl-score/verl-score/sandbox/forkserver"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/lang"
	"github.com/verl-score/verl-score/sandbox/nsinit"
	"github.com/verl-score/verl-score/sandbox/seccomp"
	"github.com/verl-score/verl-score/sandbox/toolchain"
	"github.com/verl-score/verl-score/sandboxclient"
	"golang.org/x/sync/singleflight"
)

// Local is a sandbox on this machine. It implements sandboxclient.Client and
// is safe for concurrent use.
type Local struct {
	opts   Options
	root   string            // private directory holding builds, runs and caches
	j      *jail.Runner      // runs each step, contained
	tools  map[string]string // program name -> absolute path ("" if missing)
	filter *seccomp.Filter   // contained steps' seccomp filter; nil without
	// rootOnly lists programs an unprivileged user cannot reach; steps using
	// them run as root (with a warning).
	rootOnly map[string]bool

	// rustSysroot is the Rust toolchain's directory, open, when the path
	// to it is closed to other users (rustup under /root): compiles run as
	// the step user and reach it as /proc/self/fd/3.
	rustSysroot *os.File

	flight    singleflight.Group
	goWarm    sync.Once
	goWarmErr error // why the warm-up build failed, once it has run
	mu        sync.Mutex
	builds    map[string]*build

	cgroupNote                  string            // why runs have no cgroup of their own
	forks                       *forkserver.Pool  // starts Python runs from a pre-started interpreter
	caches                      *toolchain.Caches // the fast paths' built-once files
	runSeq                      atomic.Int64
	runs, compiles, compileHits atomic.Int64
	starvedReruns               atomic.Int64
	rerunMu                     sync.Mutex // one starved rerun at a time
	closeOnce                   sync.Once
	closeErr                    error
	warnOnce                    map[string]*sync.Once
	warnMu                      sync.Mutex
	goCache                     string
	pathEnv                     string
	host                        lang.Host // what the language registry's commands are built from
}

var _ sandboxclient.Client = (*Local)(nil)

// build is one cached compilation.
type build struct {
	dir    string
	result *sandboxclient.StepResult
	ok     bool
}

// New sets up a Local sandbox: it makes its private directory, finds the
// toolchains and probes which protections the host allows, reporting the
// missing ones once on opts.Warn.
func New(opts Options) (*Local, error) {
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("sandbox concurrency must be positive, got %d", opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = runtime.NumCPU()
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.Warn == nil {
		opts.Warn = os.Stderr
	}
	if removed := cleanStaleRoots(opts.TempDir); len(removed) > 0 {
		fmt.Fprintf(
			opts.Warn,
			"verl-score: removed %d sandbox directories left by killed runs in %s\n",
			len(removed),
			opts.TempDir,
		)
	}
	root, err := os.MkdirTemp(opts.TempDir, rootPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("create sandbox directory: %w", err)
	}
	// Runs of other users must traverse it to reach their own directory and
	// the cached binaries, but not list it.
	if err := os.Chmod(root, 0o711); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("create sandbox directory: %w", err)
	}
	l := &Local{
		opts:     opts,
		root:     root,
		builds:   map[string]*build{},
		warnOnce: map[string]*sync.Once{},
		goCache:  toolchain.GoCacheDir(opts.TempDir),
	}
	for _, d := range []string{"builds", "runs", "view"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o711); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("create sandbox directory: %w", err)
		}
	}
	l.j = jail.NewRunner(
		jail.Probe(opts.Isolation == IsolationNone, opts.Isolation == IsolationBasic),
		opts.Concurrency,
		opts.MaxOutputBytes,
		opts.TempDir,
		l.warn,
	)
	l.j.Cgroups, l.cgroupNote = newCgroups(opts, &l.j.Iso)
	if l.filter, err = newFilter(opts, l.j.Iso.Contained); err != nil {
		os.RemoveAll(root)
		return nil, err
	} else if l.filter != nil {
		l.j.Filter = l.filter.Program
	}
	l.tools, l.rootOnly = toolchain.Find(l.j.Iso.PerRunUser)
	l.pathEnv = toolchain.ChildPath(l.tools)
	l.host = (*langHost)(l)
	if l.j.Iso.Contained {
		if rootOnly, err := newView(l.j, l.root, l.tools, stepEnv(l.pathEnv, l.host, jail.RunDir, nil)); err == nil {
			l.rootOnly = rootOnly
		} else {
			l.j.Iso.Contained = false
			l.j.Iso.Notes = append(l.j.Iso.Notes, "running without a filesystem view of its own per run (programs see the "+
				"host's files, "+
				"processes and System V IPC): "+err.Error())
		}
	}
	if l.rootOnly["rustc"] && !l.j.Iso.Contained {
		// Compiling as root would let include_str!("/etc/shadow") read any
		// host file; reach the toolchain through an open directory instead.
		if f := openSysroot(l.tools["rustc"]); f != nil {
			l.rustSysroot = f
			delete(l.rootOnly, "rustc")
		}
	}
	l.caches = &toolchain.Caches{Tools: l.tools, GoCache: l.goCache, Off: opts.NoFastPaths, Warn: l.warn}
	if !l.j.Iso.Contained && l.j.Iso.PerRunUser {
		l.caches.Unreachable = func(p string) string {
			if toolchain.ReachableByOthers(p) {
				return ""
			}
			return "is not reachable by the per-run users without the filesystem view"
		}
	}
	py := lang.Get("python")
	l.forks = &forkserver.Pool{
		Jail:        l.j,
		Python:      l.tools["python3"],
		Env:         stepEnv(l.pathEnv, l.host, jail.RunDir, py.Env),
		Argv:        py.Run(l.host, lang.Args{Dir: jail.RunDir}),
		Source:      py.Source,
		Prelude:     opts.PythonPrelude,
		Concurrency: opts.Concurrency,
	}
	switch {
	case opts.NoFastPaths:
		l.forks.Off = "turned off"
	case !l.j.Iso.Contained || !l.j.Iso.PerRunUser:
		l.forks.Off = "needs the filesystem view and a per-run user (root)"
	}
	l.j.Starter = l.forks
	if !l.j.Iso.Contained && !opts.NoSeccomp {
		l.j.Iso.Notes = append(l.j.Iso.Notes, "running without a seccomp filter and with the capabilities the host gives: "+
			"the filesystem view's init installs them")
	}
	for _, note := range l.j.Iso.Notes {
		fmt.Fprintf(opts.Warn, "verl-score sandbox: %s\n", note)
	}
	return l, nil
}

// newFilter is contained steps' seccomp filter, or, with NoSeccomp, nil
// and a warning that they go without. A host the filter cannot be built
// for refuses to start the sandbox without NoSeccomp.
func newFilter(o Options, contained bool) (*seccomp.Filter, error) {
	if o.NoSeccomp {
		fmt.Fprintln(
			o.Warn,
			"verl-score sandbox: WARNING: --seccomp=off: programs run without a system-call filter and can reach "+
				"every call of the host's kernel (they still start with no capability and no_new_privs); for debugging only",
		)
		return nil, nil
	}
	if !contained {
		return nil, nil
	}
	f, err := seccomp.Host()
	if err != nil {
		return nil, fmt.Errorf(
			"the sandbox's seccomp filter: %w; --seccomp=off starts programs without one (for debugging only)",
			err,
		)
	}
	return f, nil
}

// newCgroups gives the sandbox a cgroup, weighing as many runs as it runs
// at once, under which each run gets a group of its own. Without one (not
// root, no controller, isolation none) runs keep their per-process limits
// alone, and note says why.
func newCgroups(o Options, iso *jail.Isolation) (cg *cgroup.Manager, note string) {
	switch {
	case o.Isolation == IsolationNone:
		return nil, "isolation none"
	case !iso.PerRunUser:
		return nil, "not root"
	}
	cg, err := cgroup.New(o.Concurrency)
	if err != nil {
		iso.Notes = append(
			iso.Notes,
			"running without a cgroup per run ("+err.Error()+"): runs share the CPU without a weight of their own, "+
				"and only per-process limits bound memory and processes",
		)
		return nil, err.Error()
	}
	return cg, ""
}

// newView lays out the contained steps' view in root and proves that a
// step runs in it. It returns the programs an unprivileged user cannot
// reach there.
func newView(j *jail.Runner, root string, tools map[string]string, env []string) (rootOnly map[string]bool, err error) {
	j.View = jail.NewView(filepath.Join(root, "view"), tools)
	// In the view every bound tree is reachable through directories open
	// to all, so only the trees' own modes decide.
	rootOnly = map[string]bool{}
	for prog, p := range tools {
		if p != "" && j.Iso.PerRunUser && !j.View.Reachable(p) {
			rootOnly[prog] = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The probe sees its own PID namespace's init and none of the host's
	// paths, this sandbox's directory included.
	st := jail.Spec{
		Argv: []string{
			jail.WrapperShell,
			"-c",
			"test -r /proc/1/stat && test -d " + jail.RunDir + " && test ! -e " + root,
		},
		Dir:     jail.RunDir,
		Env:     env,
		Timeout: 30 * time.Second,
	}
	res, err := j.Run(ctx, st)
	if err != nil {
		return nil, err
	}
	if !res.Succeeded() {
		return nil, fmt.Errorf("a probe step failed: %s", strings.TrimSpace(res.Stderr))
	}
	return rootOnly, nil
}

// Stats returns the counters so far.
func (l *Local) Stats() Stats {
	return Stats{
		Runs:             l.runs.Load(),
		Compiles:         l.compiles.Load(),
		CompileCacheHits: l.compileHits.Load(),
		ForkedRuns:       l.forks.Forked.Load(),
		ForkedFaults:     l.j.StartCosts.Sum().Faults,
		PreludeRuns:      l.forks.PreludeRuns.Load(),
		StarveGrants:     l.j.StarveGrants.Load(),
		StarvedReruns:    l.starvedReruns.Load(),
	}
}

// ForkCosts is what the fork server's runs have cost so far, as the
// servers, their inits and their programs report it, and the process ids
// of the running servers and of their inits (whose own CPU time a
// benchmark reads).
func (l *Local) ForkCosts() (cost jail.StartCost, servers, inits []int) {
	servers, inits = l.forks.PIDs()
	return l.j.StartCosts.Sum(), servers, inits
}

// Close removes the sandbox's directory with its cached builds.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.forks.Close()
		if l.j.Cgroups != nil {
			l.j.Cgroups.Close()
		}
		if l.rustSysroot != nil {
			l.rustSysroot.Close()
		}
		l.closeErr = os.RemoveAll(l.root)
	})
	return l.closeErr
}

// warn writes a note once per Local.
func (l *Local) warn(key, msg string) {
	l.warnMu.Lock()
	o, ok := l.warnOnce[key]
	if !ok {
		o = &sync.Once{}
		l.warnOnce[key] = o
	}
	l.warnMu.Unlock()
	o.Do(func() { fmt.Fprintf(l.opts.Warn, "verl-score sandbox: %s\n", msg) })
}

// Run compiles (if the language needs it) and runs req.Code, answering as
// a SandboxFusion server would. An error means no response: ctx was
// cancelled, the sandbox itself failed, or the language is one a server
// would reject (wrapping ErrUnsupportedLanguage).
func (l *Local) Run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	resp, err := l.run(ctx, req)
	if err != nil || !starvedStep(resp) {
		return resp, err
	}
	// A step was starved for a CPU past its grace (sandbox/jail/starve.go): once more,
	// alone. The rerun takes every slot but the one its own steps use, as
	// the runs in progress end, so that no other run of this sandbox goes
	// beside it: the sandbox's own runs can starve one another when it
	// runs more at once than there are CPUs. One such rerun at a time.
	l.starvedReruns.Add(1)
	l.rerunMu.Lock()
	defer l.rerunMu.Unlock()
	release, err := l.j.HoldAllButOne(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	resp, err = l.run(ctx, req)
	if resp != nil {
		resp.StarvedReruns = 1
	}
	return resp, err
}

func starvedStep(resp *sandboxclient.Response) bool {
	return resp != nil &&
		((resp.CompileResult != nil && resp.CompileResult.Starved) || (resp.RunResult != nil && resp.RunResult.Starved))
}

// run answers one request.
func (l *Local) run(ctx context.Context, req *sandboxclient.Request) (*sandboxclient.Response, error) {
	if req == nil {
		return nil, errors.New("nil request")
	}
	if !sandboxclient.IsSupportedLanguage(req.Language) {
		return nil, fmt.Errorf("language %q: %w", req.Language, ErrUnsupportedLanguage)
	}
	l.runs.Add(1)
	spec := lang.Get(req.Language)
	if spec == nil || spec.Runner == nil {
		needs := ""
		if spec != nil {
			needs = spec.Needs
		}
		if needs == "" {
			// SandboxFusion lists it but has no runner either: the same answer.
			return sandboxError(
				fmt.Sprintf("exception on running code: SandboxFusion has no runner for %q, nor has this sandbox", req.Language),
			), nil
		}
		return sandboxError(
			fmt.Sprintf("exception on running code: the local sandbox has no runner for %q (it would need %s)",
				req.Language, needs),
		), nil
	}
	for _, prog := range spec.Programs() {
		if l.tools[prog] == "" {
			return sandboxError(
				fmt.Sprintf("exception on running code: %s not found on this machine (needed for %s)", prog, req.Language),
			), nil
		}
	}
	if spec.Refuse != nil {
		if msg := spec.Refuse(req.Code); msg != "" {
			// SandboxFusion's runner answers before running anything: a
			// compile step in Error, which makes the response SandboxError.
			rc := 1
			return &sandboxclient.Response{Status: sandboxclient.StatusSandboxError, Message: msg, Files: map[string]string{},
				CompileResult: &sandboxclient.StepResult{Status: sandboxclient.StepError, ReturnCode: &rc, Stderr: msg}}, nil
		}
	}
	files, err := decodeFiles(req.Files)
	if err != nil {
		return sandboxError("exception on running code: " + err.Error()), nil
	}
	abs, err := l.absoluteFiles(files, req.FetchFiles)
	if err != nil {
		return sandboxError("exception on running code: " + err.Error()), nil
	}

	resp := &sandboxclient.Response{Files: map[string]string{}}
	var binDir string
	if spec.Compile != nil {
		b, err := l.compile(ctx, spec, req, files)
		if err != nil {
			return nil, err
		}
		if spec.HiddenCompile {
			// go_test is one `go test` step upstream: a failed build is a
			// failed run, not a compile error.
			if !b.ok {
				resp.RunResult = spec.FailedBuild(b.result)
				resp.Status = overallStatus(nil, resp.RunResult)
				return resp, nil
			}
		} else {
			resp.CompileResult = b.result
			if !b.ok {
				resp.Status = overallStatus(resp.CompileResult, nil)
				return resp, nil
			}
		}
		binDir = b.dir
	}

	rr, fetched, err := l.execute(ctx, spec, req, files, abs, binDir)
	if err != nil {
		return nil, err
	}
	if spec.RunOutput != nil {
		rr = spec.RunOutput(rr)
	}
	resp.RunResult = rr
	for k, v := range fetched {
		resp.Files[k] = v
	}
	resp.Status = overallStatus(resp.CompileResult, resp.RunResult)
	return resp, nil
}

// overallStatus applies the server's rule: SandboxError if a step could
// not run, else Failed if a step timed out or returned non-zero, else
// Success.
func overallStatus(steps ...*sandboxclient.StepResult) string {
	failed := false
	for _, s := range steps {
		if s == nil {
			continue
		}
		switch {
		case s.Status == sandboxclient.StepError:
			return sandboxclient.StatusSandboxError
		case s.Status == sandboxclient.StepTimeLimitExceeded:
			failed = true
		case s.ReturnCode == nil || *s.ReturnCode != 0:
			failed = true
		}
	}
	if failed {
		return sandboxclient.StatusFailed
	}
	return sandboxclient.StatusSuccess
}

func sandboxError(msg string) *sandboxclient.Response {
	return &sandboxclient.Response{Status: sandboxclient.StatusSandboxError, Message: msg, Files: map[string]string{}}
}

// compile builds req.Code once per (language, code, files); concurrent
// and later requests for the same source share the result.
func (l *Local) compile(
	ctx context.Context,
	spec *lang.Language,
	req *sandboxclient.Request,
	files map[string][]byte,
) (*build, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00", req.Language, len(req.Code), req.Code)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", n, len(files[n]), files[n])
	}
	key := hex.EncodeToString(h.Sum(nil))

	l.mu.Lock()
	if b, ok := l.builds[key]; ok {
		l.mu.Unlock()
		l.compileHits.Add(1)
		return b, nil
	}
	l.mu.Unlock()

	shared := true
	v, err, _ := l.flight.Do(key, func() (any, error) {
		shared = false
		b, err := l.doCompile(ctx, spec, req, files, key)
		if err != nil {
			return nil, err
		}
		// A timed-out compile may succeed with more time: only finished
		// compiles, good or bad, are remembered.
		if b.result.Status == sandboxclient.StepFinished {
			l.mu.Lock()
			l.builds[key] = b
			l.mu.Unlock()
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	if shared {
		l.compileHits.Add(1)
	}
	return v.(*build), nil
}

func (l *Local) doCompile(
	ctx context.Context,
	spec *lang.Language,
	req *sandboxclient.Request,
	files map[string][]byte,
	key string,
) (*build, error) {
	dir := filepath.Join(l.root, "builds", key[:32])
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	if err := writeFiles(dir, files); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, spec.FileName(req.Code)), spec.SourceText(req.Code), 0o644); err != nil {
		return nil, fmt.Errorf("write source: %w", err)
	}
	var goBinds []jail.Bind
	if spec.CompileCache == lang.GoBuildCache && l.tools["go"] != "" {
		l.warmGo(ctx) // before the compile's time starts
		var err error
		if goBinds, err = goBuildDir(l.caches, dir); err != nil {
			return nil, err
		}
	}
	// go_test builds inside its one step upstream; here the build is
	// cached and shared by the cases, so it gets the compile timeout.
	timeout := secondsToDuration(req.CompileTimeout)
	st := jail.Spec{
		Timeout: timeout,
		Lim:     jail.CompileLimits(req.MemoryLimitMB, timeout),
		AsRoot:  spec.CompileAsRoot || l.rootOnly[spec.Programs()[0]],
		Owned:   dir,
		OwnTree: true,
	}
	if l.j.Iso.Contained {
		// The build directory is the view's /build, writable; go's shared
		// build cache is writable only by go, which runs no user code.
		st.Dir = jail.BuildDir
		st.View.Binds = []jail.Bind{{Source: dir, Target: jail.BuildDir, Flags: nsinit.BindWritable}}
		st.View.Binds = append(st.View.Binds, goBinds...)
	} else {
		st.Dir = dir
	}
	st.Argv = spec.Compile(
		l.host,
		lang.Args{Dir: st.Dir, MemMB: req.MemoryLimitMB, Code: req.Code, Files: slices.Sorted(maps.Keys(files))},
	)
	if spec.CompileCache == lang.PrecompiledHeader {
		if inc := l.caches.WaitPCH(ctx); inc != "" {
			if l.j.Iso.Contained {
				st.View.Binds = append(st.View.Binds, jail.Bind{Source: inc, Target: toolchain.PCHViewDir})
				inc = toolchain.PCHViewDir
			}
			st.Argv = append([]string{st.Argv[0], "-I" + inc}, st.Argv[1:]...)
		}
	}
	if spec.CompileCache == lang.ClassDataArchive {
		if dir := l.caches.WaitJavacArchive(ctx); dir != "" {
			if l.j.Iso.Contained {
				st.View.Binds = append(st.View.Binds, jail.Bind{Source: dir, Target: toolchain.JavacArchiveViewDir})
				dir = toolchain.JavacArchiveViewDir
			}
			st.Argv = append(
				[]string{st.Argv[0], "-J-XX:SharedArchiveFile=" + filepath.Join(dir, toolchain.JavacArchiveName)},
				st.Argv[1:]...)
		}
	}
	st.Env = stepEnv(l.pathEnv, l.host, st.Dir, spec.Env)
	if spec.Programs()[0] == "rustc" && l.rustSysroot != nil {
		st.Argv, st.Env = sysrootArgs(st.Argv, st.Env)
		st.ExtraFiles = []*os.File{l.rustSysroot}
	}
	if st.AsRoot && l.rootOnly[spec.Programs()[0]] {
		l.warn(
			"root-"+spec.Programs()[0],
			fmt.Sprintf("%s is not reachable by an unprivileged user; its compiles run as root", l.tools[spec.Programs()[0]]),
		)
	}
	l.compiles.Add(1)
	res, err := l.j.Run(ctx, st)
	// Whoever compiled, the result belongs to root from now on so that no
	// later run can change a cached binary.
	jail.ChownTree(dir, 0, 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &build{dir: dir, result: stepResult(res), ok: res.Succeeded()}, nil
}

// warmGoCacheCode imports what solutions and tests commonly use, so that
// building it once fills the Go build cache with the standard library.
const warmGoCacheCode = `package warm_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var _ = []any{bufio.NewReader, fmt.Sprint, math.Abs, os.Exit, reflect.DeepEqual, sort.Ints, strconv.Itoa, strings.Fields}

func TestWarm(t *testing.T) {}
`

// warmGoCacheTestify is added to warmGoCacheCode where the module cache
// holds testify, so that testify is compiled ahead too.
const warmGoCacheTestify = `package warm_test

import "github.com/stretchr/testify/assert"

var _ = assert.Equal
`

// warmGo warms the Go build cache once (warmGoCache) and says why that
// failed, if it did; later calls wait for the first and get its answer.
func (l *Local) warmGo(ctx context.Context) error {
	l.goWarm.Do(func() { l.goWarmErr = l.warmGoCache(ctx) })
	return l.goWarmErr
}

// warmGoCache builds a test binary once before the first Go compile, with
// a generous timeout: on a machine whose cache is cold, compiling the
// standard library (and testify, where the module cache has it) would
// otherwise be charged to the first solution's compile timeout and turn it
// into a compile error.
func (l *Local) warmGoCache(ctx context.Context) error {
	dir, err := os.MkdirTemp(filepath.Join(l.root, "builds"), "gowarm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files := []string{"warm_test.go"}
	if err := os.WriteFile(filepath.Join(dir, "warm_test.go"), []byte(warmGoCacheCode), 0o644); err != nil {
		return err
	}
	goBinds, err := goBuildDir(l.caches, dir)
	if err != nil {
		return err
	}
	if l.caches.GoModCache() != "" {
		if err := os.WriteFile(filepath.Join(dir, "testify_test.go"), []byte(warmGoCacheTestify), 0o644); err != nil {
			return err
		}
		files = append(files, "testify_test.go")
	}
	st := jail.Spec{
		Dir:     dir,
		Timeout: 10 * time.Minute,
		Lim:     jail.CompileLimits(0, 10*time.Minute),
		AsRoot:  true,
	}
	if l.j.Iso.Contained {
		st.Dir = jail.BuildDir
		st.View.Binds = append([]jail.Bind{{Source: dir, Target: jail.BuildDir, Flags: nsinit.BindWritable}}, goBinds...)
	}
	st.Argv = append([]string{l.tools["go"], "test", "-c", "-o", "warm.bin"}, files...)
	st.Env = stepEnv(l.pathEnv, l.host, st.Dir, lang.GoEnv)
	res, err := l.j.Run(ctx, st)
	switch {
	case err != nil:
		return err
	case !res.Succeeded():
		return fmt.Errorf("go test -c: %s: %s", res.Outcome, strings.TrimSpace(res.Stderr+res.Stdout))
	}
	return nil
}

// execute runs the program of one request in a fresh directory.
func (l *Local) execute(
	ctx context.Context,
	spec *lang.Language,
	req *sandboxclient.Request,
	files, abs map[string][]byte,
	binDir string,
) (*sandboxclient.StepResult, map[string]string, error) {
	var stdin []byte
	if req.Stdin != nil {
		stdin = []byte(*req.Stdin)
	}
	timeout := secondsToDuration(req.RunTimeout)
	st := jail.Spec{
		Stdin:   stdin,
		Timeout: timeout,
		Lim:     runLimits(l.opts, spec, req.MemoryLimitMB, timeout),
		AsRoot:  l.rootOnly[spec.RunProgram],
	}
	if l.j.Iso.Contained {
		// The run directory exists only inside the step's view, on its
		// size-capped tmpfs; the request's files are written there by the
		// init and fetched back by it.
		st.Dir = jail.RunDir
		st.View.Files = files
		if spec.Compile == nil {
			st.View.Files = maps.Clone(files)
			st.View.Files[spec.FileName(req.Code)] = spec.SourceText(req.Code)
		}
		st.View.Abs = abs
		if spec.Links != nil {
			st.View.Links = spec.Links(l.host)
		}
		st.View.Fetch = validFetchNames(req.FetchFiles)
		viewBin := ""
		if binDir != "" {
			viewBin = jail.BuildDir
			st.View.Binds = []jail.Bind{{Source: binDir, Target: jail.BuildDir}}
		}
		st.Argv = spec.Run(
			l.host,
			lang.Args{
				Dir:    st.Dir,
				BinDir: viewBin,
				MemMB:  req.MemoryLimitMB,
				Code:   req.Code,
				Files:  slices.Sorted(maps.Keys(files)),
			},
		)
		st.Forkable = spec.Forkable && !st.AsRoot && len(st.View.Fetch) == 0 && len(abs) == 0 &&
			!parentAware.MatchString(req.Code)
	} else {
		dir := filepath.Join(l.root, "runs", fmt.Sprintf("r%d", l.runSeq.Add(1)))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create run directory: %w", err)
		}
		defer os.RemoveAll(dir)
		if err := writeFiles(dir, files); err != nil {
			return nil, nil, err
		}
		if spec.Compile == nil {
			if err := os.WriteFile(filepath.Join(dir, spec.FileName(req.Code)), spec.SourceText(req.Code), 0o644); err != nil {
				return nil, nil, fmt.Errorf("write source: %w", err)
			}
		}
		if spec.Links != nil {
			for name, target := range spec.Links(l.host) {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					return nil, nil, fmt.Errorf("link %s: %w", name, err)
				}
			}
		}
		st.Dir, st.Owned, st.OwnTree, st.Fetch = dir, dir, len(files) > 0, req.FetchFiles
		st.Argv = spec.Run(l.host, lang.Args{Dir: dir, BinDir: binDir, MemMB: req.MemoryLimitMB, Code: req.Code,
			Files: slices.Sorted(maps.Keys(files))})
	}
	st.Env = stepEnv(l.pathEnv, l.host, st.Dir, spec.Env)
	st.MergeStderr = spec.MergeStderr
	if st.AsRoot {
		l.warn(
			"root-"+spec.RunProgram,
			fmt.Sprintf("%s is not reachable by an unprivileged user; its runs run as root", l.tools[spec.RunProgram]),
		)
	}
	res, err := l.j.Run(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	return stepResult(res), res.Files, nil
}

// stepResult is a jail's result as the protocol's step result: the one
// place where the jail's account becomes the answer's.
func stepResult(r *jail.Result) *sandboxclient.StepResult {
	sr := &sandboxclient.StepResult{
		ExecutionTime: r.Elapsed.Seconds(),
		ReturnCode:    r.ExitCode,
		Stdout:        r.Stdout,
		Stderr:        r.Stderr,
		Starved:       r.Starved,
		CPUTime:       r.CPU.Seconds(),
		CPUWait:       r.Waited.Seconds(),
	}
	switch r.Outcome {
	case jail.Exited:
		sr.Status = sandboxclient.StepFinished
	case jail.TimedOut:
		sr.Status = sandboxclient.StepTimeLimitExceeded
	default:
		sr.Status = sandboxclient.StepError
	}
	return sr
}

// validFetchNames keeps the fetch names that stay inside the run directory
// and the absolute paths (absoluteFiles has checked those).
func validFetchNames(names []string) []string {
	var out []string
	for _, n := range names {
		if _, err := jail.SafeJoin("/x", n); err == nil || filepath.IsAbs(n) {
			out = append(out, n)
		}
	}
	return out
}

// absoluteFiles takes the request's files at absolute paths out of files
// and returns them. As SandboxFusion, a request may write files anywhere
// and fetch them from anywhere; here such a path exists only inside the
// run's own view (view.absoluteAllowed), so it needs the contained
// sandbox, and a path in the system's tree is refused.
func (l *Local) absoluteFiles(files map[string][]byte, fetch []string) (map[string][]byte, error) {
	var abs map[string][]byte
	check := func(p string) error {
		if !l.j.Iso.Contained {
			return fmt.Errorf(
				"file %q: an absolute path needs the sandbox's own filesystem view, which this host does not allow",
				p,
			)
		}
		if why := l.j.View.AbsoluteAllowed(p); why != "" {
			return fmt.Errorf("file %q %s", p, why)
		}
		return nil
	}
	for name, data := range files {
		if !filepath.IsAbs(name) {
			continue
		}
		if err := check(name); err != nil {
			return nil, err
		}
		if abs == nil {
			abs = map[string][]byte{}
		}
		abs[name] = data
		delete(files, name)
	}
	for _, name := range fetch {
		if filepath.IsAbs(name) {
			if err := check(name); err != nil {
				return nil, err
			}
		}
	}
	return abs, nil
}

// maxStepSeconds bounds a request's compile_timeout and run_timeout: past
// about 9.2e9 seconds a time.Duration overflows (a run_timeout of 1e10 was
// an instant TimeLimitExceeded). The client's request timeout has the same
// bound (sandboxclient.attemptTimeout).
const maxStepSeconds = 1e6

func secondsToDuration(s float64) time.Duration {
	if s <= 0 || s != s {
		s = 10 // the server's default
	}
	return time.Duration(min(s, maxStepSeconds) * float64(time.Second))
}

// decodeFiles decodes the request's base64 files, refusing relative names
// that would land outside the run directory (absolute ones are for
// absoluteFiles).
func decodeFiles(in map[string]string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(in))
	for name, content := range in {
		if strings.Contains(name, "IGNORE_THIS_FILE") {
			continue
		}
		if _, err := jail.SafeJoin("/x", name); err != nil && !filepath.IsAbs(name) {
			return nil, err
		}
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, fmt.Errorf("file %q is not base64: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		p, err := jail.SafeJoin(dir, name)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write file %q: %w", name, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("write file %q: %w", name, err)
		}
	}
	return nil
}

// fdSysroot is where a compile step sees the toolchain passed as fd 3.
const fdSysroot = "/proc/self/fd/3"

// openSysroot opens the sysroot of a rustc at <sysroot>/bin/rustc when the
// sysroot itself is open to other users though the path to it is not; nil
// otherwise.
func openSysroot(rustc string) *os.File {
	real, err := filepath.EvalSymlinks(rustc)
	if err != nil {
		return nil
	}
	root := filepath.Dir(filepath.Dir(real))
	for _, d := range []string{root, filepath.Join(root, "bin"), filepath.Join(root, "lib")} {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o005 != 0o005 {
			return nil
		}
	}
	f, err := os.Open(root)
	if err != nil {
		return nil
	}
	return f
}

// sysrootArgs rewrites a rustc command to use the toolchain passed as fd 3:
// the compiler, its libraries and the sysroot through /proc/self/fd/3, and
// the system linker (rust-lld finds itself by its real path, which the step
// user cannot reach).
func sysrootArgs(argv, env []string) ([]string, []string) {
	out := append([]string{fdSysroot + "/bin/rustc", "--sysroot", fdSysroot}, argv[1:]...)
	out = append(out, "-C", "link-arg=-fuse-ld=bfd")
	return out, append(env, "LD_LIBRARY_PATH="+fdSysroot+"/lib")
}

// rootPrefix starts the name of a sandbox's directory, followed by the id
// of the process that made it.
const rootPrefix = "verl-score-sandbox-"

// cleanStaleRoots removes the directories that sandboxes of processes no
// longer running (a kill -9, a crash) left in dir, and returns them. Their
// files may belong to the per-run users; as root that does not matter, and
// otherwise what cannot be removed stays. No mount points live there: a
// run's view is mounted only inside its own mount namespace.
func cleanStaleRoots(dir string) []string {
	var removed []string
	for _, p := range atomicfile.DeadOwners(dir, rootPrefix, true) {
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// parentAware finds Python code that may look for or signal its parent
// (os.getppid, os.kill, os.killpg, or the same through ctypes). A forked run's parent is
// the fork server, outside its PID namespace, so its getppid() is 0 (and
// kill(0, ...) signals its own process group); a plain start's parent is
// the namespace's init, PID 1, which the program may signal to no effect,
// as on SandboxFusion, where a program may kill its parent and go on. Such
// code starts the plain way. None of the real corpus's 1,691 responses
// matches.
var parentAware = regexp.MustCompile(`getppid|kill`)

// langHost is the Local as the language registry sees it: its tools and
// the directories it prepared.
type langHost Local

func (h *langHost) Tool(prog string) string { return h.tools[prog] }

func (h *langHost) Dir(name string) string {
	switch name {
	case lang.DirGoCache:
		return h.goCache
	case lang.DirGoModCache:
		return h.caches.GoModCache()
	}
	return ""
}

// goBuildDir readies dir for a go build: goruntime's go.mod and go.sum
// where modules are used. It returns what a contained build binds: the
// build cache, writable (go runs as root and runs no user code), and the
// module cache, read-only.
func goBuildDir(c *toolchain.Caches, dir string) ([]jail.Bind, error) {
	binds := []jail.Bind{{Source: c.GoCache, Target: c.GoCache, Flags: nsinit.BindWritable}}
	mc := c.GoModCache()
	if mc == "" {
		return binds, nil
	}
	// A request's own go.mod or go.sum wins, as in SandboxFusion.
	for name, data := range toolchain.GoRuntimeFiles() {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return append(binds, jail.Bind{Source: mc, Target: mc}), nil
}

// stepEnv is the whole environment of a step: nothing of ours leaks in.
// A toolchain's settings replace the defaults of the same name.
func stepEnv(path string, h lang.Host, home string, extra func(lang.Host) []string) []string {
	e := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	if extra == nil {
		return e
	}
	more := extra(h)
	for _, kv := range more {
		name, _, _ := strings.Cut(kv, "=")
		e = slices.DeleteFunc(e, func(d string) bool { return strings.HasPrefix(d, name+"=") })
	}
	return append(e, more...)
}
