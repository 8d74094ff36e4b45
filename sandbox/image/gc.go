//go:build linux

package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The store's bound. Every process using an unpacked image holds a shared
// lock on locks/use-<id>.lock for as long as it may start rollouts in it
// (Hold), and touches the image when it does (its directory's time is its
// last use). Eviction removes the least recently used images whose use
// lock it can take exclusively, so it never removes one in use, here or in
// another process; a process killed lets go of its locks with it. A pull
// holds locks/gc.lock shared while it writes blobs no layout names yet,
// and the sweep of blobs no layout names waits for none: it skips a round
// while a pull runs.

// ErrEvicted is returned by Hold for an image evicted meanwhile: unpack it
// again.
var ErrEvicted = errors.New("the image was evicted from the store")

// Hold marks an unpacked image in use until release is called (or the
// process ends): Prune does not remove it. It touches the image's time of
// last use.
func (s *Store) Hold(id string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "locks", "use-"+id+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("image store: %w", err)
	}
	if _, ok := s.Get(id); !ok {
		f.Close()
		return nil, ErrEvicted
	}
	s.Touch(id)
	return func() { f.Close() }, nil
}

// Touch records a use of the image now.
func (s *Store) Touch(id string) {
	now := time.Now()
	_ = os.Chtimes(filepath.Join(s.dir, "images", id), now, now)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// An Item is one unpacked image in the store, as List reports it.
type Item struct {
	Meta
	// Refs are the references pulled (or imported) to it.
	Refs     []string  `json:"refs,omitempty"`
	LastUsed time.Time `json:"last_used"`
	InUse    bool      `json:"in_use"`
}

// Usage is what the store holds.
type Usage struct {
	Images []Item `json:"images"`
	// ImageBytes are the unpacked trees'; BlobBytes the fetched blobs'
	// (layers as registries hold them, shared by the images naming them).
	ImageBytes int64 `json:"image_bytes"`
	BlobBytes  int64 `json:"blob_bytes"`
	Blobs      int   `json:"blobs"`
}

// Total is the store's size on disk, unpacked images and blobs.
func (u *Usage) Total() int64 { return u.ImageBytes + u.BlobBytes }

// List reports the store's images, least recently used first, and its
// blobs' size.
func (s *Store) List() (*Usage, error) {
	items, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	refs := s.pulledRefs()
	u := &Usage{}
	for _, it := range items {
		im, ok := s.Get(it.Name())
		if !ok {
			continue
		}
		st, err := os.Stat(filepath.Join(s.dir, "images", it.Name()))
		if err != nil {
			continue
		}
		item := Item{Meta: im.Meta, Refs: refs[im.ID], LastUsed: st.ModTime().UTC(), InUse: s.inUse(im.ID)}
		u.Images = append(u.Images, item)
		u.ImageBytes += im.Meta.Bytes
	}
	sort.SliceStable(u.Images, func(i, j int) bool { return u.Images[i].LastUsed.Before(u.Images[j].LastUsed) })
	_ = filepath.WalkDir(filepath.Join(s.dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				u.BlobBytes += fi.Size()
				u.Blobs++
			}
		}
		return nil
	})
	return u, nil
}

// inUse: some process holds the image (its use lock cannot be taken).
func (s *Store) inUse(id string) bool {
	f, err := os.OpenFile(filepath.Join(s.dir, "locks", "use-"+id+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false
	}
	defer f.Close()
	return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) != nil
}

// pulled is one layout in pulled/: its reference, its manifest and the
// store ID (configuration digest) it unpacks to.
type pulledLayout struct {
	dir   string
	p     Pulled
	id    string
	blobs []v1.Hash
}

func (s *Store) pulledLayouts() []pulledLayout {
	dirs, _ := filepath.Glob(filepath.Join(s.dir, "pulled", "*"))
	var out []pulledLayout
	for _, d := range dirs {
		var pl pulledLayout
		pl.dir = d
		b, err := os.ReadFile(filepath.Join(d, "pull.json"))
		if err != nil || json.Unmarshal(b, &pl.p) != nil {
			continue
		}
		raw, err := os.ReadFile(s.blobPath(pl.p.Digest))
		if err != nil {
			continue
		}
		m, err := v1.ParseManifest(strings.NewReader(string(raw)))
		if err != nil {
			continue
		}
		pl.id = m.Config.Digest.Hex
		pl.blobs = append(pl.blobs, pl.p.Digest, m.Config.Digest)
		for _, l := range m.Layers {
			pl.blobs = append(pl.blobs, l.Digest)
		}
		out = append(out, pl)
	}
	return out
}

