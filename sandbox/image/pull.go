//go:build linux

package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Pulls put what they fetch beside the unpacked images:
//
//	blobs/sha256/<hex>          a blob fetched from a registry (a layer, a
//	                            configuration, a manifest), kept once by its
//	                            digest and shared by every image naming it
//	blobs/sha256/<hex>.partial  a fetch under way or interrupted: the next
//	                            fetch resumes it from its length
//	pulled/<key>.<digest>/      one pulled reference: an OCI layout whose
//	                            blobs are the store's (a link)
//	locks/blob-<hex>.lock       held while the blob is fetched
//
// A blob is renamed into place only once its size and digest are checked,
// so a truncated or corrupt download is never unpacked.

// Pull fetches ref from its registry into the store: the manifest (an
// index resolved to the platform's image), the configuration, and each
// layer not in the store already. ctx ends it; what it fetched so far is
// kept and the next pull resumes from there.
func (s *Store) Pull(ctx context.Context, ref string, o PullOptions) (*Pulled, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	release, err := s.pulling() // no sweep of blobs while this one's are named by no layout
	if err != nil {
		return nil, err
	}
	defer release()
	if o.Platform.OS == "" {
		o.Platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	auth, err := o.authenticator(r.Context())
	if err != nil {
		return nil, fmt.Errorf("image %s: credentials for %s: %w", ref, r.Context().RegistryStr(), err)
	}
	desc, err := remote.Get(r, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(base),
		remote.WithPlatform(o.Platform))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	dig, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	man, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", ref, err)
	}
	rawMan, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", ref, err)
	}
	rawCfg, err := img.RawConfigFile() // checked against its digest by go-containerregistry
	if err != nil {
		return nil, fmt.Errorf("image %s: configuration: %w", ref, err)
	}
	if err := s.putBlob(man.Config.Digest, rawCfg); err != nil {
		return nil, err
	}
	if err := s.putBlob(dig, rawMan); err != nil {
		return nil, err
	}
	rt, err := transport.NewWithContext(ctx, r.Context().Registry, auth, base,
		[]string{r.Context().Scope(transport.PullScope)})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	f := &fetcher{s: s, repo: r.Context(), client: &http.Client{Transport: rt}, attempts: o.Attempts,
		progress: o.Progress}
	p := &Pulled{Ref: r.Name(), Digest: dig, Layers: len(man.Layers), Pulled: time.Now().UTC()}
	for _, l := range man.Layers {
		if len(l.URLs) > 0 && !l.MediaType.IsDistributable() {
			return nil, fmt.Errorf("image %s: layer %s is a foreign layer (%s), which is not pulled", ref, l.Digest,
				l.MediaType)
		}
		p.Bytes += l.Size
		n, had, err := f.fetch(ctx, l)
		if err != nil {
			return nil, fmt.Errorf("image %s: layer %s: %w", ref, l.Digest, err)
		}
		p.Fetched += n
		if had {
			p.Shared++
		}
	}
	if p.Dir, err = s.writePulled(p, man.MediaType, int64(len(rawMan))); err != nil {
		return nil, err
	}
	return p, nil
}

func (o *PullOptions) authenticator(repo name.Repository) (authn.Authenticator, error) {
	if a, ok := o.Auth[repo.RegistryStr()]; ok {
		return a, nil
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	return kc.Resolve(repo)
}

func (s *Store) blobPath(h v1.Hash) string { return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex) }

