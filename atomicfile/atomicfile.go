// Package atomicfile writes an output so that its path holds either the old
// content or the whole new one: the bytes go to a temporary file in the same
// directory, which is synced, renamed onto the path, and the directory synced.
//
// Temporary names carry the writer's process id (PATH.tmp-<pid>-<random>),
// so that CleanStale can remove those a killed run left behind without
// touching those of a run still going.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is an output being written. It is not safe for concurrent use.
type File struct {
	final string
	f     *os.File
	*bufio.Writer
	perm os.FileMode
	done bool
}

// createTemp creates an empty temporary file for path, named so that
// CleanStale recognises it once this process is gone.
func createTemp(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return f, nil
}

// Create starts writing path. The file gets mode perm on Commit.
func Create(path string, perm os.FileMode) (*File, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	return &File{final: path, f: f, Writer: bufio.NewWriterSize(f, 1<<20), perm: perm}, nil
}

// Name is the final path.
func (a *File) Name() string { return a.final }

// TempName is the temporary file's path.
func (a *File) TempName() string { return a.f.Name() }

// Commit flushes, syncs and renames the temporary file onto the path, then
// syncs the directory.
func (a *File) Commit() error {
	f, err := a.commit()
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", a.final, err)
	}
	return nil
}

// CommitOpen is Commit that keeps the file open: the caller may go on
// appending to the file now at the path (a journal), and must close it.
func (a *File) CommitOpen() (*os.File, error) { return a.commit() }

func (a *File) commit() (*os.File, error) {
	if a.done {
		return nil, errors.New("output already committed or aborted")
	}
	a.done = true
	fail := func(err error) (*os.File, error) {
		a.f.Close()
		os.Remove(a.f.Name())
		return nil, fmt.Errorf("write %s: %w", a.final, err)
	}
	if err := a.Flush(); err != nil {
		return fail(err)
	}
	if err := a.f.Chmod(a.perm); err != nil {
		return fail(err)
	}
	if err := a.f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(a.f.Name(), a.final); err != nil {
		return fail(err)
	}
	SyncDir(filepath.Dir(a.final)) // not every file system allows it
	return a.f, nil
}

// Abort removes the temporary file; after Commit it does nothing.
func (a *File) Abort() error {
	if a.done {
		return nil
	}
	a.done = true
	a.f.Close()
	return os.Remove(a.f.Name())
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	a, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return a.Commit()
}

// SyncDir makes renames and new files in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func tempPrefix(path string) string { return filepath.Base(path) + ".tmp-" }

// CleanStale removes the temporary files of path left by processes that no
// longer run, and returns their names.
func CleanStale(path string) []string {
	var removed []string
	for _, p := range DeadOwners(filepath.Dir(path), tempPrefix(path), false) {
		if os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// DeadOwners lists the entries of dir named prefix<pid>-<anything> whose
// process no longer runs: regular files, or directories when dirs is set.
func DeadOwners(dir, prefix string, dirs bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var dead []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || (dirs && !e.IsDir()) || (!dirs && !e.Type().IsRegular()) {
			continue
		}
		pidText, _, ok := strings.Cut(name[len(prefix):], "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || ProcessAlive(pid) {
			continue
		}
		dead = append(dead, filepath.Join(dir, name))
	}
	return dead
}
