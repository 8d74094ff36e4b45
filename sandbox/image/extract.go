//go:build linux

package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// extractStats are what an unpack wrote.
type extractStats struct {
	Files, Dirs, Links int64
	Bytes              int64
	// Skipped are the device nodes and other entries not written.
	Skipped []string
}

// extract writes a flattened image (mutate.Extract's tar stream) under
// root, which must exist and be empty. Paths are confined to root: an entry
// whose path climbs out of it, or passes through a symbolic link, fails
// the unpack. Owners are shifted by IDBase; device nodes are not written.
func extract(r io.Reader, root string, progress func(bytes int64)) (*extractStats, error) {
	tr := tar.NewReader(r)
	st := &extractStats{}
	type dirTime struct {
		path string
		t    time.Time
	}
	var dirs []dirTime
	// mutate.Extract writes the top layer first and each path once, but a
	// lower layer's entry can still reach a path the upper one made as a
	// parent of its own (the upper's directory shadows a lower symbolic
	// link, as in an overlay): the first writer of a path wins, and a
	// directory made only as a parent takes its entry's owner and mode.
	explicit := map[string]bool{}
	type hardlink struct{ path, target string }
	var links []hardlink
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read the image's files: %w", err)
		}
		rel, err := cleanRel(h.Name)
		if err != nil {
			return st, err
		}
		if rel == "" {
			continue // the root itself
		}
		p := filepath.Join(root, rel)
		if err := confined(root, rel); err != nil {
			return st, err
		}
		uid, gid := shift(h.Uid), shift(h.Gid)
		mode := uint32(h.Mode & 0o7777)
		if explicit[rel] {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && !(fi.IsDir() && h.Typeflag == tar.TypeDir) {
			continue // a parent the upper layer made shadows this entry
		}
		explicit[rel] = true
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(p, 0o700); err != nil && !os.IsExist(err) {
				return st, err
			}
			if err := ownAndMode(p, uid, gid, mode); err != nil {
				return st, err
			}
			dirs = append(dirs, dirTime{p, h.ModTime})
			st.Dirs++
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return st, err
			}
			n, err := io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return st, fmt.Errorf("write %s: %w", rel, err)
			}
			st.Bytes += n
			if progress != nil {
				progress(n)
			}
			if err := ownAndMode(p, uid, gid, mode); err != nil {
				return st, err
			}
			_ = os.Chtimes(p, h.ModTime, h.ModTime)
			st.Files++
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return st, err
			}
			if err := os.Lchown(p, uid, gid); err != nil {
				return st, err
			}
			st.Links++
		case tar.TypeLink:
			target, err := cleanRel(h.Linkname)
			if err != nil {
				return st, err
			}
			// its target may be in a lower layer, written later
			links = append(links, hardlink{rel, target})
		case tar.TypeFifo:
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				return st, err
			}
			if err := ownAndMode(p, uid, gid, mode); err != nil {
				return st, err
			}
		default:
			// device nodes (a rollout gets its own few) and the rest
			st.Skipped = append(st.Skipped, rel)
		}
	}
	for _, l := range links {
		if err := confined(root, l.target); err != nil {
			return st, err
		}
		if err := confined(root, l.path); err != nil {
			return st, err
		}
		tfi, err := os.Lstat(filepath.Join(root, l.target))
		if err != nil || tfi.IsDir() {
			return st, fmt.Errorf("image entry %q: a hard link to %q, which the image does not hold as a file", l.path, l.target)
		}
		if err := os.Link(filepath.Join(root, l.target), filepath.Join(root, l.path)); err != nil {
			return st, err
		}
		st.Links++
	}
	// directories' times last, deepest first, once their entries are in
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Chtimes(dirs[i].path, dirs[i].t, dirs[i].t)
	}
	return st, nil
}

func shift(id int) int {
	if id < 0 || id >= IDRange {
		id = nobody
	}
	return IDBase + id
}

// ownAndMode chowns, then sets the mode (a chown clears set-id bits).
func ownAndMode(p string, uid, gid int, mode uint32) error {
	if err := os.Lchown(p, uid, gid); err != nil {
		return err
	}
	return syscall.Chmod(p, mode)
}

// cleanRel is an entry's path relative to the root, "" for the root.
func cleanRel(name string) (string, error) {
	c := filepath.Clean("/" + name)
	if strings.Contains(name, "\x00") {
		return "", fmt.Errorf("image entry %q: a NUL in its name", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("image entry %q climbs out of the root", name)
		}
	}
	return strings.TrimPrefix(c, "/"), nil
}

// confined fails when a parent of rel under root is a symbolic link (an
// entry written through it could land anywhere) or not a directory.
func confined(root, rel string) error {
	dir := root
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if os.IsNotExist(err) {
			// a parent the archive did not list: made as root's, 0755
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			if err := os.Lchown(dir, IDBase, IDBase); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("image entry %q lies behind the symbolic link %s", rel, strings.TrimPrefix(dir, root+"/"))
		}
		if !fi.IsDir() {
			return fmt.Errorf("image entry %q lies under %s, which is not a directory", rel, strings.TrimPrefix(dir, root+"/"))
		}
	}
	return nil
}
