//go:build linux

package swerun

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/singleflight"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/swe"
)

// Runner runs repository tasks' rollouts in their images with the
// embedded sandbox's jail.
type Runner struct {
	Jail    *jail.Runner
	Catalog *image.Catalog
	Store   *image.Store
	Opts    Options

	// Notify, if set, is told of an unpack as it starts and ends.
	Notify func(msg string)
	// Unpacking, if set, is called as an image's unpack starts: progress is
	// told the bytes written as they are, and done is called at its end.
	Unpacking func(ref string) (progress func(bytes int64), done func())
	// Pulling is Unpacking for a pull from a registry (the bytes fetched).
	Pulling func(ref string) (progress func(bytes int64), done func())

	// the environments found so far, by the name a row gives: a rollout
	// after the first reads no layout or archive again
	mu   sync.Mutex
	envs map[string]*image.Unpacked
	// used are the images the run used, by the name a row gives, in the
	// order first used (the provenance's)
	used []Used
	// pulls and lookups of one name at once are one
	finding singleflight.Group
	// held release the images this runner holds in the store
	held []func()
	// the images of the rollouts ahead, readied in the background
	prefetchOnce sync.Once
	pf           *prefetcher
	waited       atomic.Int64 // ns rollouts waited for their images
	firstRef     string       // the first image a rollout asked for
	waitedFirst  time.Duration
	// slots bound rollouts without prefetching; prep the images readied at
	// once (gate)
	gateOnce    sync.Once
	slots, prep chan struct{}
	// the sandbox's idle slot time while rollouts waited (idle)
	idleMu           sync.Mutex
	idleLast         time.Time
	idleFirst        time.Time
	firstReady       time.Duration
	running, waiting int
	idleSlot         time.Duration

	// what NewSWE opens on first use
	once                sync.Once
	imagesDir, storeDir string
	openErr             error
}

// New is the runner of repository tasks over the embedded sandbox's jail.
// The images directory and the store are opened when the first rollout
// needs them, so a run of programs alone touches neither.
func New(j *jail.Runner, imagesDir, storeDir string, opts Options) (*Runner, error) {
	if j == nil {
		return nil, errors.New("repository tasks need the embedded sandbox")
	}
	if storeDir == "" {
		storeDir = DefaultImageStore()
	}
	return &Runner{Jail: j, Opts: opts, imagesDir: imagesDir, storeDir: storeDir}, nil
}

func (s *Runner) open() error {
	s.once.Do(func() {
		if s.Store == nil {
			if s.Store, s.openErr = image.OpenStore(s.storeDir); s.openErr != nil {
				return
			}
		}
		if s.Catalog == nil && s.imagesDir != "" {
			s.Catalog, s.openErr = image.OpenCatalog(s.imagesDir)
		}
	})
	return s.openErr
}

// Where a rollout's scripts and outputs live in its image.
const (
	sweDir       = "/tmp/verl-score"
	sweApply     = sweDir + "/apply.sh"
	sweEval      = sweDir + "/eval.sh"
	sweApplyLog  = sweDir + "/apply.log"
	sweApplyExit = sweDir + "/apply.exit"
)

// Used are the images the run has used so far.
func (s *Runner) Used() []Used {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Used(nil), s.used...)
}

