package rollout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

var stepFile = regexp.MustCompile(`^([0-9]+)\.jsonl$`)

// dumpDirReader reads the <step>.jsonl files of a rollout dump directory in
// numeric step order, one file after the other. A batch never spans two
// files.
type dumpDirReader struct {
	files     []string
	opts      Options
	cur       *jsonlReader
	nextIndex int
}

// DumpFiles lists the <step>.jsonl files of a rollout dump directory in
// numeric step order, and the names of the other entries, which are skipped.
func DumpFiles(dir string) (files, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read dump directory: %w", err)
	}
	type step struct {
		n    uint64
		name string
	}
	var steps []step
	for _, e := range entries {
		m := stepFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			skipped = append(skipped, e.Name())
			continue
		}
		n, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			skipped = append(skipped, e.Name())
			continue
		}
		steps = append(steps, step{n, e.Name()})
	}
	sort.SliceStable(steps, func(i, j int) bool {
		if steps[i].n != steps[j].n {
			return steps[i].n < steps[j].n
		}
		return steps[i].name < steps[j].name // "1.jsonl" before "01.jsonl"
	})
	for _, s := range steps {
		files = append(files, filepath.Join(dir, s.name))
	}
	return files, skipped, nil
}

func openDumpDir(dir string, opts Options) (*dumpDirReader, error) {
	files, skipped, err := DumpFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		opts.warn("%s: skipping %s: not a <step>.jsonl file", dir, s)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("dump directory %s: no <step>.jsonl files", dir)
	}
	return &dumpDirReader{files: files, opts: opts}, nil
}

// Kind reports Dump.
func (d *dumpDirReader) Kind() Kind { return Dump }

// Next returns the next batch of the current file, moving on to the next
// file at the end of one.
func (d *dumpDirReader) Next() (*Batch, error) {
	for {
		if d.cur == nil {
			if len(d.files) == 0 {
				return nil, io.EOF
			}
			path := d.files[0]
			d.files = d.files[1:]
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("open dump file: %w", err)
			}
			r, err := newJSONLReader(f, f, path, d.opts)
			if err != nil {
				f.Close()
				return nil, err
			}
			r.nextIndex = d.nextIndex
			d.cur = r
		}
		b, err := d.cur.Next()
		if errors.Is(err, io.EOF) {
			d.nextIndex = d.cur.nextIndex
			if err := d.cur.Close(); err != nil {
				return nil, err
			}
			d.cur = nil
			continue
		}
		return b, err
	}
}

// Close closes the file being read.
func (d *dumpDirReader) Close() error {
	if d.cur != nil {
		err := d.cur.Close()
		d.cur = nil
		return err
	}
	return nil
}
