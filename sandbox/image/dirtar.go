package image

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DirTar writes the tree under root as a tar stream, under at ("" for
// the root itself): owners, modes and symbolic links as on disk, device
// nodes, sockets and pipes left out, hard links as copies. A non-zero
// times gives every entry that time (the same tree, the same stream).
func DirTar(w io.Writer, root, at string, times time.Time) error {
	tw := tar.NewWriter(w)
	if at != "" {
		if err := tw.WriteHeader(&tar.Header{Name: at + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeSocket|os.ModeNamedPipe) != 0 {
			return nil
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = rel
		if at != "" {
			h.Name = at + "/" + rel
		}
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if !times.IsZero() {
			h.ModTime, h.AccessTime, h.ChangeTime = times, time.Time{}, time.Time{}
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