// Environment is an instance's image, found and unpacked (once).
func (s *Runner) Environment(ctx context.Context, inst *swe.Instance) (*image.Unpacked, error) {
	ref := inst.ImageRef()
	s.mu.Lock()
	u, ok := s.envs[ref]
	s.mu.Unlock()
	if ok {
		return u, nil
	}
	v, err, _ := s.finding.Do(ref, func() (any, error) {
		s.mu.Lock()
		u, ok := s.envs[ref]
		s.mu.Unlock()
		if ok {
			return u, nil
		}
		s.initGate()
		s.prep <- struct{}{}
		defer func() { <-s.prep }()
		u, used, err := s.environment(ctx, ref)
		if err != nil {
			return nil, err
		}
		// held while this runner may use it: no prune removes it
		release, err := s.Store.Hold(u.ID)
		if errors.Is(err, image.ErrEvicted) { // by another process, between the unpack and now
			if u, used, err = s.environment(ctx, ref); err == nil {
				release, err = s.Store.Hold(u.ID)
			}
		}
		if err != nil {
			return nil, err
		}
		used.Ref, used.ID = ref, u.ID
		// The store's bound is kept before the image is published to the
		// other rollouts, so that a run's eviction is over (and said)
		// before its rollouts end: one of another image would otherwise
		// find this one ready and end the run first.
		s.prune()
		s.mu.Lock()
		if s.envs == nil {
			s.envs = map[string]*image.Unpacked{}
		}
		s.envs[ref] = u
		s.used = append(s.used, used)
		s.held = append(s.held, release)
		s.mu.Unlock()
		return u, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*image.Unpacked), nil
}

func (s *Runner) environment(ctx context.Context, ref string) (*image.Unpacked, Used, error) {
	if err := s.open(); err != nil {
		return nil, Used{}, err
	}
	if isPath(ref) {
		u, err := s.fromPath(ref)
		return u, Used{Source: ref}, err
	}
	notFound := fmt.Errorf("%w: %s: no --images directory names it", image.ErrNotFound, ref)
	if s.Catalog != nil {
		e, err := s.Catalog.Find(ref)
		if err == nil {
			img, err := e.Open()
			if err != nil {
				return nil, Used{}, fmt.Errorf("image %s in %s: %w", ref, e.Where, err)
			}
			u, err := s.unpack(ref, func(p func(int64)) (*image.Unpacked, error) {
				return s.Store.Unpack(img, e.Names, e.Where, p)
			}, s.stored(img))
			return u, Used{Source: e.Where}, err
		}
		if !errors.Is(err, image.ErrNotFound) {
			return nil, Used{}, err
		}
		notFound = err
	}
	if s.Opts.Pull != PullAlways {
		if p, ok := s.Store.Pulled(ref); ok {
			u, err := s.fromPull(ref, p)
			return u, Used{Source: "store", Digest: p.Digest.String()}, err
		}
	}
	if s.Opts.Pull == PullNever {
		return nil, Used{}, fmt.Errorf("%w, nor pulled into the store before (and --pull never)", notFound)
	}
	p, err := s.pull(ctx, ref)
	if err != nil {
		return nil, Used{}, fmt.Errorf("%v; pulling it: %w", notFound, err)
	}
	u, err := s.fromPull(ref, p)
	return u, Used{Source: "registry", Digest: p.Digest.String(), Pull: p}, err
}

// StoreUsage is what the runner's image store holds: its images, and its
// bytes (unpacked trees and blobs).
func (s *Runner) StoreUsage() (images int, bytes int64, err error) {
	if err := s.open(); err != nil {
		return 0, 0, err
	}
	u, err := s.Store.List()
	if err != nil {
		return 0, 0, err
	}
	return len(u.Images), u.Total(), nil
}

// Close lets go of the images the runner holds: the store may evict them.
func (s *Runner) Close() {
	s.stopPrefetch() // and waits for the workers: none holds an image after this
	s.mu.Lock()
	held := s.held
	s.held, s.envs = nil, nil
	s.mu.Unlock()
	for _, release := range held {
		release()
	}
}

// prune keeps the store under its bound (Options.StoreMaxGB), removing
// the least recently used images no process holds.
func (s *Runner) prune() {
	if s.Opts.StoreMaxGB <= 0 {
		return
	}
	p, err := s.Store.Prune(int64(s.Opts.StoreMaxGB * (1 << 30)))
	if s.Notify == nil {
		return
	}
	switch {
	case err != nil:
		s.Notify("image store: prune: " + err.Error())
	case len(p.Images) > 0:
		s.Notify(fmt.Sprintf("image store over %.1f GB: evicted %d least recently used images (%.1f MB)",
			s.Opts.StoreMaxGB, len(p.Images), float64(p.Bytes)/(1<<20)))
	case p.Kept > 0:
		s.Notify(fmt.Sprintf("image store over %.1f GB, but its %d images over the bound are in use", s.Opts.StoreMaxGB,
			p.Kept))
	}
}

// pull fetches ref from its registry, shown as a task while it runs.
func (s *Runner) pull(ctx context.Context, ref string) (*image.Pulled, error) {
	o := image.PullOptions{Auth: s.Opts.Auth, Transport: s.Opts.Transport}
	if s.Notify != nil {
		s.Notify(fmt.Sprintf("pulling image %s into %s", ref, s.Store.Dir()))
	}
	if s.Pulling != nil {
		p, done := s.Pulling(ref)
		defer done()
		o.Progress = p
	}
	p, err := s.Store.Pull(ctx, ref, o)
	if err == nil && s.Notify != nil {
		s.Notify(fmt.Sprintf("image %s pulled (%s): %d layers, %.1f MB fetched of %.1f MB (%d layers were in the store)",
			ref, p.Digest, p.Layers, float64(p.Fetched)/(1<<20), float64(p.Bytes)/(1<<20), p.Shared))
	}
	return p, err
}

// fromPull unpacks a pulled image (once).
func (s *Runner) fromPull(ref string, p *image.Pulled) (*image.Unpacked, error) {
	img, err := p.Image()
	if err != nil {
		return nil, fmt.Errorf("image %s in the store (%s): %w", ref, p.Dir, err)
	}
	return s.unpack(ref, func(pr func(int64)) (*image.Unpacked, error) {
		return s.Store.Unpack(img, []string{p.Ref}, p.Ref+"@"+p.Digest.String(), pr)
	}, s.stored(img))
}

// stored tells whether img is in the store already.
func (s *Runner) stored(img v1.Image) func() bool {
	return func() bool {
		id, err := image.ID(img)
		if err != nil {
			return false
		}
		_, ok := s.Store.Get(id)
		return ok
	}
}

// unpack unpacks an image, saying so through Notify and Unpacking when it
// is not in the store yet (an unpack of GBs takes a while, once).
func (s *Runner) unpack(ref string, do func(progress func(int64)) (*image.Unpacked, error),
	stored func() bool) (*image.Unpacked, error) {
	if (s.Notify == nil && s.Unpacking == nil) || stored() {
		return do(nil)
	}
	if s.Notify != nil {
		s.Notify(fmt.Sprintf("unpacking image %s into %s (once: later rollouts and runs share it)", ref, s.Store.Dir()))
	}
	var progress func(int64)
	if s.Unpacking != nil {
		p, done := s.Unpacking(ref)
		defer done()
		progress = p
	}
	u, err := do(progress)
	switch {
	case err != nil || s.Notify == nil:
	case u.Fresh:
		s.Notify(fmt.Sprintf("image %s unpacked: %d files, %.1f MB, in %.1f s", ref, u.Meta.Files,
			float64(u.Meta.Bytes)/(1<<20), u.Meta.Seconds))
	default:
		s.Notify(fmt.Sprintf("image %s: another process unpacked it meanwhile", ref))
	}
	return u, err
}

// isPath: a row names its image by path ("/…", "./…", "../…").
func isPath(ref string) bool {
	return strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../")
}

// fromPath is an image a row names by path: an OCI layout or a docker
// save archive holding one image, or a plain root filesystem.
func (s *Runner) fromPath(path string) (*image.Unpacked, error) {
	if image.IsRootfs(path) {
		return s.Store.ImportDir(path, nil)
	}
	cat, err := image.OpenPath(path)
	if err != nil {
		return nil, err
	}
	if n := len(cat.Entries()); n != 1 {
		return nil, fmt.Errorf("image %s holds %d images: name one by reference, with --images", path, n)
	}
	e := cat.Entries()[0]
	img, err := e.Open()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	return s.unpack(path, func(p func(int64)) (*image.Unpacked, error) { return s.Store.Unpack(img, e.Names, e.Where, p) },
		s.stored(img))
}

// Evaluate runs one rollout: the patch applied in the instance's image,
// then its tests, graded. An error is never returned for what the model
// did: the environment's and the sandbox's failures are outcomes of their
// own (swe.EnvironmentError, swe.SandboxError).
func (s *Runner) Evaluate(ctx context.Context, inst *swe.Instance, plan *swe.Plan, patch string) *swe.Outcome {
	return s.EvaluateUnder(ctx, inst, plan, patch, s.Opts.Rules)
}

// EvaluateUnder is Evaluate under the given rules (serve's /run_swe takes
// the client's).
func (s *Runner) EvaluateUnder(ctx context.Context, inst *swe.Instance, plan *swe.Plan, patch string,
	rules swe.Rules) *swe.Outcome {
	release := s.gate()
	defer release()
	start := time.Now()
	s.idle(0, 1)
	env, err := s.Environment(ctx, inst)
	s.idle(1, -1)
	defer s.idle(-1, 0)
	s.gotImage(inst.ImageRef(), time.Since(start))
	if err != nil {
		return &swe.Outcome{Kind: swe.EnvironmentError, Why: err.Error(), ExitCode: -1}
	}
	s.Store.Touch(env.ID)
	wd := inst.WorkDir
	if wd == "" {
		wd = env.Config.WorkingDir
	}
	driver := "#!/bin/bash\n" +
		"bash " + sweApply + " > " + sweApplyLog + " 2>&1\n" +
		"rc=$?\necho $rc > " + sweApplyExit + "\n" +
		"[ $rc -eq 0 ] || exit 0\n" +
		"cd " + shellQuote(wd) + " && exec bash " + sweEval + " 2>&1\n"
	st := ImageStep{
		Root: jail.ImageRoot{Lower: env.Root, UpperMB: s.Opts.DiskMB, IDBase: image.IDBase, IDRange: image.IDRange},
		Argv: []string{"/bin/bash", sweDir + "/run.sh"},
		Dir:  "/",
		Env:  sweEnv(env.Config.Env),
		Files: map[string][]byte{
			swe.PatchPath:      []byte(patch),
			sweApply:           []byte(swe.ApplyScript(wd, swe.PatchPath, rules)),
			sweEval:            []byte(plan.Script),
			sweDir + "/run.sh": []byte(driver),
		},
		Fetch:       []string{sweApplyLog, sweApplyExit},
		Timeout:     s.Opts.Timeout,
		MemoryMB:    s.Opts.MemoryMB,
		Pids:        4096,
		MergeStderr: true,
		MaxOutput:   s.Opts.MaxLog,
	}
	res, err := RunInImage(ctx, s.Jail, st)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return &swe.Outcome{Kind: swe.SandboxError, Why: "cancelled: " + err.Error(), ExitCode: -1}
		}
		return &swe.Outcome{Kind: swe.SandboxError, Why: err.Error(), ExitCode: -1}
	}
	// fetched files come back base64-encoded, as the protocol has them
	fetched := func(name string) string {
		b, _ := base64.StdEncoding.DecodeString(res.Files[name])
		return string(b)
	}
	out := swe.StepOutput{ApplyExit: -1, ApplyOutput: fetched(sweApplyLog), EvalOutput: res.Stdout,
		TimedOut: res.Outcome == jail.TimedOut}
	if n, err := strconv.Atoi(strings.TrimSpace(fetched(sweApplyExit))); err == nil {
		out.ApplyExit = n
	}
	if res.Outcome == jail.NotStarted {
		return &swe.Outcome{Kind: swe.EnvironmentError, Why: "the image cannot run the evaluation: " + res.Stderr,
			ExitCode: -1}
	}
	return swe.Judge(inst, plan, patch, out, rules)
}