// pulledRefs are the pulled references by the store ID they unpack to.
func (s *Store) pulledRefs() map[string][]string {
	out := map[string][]string{}
	for _, pl := range s.pulledLayouts() {
		out[pl.id] = append(out[pl.id], pl.p.Ref)
	}
	return out
}

// Pruned is what Prune removed.
type Pruned struct {
	Images []Item `json:"images"`
	// Bytes freed: the trees' and the blobs no image names any more.
	Bytes int64 `json:"bytes"`
	Blobs int   `json:"blobs"`
	// Kept are images over the bound that are in use, so not removed.
	Kept int `json:"kept_in_use"`
}

// Prune removes the least recently used images not in use (with their
// pulls, and then the blobs no pull names) until the store holds at most
// maxBytes; maxBytes < 0 removes every image not in use.
func (s *Store) Prune(maxBytes int64) (*Pruned, error) {
	u, err := s.List()
	if err != nil {
		return nil, err
	}
	out := &Pruned{}
	total := u.Total()
	layouts := s.pulledLayouts()
	// a blob is freed with the last image naming it
	refs := map[string]int{}
	for _, pl := range layouts {
		for _, h := range pl.blobs {
			refs[h.Hex]++
		}
	}
	for _, im := range u.Images {
		if maxBytes >= 0 && total <= maxBytes {
			break
		}
		freed, ok := s.evict(im.ID, layouts)
		if !ok {
			out.Kept++
			continue
		}
		for _, pl := range layouts {
			if pl.id != im.ID {
				continue
			}
			for _, h := range pl.blobs {
				if refs[h.Hex]--; refs[h.Hex] == 0 {
					if fi, err := os.Stat(s.blobPath(h)); err == nil {
						freed += fi.Size()
					}
				}
			}
		}
		total -= freed
		out.Images = append(out.Images, im)
	}
	n, b := s.sweepBlobs()
	out.Blobs = n
	for _, im := range out.Images {
		out.Bytes += im.Bytes
	}
	out.Bytes += b
	return out, nil
}

// evict removes one image unless it is in use or being unpacked: its tree
// first renamed out of images/ (so no process finds half of it), then its
// pulled layouts. freed counts the tree's bytes.
func (s *Store) evict(id string, layouts []pulledLayout) (freed int64, ok bool) {
	use, err := os.OpenFile(filepath.Join(s.dir, "locks", "use-"+id+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, false
	}
	defer use.Close()
	if flock(use, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return 0, false
	}
	unlock, err := s.lock(id, false)
	if err != nil {
		return 0, false
	}
	defer unlock()
	im, found := s.Get(id)
	if !found {
		return 0, false
	}
	gone := filepath.Join(s.dir, "tmp", id+".evicted")
	if err := os.Rename(filepath.Join(s.dir, "images", id), gone); err != nil {
		return 0, false
	}
	for _, pl := range layouts {
		if pl.id == id {
			_ = os.RemoveAll(pl.dir)
		}
	}
	_ = os.RemoveAll(gone)
	return im.Meta.Bytes, true
}

// sweepBlobs removes the blobs no pulled layout names, unless a pull is
// under way (its blobs are named by no layout yet).
func (s *Store) sweepBlobs() (n int, bytes int64) {
	gc, err := os.OpenFile(filepath.Join(s.dir, "locks", "gc.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, 0
	}
	defer gc.Close()
	if flock(gc, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return 0, 0
	}
	named := map[string]bool{}
	for _, pl := range s.pulledLayouts() {
		for _, h := range pl.blobs {
			named[h.Hex] = true
		}
	}
	files, _ := filepath.Glob(filepath.Join(s.dir, "blobs", "sha256", "*"))
	for _, f := range files {
		hex := strings.TrimSuffix(filepath.Base(f), ".partial")
		if named[hex] || strings.Contains(filepath.Base(f), ".tmp") {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if os.Remove(f) == nil {
			n++
			bytes += fi.Size()
		}
	}
	return n, bytes
}

// pulling holds the store's gc lock shared while a pull writes blobs.
func (s *Store) pulling() (func(), error) {
	gc, err := os.OpenFile(filepath.Join(s.dir, "locks", "gc.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	if err := flock(gc, syscall.LOCK_SH); err != nil {
		gc.Close()
		return nil, fmt.Errorf("image store: %w", err)
	}
	return func() { gc.Close() }, nil
}
