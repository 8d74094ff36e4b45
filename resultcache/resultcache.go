// Package resultcache keeps sandbox answers across runs in a directory,
// addressed by content: the key of an entry is a digest of the execution
// (code as sent, stdin, language, timeouts, memory limit) and of the
// sandbox's identity, so an answer is reused only for the same program on
// the same sandbox.
//
// Entries are written through atomicfile (a temporary file renamed into
// place), so runs sharing the directory never see a half-written entry;
// two runs writing the same entry write the same answer. An entry that
// does not decode or whose checksum is wrong is ignored and removed. The
// directory is kept under a size bound by removing the oldest entries.
package resultcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/sandboxclient"
)

// version is part of every key: a change of the entry format or of what
// a key covers starts a new cache.
const version = "verl-score-cache-1"

// Dir is a cache directory. It is safe for concurrent use, and for
// several processes sharing the directory.
type Dir struct {
	dir      string
	identity [sha256.Size]byte
	maxBytes int64

	size    atomic.Int64 // bytes of the entries, as last counted plus written since
	trimMu  sync.Mutex
	corrupt atomic.Int64
}

// entry is the file of one cached answer.
type entry struct {
	Key      string          `json:"key"`
	Sum      string          `json:"sha256"` // of Response
	Response json.RawMessage `json:"response"`
}

// Open opens (creating it if need be) the cache in dir for the sandbox
// named by identity, bounded to maxBytes (> 0).
func Open(dir, identity string, maxBytes int64) (*Dir, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache size bound must be positive, got %d bytes", maxBytes)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	d := &Dir{dir: dir, identity: sha256.Sum256([]byte(version + "\x00" + identity)), maxBytes: maxBytes}
	n, _ := d.entries()
	var total int64
	for _, e := range n {
		total += e.size
	}
	d.size.Store(total)
	return d, nil
}

// Corrupt counts the entries found unreadable (and removed) so far.
func (d *Dir) Corrupt() int64 { return d.corrupt.Load() }

func (d *Dir) path(key [sha256.Size]byte) (string, string) {
	h := sha256.New()
	h.Write(d.identity[:])
	h.Write(key[:])
	name := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(d.dir, name[:2], name+".json"), name
}

// Get returns the answer kept for the execution key, if there is one.
func (d *Dir) Get(key [sha256.Size]byte) (*sandboxclient.Response, bool) {
	p, name := d.path(key)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var e entry
	resp := new(sandboxclient.Response)
	if json.Unmarshal(b, &e) != nil || e.Key != name || e.Sum != digest(e.Response) ||
		json.Unmarshal(e.Response, resp) != nil {
		d.corrupt.Add(1)
		os.Remove(p)
		return nil, false
	}
	return resp, true
}

// Put keeps resp as the answer to the execution key.
func (d *Dir) Put(key [sha256.Size]byte, resp *sandboxclient.Response) error {
	p, name := d.path(key)
	raw, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	b, err := json.Marshal(entry{Key: name, Sum: digest(raw), Response: raw})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	if d.size.Add(int64(len(b))) > d.maxBytes {
		d.trim()
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type fileInfo struct {
	path  string
	size  int64
	mtime int64
}

func (d *Dir) entries() ([]fileInfo, error) {
	var out []fileInfo
	err := filepath.WalkDir(d.dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by another run meanwhile
			}
			return err
		}
		if de.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		if info, err := de.Info(); err == nil {
			out = append(out, fileInfo{path: p, size: info.Size(), mtime: info.ModTime().UnixNano()})
		}
		return nil
	})
	return out, err
}

// trim removes the oldest entries until the cache holds at most 3/4 of
// its bound, so that trimming is rare.
func (d *Dir) trim() {
	if !d.trimMu.TryLock() {
		return // another goroutine is at it
	}
	defer d.trimMu.Unlock()
	es, _ := d.entries()
	sort.Slice(es, func(i, j int) bool { return es[i].mtime < es[j].mtime })
	var total int64
	for _, e := range es {
		total += e.size
	}
	for _, e := range es {
		if total <= d.maxBytes*3/4 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
	d.size.Store(total)
}
