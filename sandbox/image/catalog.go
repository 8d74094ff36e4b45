package image

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations that name an image in an OCI layout's index.
const (
	annotationRefName    = "org.opencontainers.image.ref.name"
	annotationContainerd = "io.containerd.image.name"
)

// An Entry is one image a catalog holds.
type Entry struct {
	// Names are the references it is known by, normalised
	// ("index.docker.io/library/python:3.11"), or a bare tag (":v1") that
	// the layout recorded without a repository.
	Names []string
	// Where is the layout directory or archive it is in.
	Where string
	open  func() (v1.Image, error)
}

// Open reads the image.
func (e *Entry) Open() (v1.Image, error) { return e.open() }

// A Catalog is the images of an --images directory: OCI layouts (the
// directory itself, or its subdirectories) and docker save archives
// (*.tar, *.tar.gz) in it.
type Catalog struct {
	dir     string
	entries []*Entry
	// problems are the files that looked like images and could not be read.
	problems []string
}

// OpenCatalog reads the directory's layouts and archives. A file that
// cannot be read is reported by Find when nothing else matches, not here,
// so one broken archive does not stop the rest.
func OpenCatalog(dir string) (*Catalog, error) {
	c := &Catalog{dir: dir}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("images: %s is not a directory", dir)
	}
	if isLayout(dir) {
		c.addLayout(dir)
	}
	items, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	for _, it := range items {
		p := filepath.Join(dir, it.Name())
		switch {
		case it.IsDir() && isLayout(p):
			c.addLayout(p)
		case !it.IsDir() && isArchiveName(it.Name()):
			c.addArchive(p)
		}
	}
	return c, nil
}

// OpenPath is the catalog of one OCI layout directory or one docker save
// archive, for a row that names its image by path.
func OpenPath(path string) (*Catalog, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	c := &Catalog{dir: path}
	switch {
	case st.IsDir() && isLayout(path):
		c.addLayout(path)
	case !st.IsDir():
		c.addArchive(path)
	default:
		return nil, fmt.Errorf("image %s: a directory that is not an OCI layout", path)
	}
	if len(c.entries) == 0 {
		return nil, fmt.Errorf("image %s: no image in it (%s)", path, strings.Join(c.problems, "; "))
	}
	return c, nil
}

// IsRootfs reports whether dir looks like a plain root filesystem: a
// directory, not an OCI layout, with a /bin or /usr.
func IsRootfs(dir string) bool {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || isLayout(dir) {
		return false
	}
	for _, p := range []string{"bin", "usr"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			return true
		}
	}
	return false
}

// Entries are the images found, in the order read.
func (c *Catalog) Entries() []*Entry { return c.entries }

func isLayout(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "oci-layout"))
	return err == nil
}

func isArchiveName(n string) bool {
	return strings.HasSuffix(n, ".tar") || strings.HasSuffix(n, ".tar.gz")
}

func (c *Catalog) addLayout(dir string) {
	p, err := layout.FromPath(dir)
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: %v", dir, err))
		return
	}
	idx, err := p.ImageIndex()
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: %v", dir, err))
		return
	}
	man, err := idx.IndexManifest()
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: %v", dir, err))
		return
	}
	for _, d := range man.Manifests {
		var names []string
		for _, key := range []string{annotationRefName, annotationContainerd} {
			if n := d.Annotations[key]; n != "" {
				names = append(names, normalise(n, key == annotationRefName))
			}
		}
		d := d
		where := dir
		c.entries = append(c.entries, &Entry{Names: dedupe(names), Where: where, open: func() (v1.Image, error) {
			return imageOf(idx, d)
		}})
	}
}

// imageOf is the image a layout's descriptor names: the image itself, or
// from an index the one for this machine's platform.
func imageOf(idx v1.ImageIndex, d v1.Descriptor) (v1.Image, error) {
	if d.MediaType.IsImage() {
		return idx.Image(d.Digest)
	}
	if !d.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s is %s, neither an image nor an index", d.Digest, d.MediaType)
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	man, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	var seen []string
	for _, m := range man.Manifests {
		if m.Platform == nil {
			continue
		}
		seen = append(seen, m.Platform.OS+"/"+m.Platform.Architecture)
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return imageOf(child, m)
		}
	}
	return nil, fmt.Errorf("index %s has no image for linux/%s (it has %v)", d.Digest, runtime.GOARCH, seen)
}

func (c *Catalog) addArchive(path string) {
	opener := archiveOpener(path)
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	for _, d := range m {
		var names []string
		for _, t := range d.RepoTags {
			names = append(names, normalise(t, false))
		}
		var tag *name.Tag
		if len(d.RepoTags) > 0 {
			if t, err := name.NewTag(d.RepoTags[0]); err == nil {
				tag = &t
			}
		}
		c.entries = append(c.entries, &Entry{Names: dedupe(names), Where: path, open: func() (v1.Image, error) {
			return tarball.Image(opener, tag)
		}})
	}
}

// archiveOpener opens a docker save archive, gunzipping a .tar.gz.
func archiveOpener(path string) tarball.Opener {
	return func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil || !strings.HasSuffix(path, ".gz") {
			return f, err
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{z, f}, nil
	}
}

// normalise writes a reference in full (registry, repository, tag); a
// bare tag of an OCI layout's ref.name ("v1", "latest") stays ":v1".
func normalise(ref string, mayBeTag bool) string {
	if mayBeTag && !strings.ContainsAny(ref, "/:@") {
		return ":" + ref
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return ref
	}
	return r.Name()
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ErrNotFound is wrapped by Find's error when no image has the name.
var ErrNotFound = errors.New("image not found")

// Find is the image a row names: by reference, against every name the
// catalog's layouts and archives record; a bare tag a layout recorded
// matches a reference with that tag whose repository ends in the layout's
// directory name.
func (c *Catalog) Find(ref string) (*Entry, error) {
	want := normalise(ref, false)
	var tag, repoTail string
	if r, err := name.ParseReference(ref); err == nil {
		if t, ok := r.(name.Tag); ok {
			tag = t.TagStr()
		}
		parts := strings.Split(r.Context().RepositoryStr(), "/")
		repoTail = parts[len(parts)-1]
	}
	var bareTag *Entry
	for _, e := range c.entries {
		for _, n := range e.Names {
			if n == want {
				return e, nil
			}
			if tag != "" && n == ":"+tag && filepath.Base(e.Where) == repoTail && bareTag == nil {
				bareTag = e
			}
		}
	}
	if bareTag != nil {
		return bareTag, nil
	}
	var known []string
	for _, e := range c.entries {
		known = append(known, e.Names...)
	}
	sort.Strings(known)
	if len(known) > 8 {
		known = append(known[:8], fmt.Sprintf("… %d more", len(known)-8))
	}
	msg := fmt.Sprintf("%s in %s (%d images there: %s)", ref, c.dir, len(c.entries), strings.Join(known, ", "))
	if len(c.problems) > 0 {
		msg += "; unreadable: " + strings.Join(c.problems, "; ")
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, msg)
}
