//go:build linux

package image

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// A Store holds unpacked images by ID, one directory shared by every
// verl-score process on the machine:
//
//	images/<id>/rootfs       the flattened files, owners shifted by IDBase
//	images/<id>/config.json  the image's configuration (Env, WorkingDir, User)
//	images/<id>/meta.json    names, sizes, when unpacked
//	tmp/<id>.<random>/       an unpack in progress, renamed into images/ when whole
//	locks/<id>.lock          held (flock) while <id> is unpacked
//
// An image in images/ is always whole: an unpack killed part way leaves
// only a tmp/ directory, which the next Store to open removes once no
// process holds its lock.
type Store struct {
	dir string
}

// Meta is what a store records of an unpacked image.
type Meta struct {
	ID       string    `json:"id"`
	Names    []string  `json:"names,omitempty"`
	Source   string    `json:"source,omitempty"`
	Bytes    int64     `json:"bytes"`
	Files    int64     `json:"files"`
	Skipped  []string  `json:"skipped,omitempty"`
	Unpacked time.Time `json:"unpacked"`
	Seconds  float64   `json:"unpack_seconds"`
}

// An Unpacked image is one ready in the store.
type Unpacked struct {
	ID     string
	Root   string // the flattened root filesystem, read-only to rollouts
	Config v1.Config
	Meta   Meta
	// Fresh is set when this call unpacked it (not found it there, nor
	// waited for another process's unpack).
	Fresh bool
}

// OpenStore opens (making it if need be) the store at dir and removes what
// unpacks that were killed left behind.
func OpenStore(dir string) (*Store, error) {
	for _, sub := range []string{"images", "tmp", "locks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	s := &Store{dir: dir}
	s.removeLeftovers()
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) removeLeftovers() {
	items, _ := os.ReadDir(filepath.Join(s.dir, "tmp"))
	for _, it := range items {
		id, _, _ := strings.Cut(it.Name(), ".")
		unlock, err := s.lock(id, false)
		if err != nil {
			continue // being unpacked now
		}
		_ = os.RemoveAll(filepath.Join(s.dir, "tmp", it.Name()))
		unlock()
	}
}

// lock takes the image's lock, waiting for it when wait is set.
func (s *Store) lock(id string, wait bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "locks", id+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// Get is an image already in the store, by ID.
func (s *Store) Get(id string) (*Unpacked, bool) {
	dir := filepath.Join(s.dir, "images", id)
	u := &Unpacked{ID: id, Root: filepath.Join(dir, "rootfs")}
	var cfg v1.ConfigFile
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err != nil || json.Unmarshal(b, &cfg) != nil {
		return nil, false
	}
	if b, err := os.ReadFile(filepath.Join(dir, "meta.json")); err != nil || json.Unmarshal(b, &u.Meta) != nil {
		return nil, false
	}
	u.Config = cfg.Config
	return u, true
}

// ID is an image's identity in the store: its configuration's digest (the
// same image from a layout and from an archive is one entry).
func ID(img v1.Image) (string, error) {
	h, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("read the image's configuration: %w", err)
	}
	return h.Hex, nil
}

// Unpack puts an image into the store once: a second call, here or in
// another process, waits for the first and finds it there. progress, if
// set, is told the bytes written as they are.
func (s *Store) Unpack(img v1.Image, names []string, source string, progress func(int64)) (*Unpacked, error) {
	id, err := ID(img)
	if err != nil {
		return nil, err
	}
	if u, ok := s.Get(id); ok {
		return u, nil
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the image's configuration: %w", err)
	}
	return s.unpack(id, names, source, cfg, func() io.ReadCloser { return mutate.Extract(img) }, progress)
}

// ImportDir puts a plain root filesystem (a directory) into the store, as
// an image of one layer with no configuration. Its ID is its path's and
// its tree's (every entry's name, size, mode and time), so a changed tree
// is imported again.
func (s *Store) ImportDir(dir string, progress func(int64)) (*Unpacked, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", abs)
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d %o %d\n", p, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("root filesystem %s: %w", dir, err)
	}
	id := "dir-" + hex.EncodeToString(h.Sum(nil))
	if u, ok := s.Get(id); ok {
		return u, nil
	}
	open := func() io.ReadCloser {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(DirTar(pw, abs, "", time.Time{})) }()
		return pr
	}
	path := "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	cfg := &v1.ConfigFile{OS: "linux", Config: v1.Config{Env: []string{path}}}
	return s.unpack(id, []string{abs}, abs, cfg, open, progress)
}

// unpack writes the flattened stream open gives into the store as id, once
// (see Unpack).
func (s *Store) unpack(id string, names []string, source string, cfg *v1.ConfigFile, open func() io.ReadCloser,
	progress func(int64)) (*Unpacked, error) {
	unlock, err := s.lock(id, true)
	if err != nil {
		return nil, fmt.Errorf("image store: lock %s: %w", id, err)
	}
	defer unlock()
	if u, ok := s.Get(id); ok {
		return u, nil // another process unpacked it while we waited
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(s.dir, "tmp", id+"."+hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(filepath.Join(tmp, "rootfs"), 0o755); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	// the root is the image's root's: 0755, owned by its root
	if err := os.Lchown(filepath.Join(tmp, "rootfs"), IDBase, IDBase); err != nil {
		return nil, err
	}
	start := time.Now()
	rc := open()
	st, err := extract(rc, filepath.Join(tmp, "rootfs"), progress)
	if err == nil {
		// Extract ends its tar stream before it reports a failure (an
		// unsafe path, a layer it could not read): the error comes after
		// the archive's end, so read on to it.
		_, err = io.Copy(io.Discard, rc)
	}
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("unpack image %s: %w", id[:12], err)
	}
	meta := Meta{ID: id, Names: names, Source: source, Bytes: st.Bytes, Files: st.Files, Skipped: st.Skipped,
		Unpacked: time.Now().UTC(), Seconds: time.Since(start).Seconds()}
	if len(meta.Skipped) > 20 {
		meta.Skipped = append(meta.Skipped[:20], fmt.Sprintf("… %d more", len(st.Skipped)-20))
	}
	for name, v := range map[string]any{"config.json": cfg, "meta.json": meta} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "images", id)); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	ok = true
	u, found := s.Get(id)
	if !found {
		return nil, fmt.Errorf("image store: %s vanished after its unpack", id)
	}
	u.Fresh = true
	return u, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