// putBlob writes a blob already read (and checked) whole.
func (s *Store) putBlob(h v1.Hash, b []byte) error {
	path := s.blobPath(h)
	if st, err := os.Stat(path); err == nil && st.Size() == int64(len(b)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("image store: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("image store: %w", err)
	}
	return os.Rename(tmp, path)
}

// fetcher downloads blobs of one repository.
type fetcher struct {
	s        *Store
	repo     name.Repository
	client   *http.Client
	attempts int
	progress func(int64)
}

// errCorrupt is a blob whose bytes do not have its digest.
var errCorrupt = errors.New("the bytes do not match the digest")

// fetch puts one blob in the store unless it is there: n is the bytes
// downloaded, had whether it was there already. An interrupted download
// resumes from what it has; a corrupt one is thrown away and fetched again
// once from the start.
func (f *fetcher) fetch(ctx context.Context, d v1.Descriptor) (n int64, had bool, err error) {
	path := f.s.blobPath(d.Digest)
	if st, err := os.Stat(path); err == nil && st.Size() == d.Size {
		return 0, true, nil
	}
	unlock, err := f.s.lock("blob-"+d.Digest.Hex, true)
	if err != nil {
		return 0, false, fmt.Errorf("image store: lock: %w", err)
	}
	defer unlock()
	if st, err := os.Stat(path); err == nil && st.Size() == d.Size {
		return 0, true, nil // another process fetched it while we waited
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, false, fmt.Errorf("image store: %w", err)
	}
	if d.Digest.Algorithm != "sha256" {
		return 0, false, fmt.Errorf("digest algorithm %s is not supported", d.Digest.Algorithm)
	}
	corrupt := 0
	var last error
	for try := 0; try < f.attempts; try++ {
		if ctx.Err() != nil {
			return n, false, ctx.Err()
		}
		got, err := f.download(ctx, d, path+".partial")
		n += got
		if err == nil {
			return n, false, os.Rename(path+".partial", path)
		}
		last = err
		if errors.Is(err, errCorrupt) {
			if corrupt++; corrupt > 1 {
				break // the registry serves it so: it is refused
			}
		}
		if ctx.Err() != nil {
			return n, false, ctx.Err()
		}
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
	return n, false, last
}

// download fetches the rest of a blob into partial: from its length, when
// it has some. On a digest or size mismatch partial is removed.
func (f *fetcher) download(ctx context.Context, d v1.Descriptor, partial string) (int64, error) {
	file, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("image store: %w", err)
	}
	defer file.Close()
	h := sha256.New()
	have, err := io.Copy(h, file)
	if err != nil {
		return 0, fmt.Errorf("image store: %w", err)
	}
	if have > d.Size {
		have = 0
		h.Reset()
		if err := file.Truncate(0); err != nil {
			return 0, err
		}
	}
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/%s", f.repo.Registry.Scheme(), f.repo.RegistryStr(), f.repo.RepositoryStr(),
		d.Digest)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", have, d.Size-1)) // both ends: some registries want them
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
	case resp.StatusCode == http.StatusOK:
		// the whole blob: the registry does not resume, or nothing was there
		if have > 0 {
			have = 0
			h.Reset()
			if err := file.Truncate(0); err != nil {
				return 0, err
			}
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have == d.Size:
		return 0, f.check(h, d, partial, have)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return 0, fmt.Errorf("GET %s: %s %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if _, err := file.Seek(have, io.SeekStart); err != nil {
		return 0, err
	}
	w := io.MultiWriter(file, h)
	var body io.Reader = io.LimitReader(resp.Body, d.Size-have+1) // one byte more tells a blob too long
	if f.progress != nil {
		body = &counting{r: body, add: f.progress}
	}
	got, err := io.Copy(w, body)
	if err != nil {
		return got, fmt.Errorf("interrupted after %d of %d bytes: %w", have+got, d.Size, err)
	}
	if err := file.Sync(); err != nil {
		return got, err
	}
	return got, f.check(h, d, partial, have+got)
}

// check compares what partial holds with d, removing it when it is wrong.
func (f *fetcher) check(h hash.Hash, d v1.Descriptor, partial string, size int64) error {
	if size < d.Size {
		return fmt.Errorf("the registry sent %d of %d bytes", size, d.Size)
	}
	sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if size != d.Size || sum != d.Digest.String() {
		_ = os.Remove(partial)
		return fmt.Errorf("%w: %d bytes with digest %s (refused, not unpacked)", errCorrupt, size, sum)
	}
	return nil
}

type counting struct {
	r   io.Reader
	add func(int64)
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}

// pulledKey names a reference's layouts in pulled/.
func pulledKey(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(sum[:12])
}

// writePulled records a pull: a layout of the one image, made aside and
// renamed into pulled/, and the reference's older pulls removed (their
// unpacked trees stay: rollouts may use them).
func (s *Store) writePulled(p *Pulled, mt types.MediaType, size int64) (string, error) {
	key := pulledKey(p.Ref)
	dir := filepath.Join(s.dir, "pulled", key+"."+p.Digest.Hex[:16])
	tmp, err := os.MkdirTemp(filepath.Join(s.dir, "tmp"), "pull-")
	if err != nil {
		return "", fmt.Errorf("image store: %w", err)
	}
	defer os.RemoveAll(tmp)
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: mt, Digest: p.Digest, Size: size, Annotations: map[string]string{annotationRefName: p.Ref},
	}}}
	files := map[string]any{"index.json": index, "oci-layout": map[string]string{"imageLayoutVersion": "1.0.0"},
		"pull.json": p}
	for n, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return "", fmt.Errorf("image store: %w", err)
		}
	}
	if err := os.Symlink(filepath.Join("..", "..", "blobs"), filepath.Join(tmp, "blobs")); err != nil {
		return "", fmt.Errorf("image store: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "pulled"), 0o755); err != nil {
		return "", fmt.Errorf("image store: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isExist(err) {
		return "", fmt.Errorf("image store: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(s.dir, "pulled", key+".*"))
	for _, o := range old {
		if o != dir {
			_ = os.RemoveAll(o)
		}
	}
	return dir, nil
}

// isExist: a rename onto a directory another pull of the same digest made.
func isExist(err error) bool {
	return errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY)
}

// Pulled is a reference pulled into the store before, without asking its
// registry: the newest pull of it.
func (s *Store) Pulled(ref string) (*Pulled, bool) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, false
	}
	dirs, _ := filepath.Glob(filepath.Join(s.dir, "pulled", pulledKey(r.Name())+".*"))
	var found []*Pulled
	for _, d := range dirs {
		var p Pulled
		if b, err := os.ReadFile(filepath.Join(d, "pull.json")); err == nil && json.Unmarshal(b, &p) == nil &&
			p.Ref == r.Name() {
			p.Dir = d
			found = append(found, &p)
		}
	}
	if len(found) == 0 {
		return nil, false
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Pulled.After(found[j].Pulled) })
	return found[0], true
}

