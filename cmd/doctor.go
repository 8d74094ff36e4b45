package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/sandbox"
	"github.com/verl-score/verl-score/sandbox/seccomp"
	"github.com/verl-score/verl-score/sandbox/toolchain"
)

// doctorOptions are the flag values and dependencies of `verl-score doctor`.
type doctorOptions struct {
	JSON    bool
	Prepare bool
	Seccomp bool
	Out     io.Writer

	// toolchains and protections probe the host; tests may replace them.
	toolchains  func() []toolchain.Toolchain
	protections func() []sandbox.Protection
	fastPaths   func() []sandbox.Protection
	languages   func() []sandbox.Protection
	prepare     func(context.Context) []sandbox.Protection
	filter      func() (*seccomp.Filter, error)
}

func newDoctorCmd(s Streams) *cobra.Command {
	opts := &doctorOptions{
		Out:         s.Out,
		toolchains:  toolchain.Toolchains,
		protections: sandbox.Protections,
		fastPaths:   sandbox.FastPaths,
		languages:   sandbox.Languages,
		prepare:     sandbox.Prepare,
		filter:      sandbox.Filter,
	}
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Show the toolchains and protections the local sandbox would use",
		Long: `Doctor reports what the local sandbox finds on this machine: for each
language, the program it would run with its path and version, and which
containment measures the host allows (network namespace, per-run user,
resource limits, ...), and which fast paths runs take (Python forked from
a pre-started interpreter, C++ against a precompiled bits/stdc++.h; both
give the plain way's answers). A missing toolchain means requests in that
language get a SandboxError (verdict -1) instead of a real verdict.

--prepare also builds, and waits for, every cache a language's first cases
would otherwise wait for: the precompiled header, javac's archive, the Go
module cache with testify and a warm Go build cache (about a minute on a
cold machine). A compile never pays for them inside its time limit either
way; preparing in an image's build step spares the first cases the wait.

--seccomp prints the system-call filter every sandboxed program starts
under instead: where it comes from (Docker's default profile, resolved for
a process without capabilities, and verl-score's refusals in front of it),
each rule with its calls, action and condition on arguments, and the
program's SHA-256, which a run's provenance names. With --json it is JSON,
the BPF program included (base64 of the kernel's sock_filter records).

EXIT STATUS
  0  report written (whatever it says)
  1  the report could not be written
  2  usage error
`,
		Example: `  verl-score doctor
  verl-score doctor --prepare     # in a Dockerfile: RUN verl-score doctor --prepare
  verl-score doctor --json | jq '.toolchains[] | select(.found | not)'
  verl-score doctor --seccomp     # audit the system-call filter`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runDoctor(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	c.Flags().BoolVar(&opts.Seccomp, "seccomp", false,
		"print the sandbox's system-call filter, rule by rule, instead of the report")
	c.Flags().BoolVar(&opts.Prepare, "prepare", false, "also build the caches of every language's first compile "+
		"(precompiled header, javac archive, Go modules and build cache) and report them")
	return c
}

// doctorReport is the machine-readable form of the report.
type doctorReport struct {
	OS          string             `json:"os"`
	Arch        string             `json:"arch"`
	CPUs        int                `json:"cpus"`
	Toolchains  []doctorToolchain  `json:"toolchains"`
	Protections []doctorProtection `json:"protections"`
	FastPaths   []doctorProtection `json:"fast_paths"`
	Languages   []doctorProtection `json:"languages"`
	Prepared    []doctorProtection `json:"prepared,omitempty"`
}

type doctorToolchain struct {
	Language string `json:"language"`
	Program  string `json:"program"`
	Found    bool   `json:"found"`
	Path     string `json:"path"`
	Version  string `json:"version"`
}

type doctorProtection struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// runDoctor probes the host and writes the report.
func runDoctor(ctx context.Context, opts *doctorOptions) error {
	if opts.Seccomp {
		return writeFilter(opts)
	}
	rep := doctorReport{
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		CPUs:        runtime.NumCPU(),
		Toolchains:  []doctorToolchain{},
		Protections: []doctorProtection{},
		FastPaths:   []doctorProtection{},
		Languages:   []doctorProtection{},
	}
	for _, t := range opts.toolchains() {
		rep.Toolchains = append(rep.Toolchains, doctorToolchain{
			Language: t.Language, Program: t.Program, Found: t.Found, Path: t.Path, Version: t.Version,
		})
	}
	for _, p := range opts.protections() {
		rep.Protections = append(rep.Protections, doctorProtection{Name: p.Name, Available: p.Available, Detail: p.Detail})
	}
	if opts.languages != nil {
		for _, p := range opts.languages() {
			rep.Languages = append(rep.Languages, doctorProtection{Name: p.Name, Available: p.Available, Detail: p.Detail})
		}
	}
	if opts.fastPaths != nil {
		for _, p := range opts.fastPaths() {
			rep.FastPaths = append(rep.FastPaths, doctorProtection{Name: p.Name, Available: p.Available, Detail: p.Detail})
		}
	}
	if opts.Prepare && opts.prepare != nil {
		for _, p := range opts.prepare(ctx) {
			rep.Prepared = append(rep.Prepared, doctorProtection{Name: p.Name, Available: p.Available, Detail: p.Detail})
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		return nil
	}
	return writeDoctorTable(opts.Out, rep)
}

func writeDoctorTable(out io.Writer, rep doctorReport) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "host: %s/%s, %d CPUs\n\n", rep.OS, rep.Arch, rep.CPUs)
	fmt.Fprintln(tw, "LANGUAGE\tPROGRAM\tFOUND\tPATH\tVERSION")
	for _, t := range rep.Toolchains {
		path, version := t.Path, t.Version
		if path == "" {
			path = "-"
		}
		if version == "" {
			version = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Language, t.Program, yesNo(t.Found), path, version)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PROTECTION\tAVAILABLE\tDETAIL")
	for _, p := range rep.Protections {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, yesNo(p.Available), p.Detail)
	}
	if len(rep.Languages) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "VERL LANGUAGE\tRUNS HERE\tDETAIL")
		for _, p := range rep.Languages {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, yesNo(p.Available), p.Detail)
		}
	}
	if len(rep.FastPaths) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "FAST PATH\tIN USE\tDETAIL")
		for _, p := range rep.FastPaths {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, yesNo(p.Available), p.Detail)
		}
	}
	if len(rep.Prepared) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "PREPARED\tREADY\tDETAIL")
		for _, p := range rep.Prepared {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, yesNo(p.Available), p.Detail)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeFilter writes the seccomp filter for an audit (doctor --seccomp).