// sweEnv is a rollout's environment: the image's, with a HOME.
func sweEnv(image []string) []string {
	env := append([]string{}, image...)
	home := false
	for _, e := range env {
		home = home || strings.HasPrefix(e, "HOME=")
	}
	if !home {
		env = append(env, "HOME=/root")
	}
	return env
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// An ImageStep is one command run in a container image's root (a
// repository task's environment): its own writable layer over the image,
// its own namespaces and cgroup, no network, locked down as every step is.
type ImageStep struct {
	Root    jail.ImageRoot
	Argv    []string // argv[0] an absolute path in the image
	Dir     string
	Env     []string
	Files   map[string][]byte // written at these absolute paths before the start
	Fetch   []string          // absolute paths read back after the end
	Stdin   []byte
	Timeout time.Duration
	// MemoryMB bounds the memory of all its processes together, the
	// writable layer's pages included (a tmpfs); Pids their number.
	MemoryMB, Pids int
	// MergeStderr sends stderr to stdout, one stream in order (a test log).
	MergeStderr bool
	// MaxOutput is what is kept of the output and each fetched file (0:
	// the sandbox's own bound).
	MaxOutput int
}

// RunInImage runs an image step to its end or its timeout with the jail.
// An error means the sandbox failed, not the command.
func RunInImage(ctx context.Context, j *jail.Runner, st ImageStep) (*jail.Result, error) {
	if !j.Iso.Contained || j.View == nil {
		return nil, errors.New("running in an image needs the contained sandbox (namespaces and a filesystem view): " +
			"see verl-score doctor")
	}
	root := st.Root
	spec := jail.Spec{
		Argv:        st.Argv,
		Dir:         st.Dir,
		Env:         st.Env,
		Stdin:       st.Stdin,
		Timeout:     st.Timeout,
		Image:       &root,
		MergeStderr: st.MergeStderr,
		MaxOutput:   st.MaxOutput,
		Lim: jail.Limits{CPUSec: jail.CPUSeconds(st.Timeout), Nproc: st.Pids,
			GroupMB: st.MemoryMB},
		View: jail.ViewStep{Abs: st.Files, Fetch: st.Fetch},
	}
	return j.Run(ctx, spec)
}
