// Package cmd holds verl-score's cobra commands: flags, wiring and exit
// codes. The work itself lives in the other packages.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/progress"
	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/version"
)

// Exit codes shared by every command.
const (
	ExitOK          = 0 // done
	ExitFailed      = 1 // could not run: I/O, configuration, sandbox unusable
	ExitUsage       = 2 // bad flags or arguments
	ExitRegression  = 3 // check/diff: rewards moved beyond the tolerance
	ExitInterrupted = 4 // stopped by a signal; resumable
)

const exitHelp = `

EXIT STATUS
  0  done
  1  failed (I/O, configuration, sandbox unusable)
  2  usage error
  3  regression (check, diff)
  4  interrupted; the output and journal allow --resume
`

// configExitHelp is the EXIT STATUS block of commands that score nothing.
const configExitHelp = `

EXIT STATUS
  0  done
  1  failed (the config file cannot be read, has an unknown key or a bad value)
  2  usage error (a bad flag or environment value)
`

// Streams are the command's standard streams, swapped for buffers in tests.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Interrupt, when closed, asks a scoring command to stop gently: send
	// nothing more, finish the cases in flight, write what is done. Main
	// closes it at the first SIGINT/SIGTERM and cancels the context at the
	// second; nil never fires.
	Interrupt <-chan struct{}
}

// UsageError marks errors in how the command was called (exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitError carries a specific exit code (with an optional message to print).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// NewRootCmd builds the command tree.
func NewRootCmd(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "verl-score",
		Short: "Re-score code-generation rollouts with verl's sandbox verdicts",
		Long: `verl-score runs generated programs against their test cases in a sandbox
(a SandboxFusion server, or its own embedded sandbox) and writes verl's
per-case verdicts and rewards for every response.` + exitHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Number(),
	}
	root.SetVersionTemplate(version.String() + "\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	addCommands(root, s)
	return root
}

// Main runs the CLI with os.Args and returns the process exit code.
func Main() int {
	ctx, interrupt, stop := signalContext(context.Background())
	defer stop()
	return Run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, Interrupt: interrupt})
}

// Run executes the command line args and maps the outcome to an exit code.
func Run(ctx context.Context, args []string, s Streams) int {
	// Progress, warnings and the interrupt notice come from several
	// goroutines; the writer they share takes one write at a time (an
	// *os.File does already, and must stay one: a terminal gets a bar).
	if _, isFile := s.ErrOut.(*os.File); s.ErrOut != nil && !isFile {
		s.ErrOut = &lockedWriter{w: s.ErrOut}
	}
	root := NewRootCmd(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(err, s.ErrOut)
}

func exitCode(err error, w io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(w, "verl-score:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(w, "verl-score:", err)
	var ue *UsageError
	// cobra's own usage errors (an unknown command) are plain errors.
	if errors.As(err, &ue) || errors.Is(err, rollout.ErrMissingColumn) ||
		strings.HasPrefix(err.Error(), "unknown command ") {
		return ExitUsage
	}
	return ExitFailed
}

// signalContext returns a channel closed by the first SIGINT/SIGTERM and a
// context cancelled by the second; a third one kills the process as usual.
func signalContext(parent context.Context) (context.Context, <-chan struct{}, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	interrupt := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(interrupt)
		case <-done:
			return
		}
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
		signal.Stop(sigs)
	}()
	return ctx, interrupt, func() {
		close(done)
		signal.Stop(sigs)
		cancel()
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// stopOnInterrupt stops eng gently when s.Interrupt closes, until the
// returned function is called (which waits for its notice to be written),
// and says at once what it waits for.
func stopOnInterrupt(s Streams, eng *score.Engine) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-s.Interrupt:
			eng.Stop()
			if s.ErrOut != nil {
				fmt.Fprintf(
					s.ErrOut,
					"\nverl-score: interrupted: waiting for the %s in flight to finish, then writing what is done "+
						"(interrupt again to abandon them; the run can be resumed either way)\n",
					progress.Count(int(eng.Progress().InFlight.Load()), "request"),
				)
			}
		case <-done:
		}
	}()
	return func() { close(done); wg.Wait() }
}