func writeFilter(opts *doctorOptions) error {
	f, err := opts.filter()
	if err != nil {
		return fmt.Errorf("the seccomp filter: %w", err)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		err := enc.Encode(struct {
			Arch         string         `json:"arch"`
			Source       string         `json:"source"`
			SHA256       string         `json:"sha256"`
			Instructions int            `json:"instructions"`
			Allowed      int            `json:"allowed"`
			Default      string         `json:"default"`
			Rules        []seccomp.Rule `json:"rules"`
			Skipped      []string       `json:"skipped"`
			Program      []byte         `json:"program"`
		}{f.ArchName, f.Source, f.Digest(), f.Instructions(), f.Allowed, "EPERM", f.Rules, f.Skipped, f.Program})
		if err != nil {
			return fmt.Errorf("write the filter: %w", err)
		}
		return nil
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "seccomp filter: %s\n", f.Summary())
	fmt.Fprintf(tw, "sha256 %s\n", f.Digest())
	fmt.Fprintln(tw, "rules are tried in this order; a call no rule matches gets EPERM")
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FROM\tACTION\tARGUMENTS\tCALLS")
	for _, r := range f.Rules {
		args := r.Args
		if args == "" {
			args = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Source, r.Action, args, strings.Join(r.Names, " "))
	}
	if len(f.Skipped) > 0 {
		fmt.Fprintf(
			tw,
			"\nnames in the profile this architecture has no call for (left out): %s\n",
			strings.Join(f.Skipped, " "),
		)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the filter: %w", err)
	}
	return nil
}