// Import puts a local image (from an OCI layout or a docker save archive)
// into the store as a pull would, under each of refs: its blobs, a layout
// per reference (so rows find it by name with no --images), and its
// unpacked tree. progress is told the bytes unpacked.
func (s *Store) Import(img v1.Image, refs []string, source string, progress func(int64)) (*Unpacked, []*Pulled, error) {
	release, err := s.pulling()
	if err != nil {
		return nil, nil, err
	}
	defer release()
	dig, err := img.Digest()
	if err != nil {
		return nil, nil, fmt.Errorf("image from %s: %w", source, err)
	}
	man, err := img.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("image from %s: manifest: %w", source, err)
	}
	rawMan, err := img.RawManifest()
	if err != nil {
		return nil, nil, err
	}
	rawCfg, err := img.RawConfigFile()
	if err != nil {
		return nil, nil, err
	}
	if err := s.putBlob(man.Config.Digest, rawCfg); err != nil {
		return nil, nil, err
	}
	if err := s.putBlob(dig, rawMan); err != nil {
		return nil, nil, err
	}
	ls, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	var total int64
	for _, l := range ls {
		h, err := l.Digest()
		if err != nil {
			return nil, nil, err
		}
		n, err := l.Size()
		if err != nil {
			return nil, nil, err
		}
		total += n
		if err := s.copyBlob(h, n, l.Compressed); err != nil {
			return nil, nil, fmt.Errorf("image from %s: layer %s: %w", source, h, err)
		}
	}
	var pulls []*Pulled
	for _, ref := range refs {
		r, err := name.ParseReference(ref)
		if err != nil {
			continue // a bare tag a layout recorded: not a reference
		}
		p := &Pulled{Ref: r.Name(), Digest: dig, Layers: len(ls), Shared: len(ls), Bytes: total, Pulled: time.Now().UTC()}
		if p.Dir, err = s.writePulled(p, man.MediaType, int64(len(rawMan))); err != nil {
			return nil, nil, err
		}
		pulls = append(pulls, p)
	}
	u, err := s.Unpack(img, refs, source, progress)
	return u, pulls, err
}

// copyBlob writes a blob from a local image, checked against its digest.
func (s *Store) copyBlob(h v1.Hash, size int64, open func() (io.ReadCloser, error)) error {
	path := s.blobPath(h)
	if st, err := os.Stat(path); err == nil && st.Size() == size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("image store: %w", err)
	}
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("image store: %w", err)
	}
	defer os.Remove(tmp)
	hh := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hh), rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(hh.Sum(nil)); n != size || sum != h.Hex {
		return fmt.Errorf("%w: %d bytes with digest sha256:%s", errCorrupt, n, sum)
	}
	return os.Rename(tmp, path)
}
