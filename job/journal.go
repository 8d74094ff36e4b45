package job

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/verl-score/verl-score/results"
	"io"
	"os"
	"sync"
	"time"

	"github.com/verl-score/verl-score/atomicfile"
)

// The journal is a JSONL file beside the output: a header line, then one
// line per finished input row with everything needed to write that row's
// outputs and summary again. It is appended to as rows finish, so a run
// stopped at any point (even killed) resumes without redoing them.

const journalVersion = 1

type journalHeader struct {
	Version     int    `json:"version"`
	Input       string `json:"input"`
	Fingerprint string `json:"fingerprint"`
}

func fingerprint(parts ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		_ = enc.Encode(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// A finished row is written to the file at once, so a kill -9 of the
// process loses none (the kernel holds what was written); it reaches the
// disk (fsync) within journalSyncEvery, or sooner once journalSyncRows rows
// are waiting, so a crash of the machine loses at most that much.
const (
	journalSyncEvery = time.Second
	journalSyncRows  = 256
)

// journal appends finished rows.
type journal struct {
	path string
	f    *os.File
	w    *bufio.Writer

	syncRows  int           // sync once this many rows wait (journalSyncRows)
	syncEvery time.Duration // sync this often while rows wait (journalSyncEvery)

	mu      sync.Mutex
	pending int // rows written since the last sync
	err     error
	stop    chan struct{}
	stopped chan struct{}
	syncs   int
}

// startSyncing makes the journal sync itself every journalSyncEvery while
// rows are waiting.
func (j *journal) startSyncing() {
	j.stop, j.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(j.stopped)
		t := time.NewTicker(j.syncEvery)
		defer t.Stop()
		for {
			select {
			case <-j.stop:
				return
			case <-t.C:
				j.mu.Lock()
				if j.pending > 0 && j.err == nil {
					j.err = j.syncLocked()
				}
				j.mu.Unlock()
			}
		}
	}()
}

// createJournal writes a new journal at path, atomically: the header and
// the rows of an earlier journal (keep) go to a temporary file that
// replaces the old journal only once synced, so that a run interrupted
// twice loses nothing. The journal then stays open for appending.
func createJournal(path string, hdr journalHeader, keep map[int]*results.Row) (*journal, error) {
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	enc := json.NewEncoder(af)
	if err := enc.Encode(hdr); err != nil {
		af.Abort()
		return nil, fmt.Errorf("journal: %w", err)
	}
	for _, rec := range keep {
		if err := enc.Encode(rec); err != nil {
			af.Abort()
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	f, err := af.CommitOpen()
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	j := &journal{
		path:      path,
		f:         f,
		w:         bufio.NewWriterSize(f, 1<<16),
		syncRows:  journalSyncRows,
		syncEvery: journalSyncEvery,
	}
	j.startSyncing()
	return j, nil
}

// A nil journal (output to stdout) keeps nothing.
func (j *journal) write(v any) error {
	if j == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	if _, err := j.w.Write(b); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.pending++
	if j.pending >= j.syncRows {
		j.err = j.syncLocked()
	}
	return j.err
}

func (j *journal) sync() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	j.err = j.syncLocked()
	return j.err
}

func (j *journal) syncLocked() error {
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.pending = 0
	j.syncs++
	return nil
}

// close syncs the rows left and closes the file; safe to call twice.
func (j *journal) close() error {
	if j == nil {
		return nil
	}
	if j.stop != nil {
		close(j.stop)
		<-j.stopped
		j.stop = nil
	}
	if j.f == nil {
		return nil
	}
	err := j.sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	return err
}

// errNoJournal is returned by loadJournal when there is nothing to resume.
var errNoJournal = errors.New("no journal")

// loadJournal reads the finished rows of an earlier run. A torn last line
// (the process died while writing it) is ignored.
func loadJournal(path, input, fp string) (map[int]*results.Row, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoJournal
	}
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("journal %s: no header", path)
	}
	var hdr journalHeader
	if err := json.Unmarshal(line, &hdr); err != nil || hdr.Version != journalVersion {
		return nil, fmt.Errorf("journal %s: not a verl-score journal (version %d)", path, hdr.Version)
	}
	if hdr.Input != input {
		return nil, fmt.Errorf("journal %s belongs to input %s, not %s", path, hdr.Input, input)
	}
	if hdr.Fingerprint != fp {
		return nil, fmt.Errorf(
			"journal %s was written with other scoring settings; resume with the same flags or delete it",
			path,
		)
	}
	rows := map[int]*results.Row{}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var rec results.Row
			if jerr := json.Unmarshal(line, &rec); jerr != nil {
				return nil, fmt.Errorf("journal %s: bad line: %w", path, jerr)
			}
			rows[rec.Index] = &rec
		}
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
	}
}
