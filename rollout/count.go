package rollout

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// CountRows is how many rows the reader will give: the row count of a
// parquet footer, or the non-blank lines of JSONL files (a fast scan of the
// bytes, done before scoring so that progress has a fixed total). It is
// -1 when unknown (stdin).
func CountRows(r Reader) int64 {
	switch x := r.(type) {
	case *parquetReader:
		return x.pf.NumRows()
	case *jsonlReader:
		if f, ok := x.closer.(*os.File); ok {
			return countLines(f.Name())
		}
	case *dumpDirReader:
		var n int64
		for _, p := range x.files {
			c := countLines(p)
			if c < 0 {
				return -1
			}
			n += c
		}
		return n
	}
	return -1
}

// countLines counts the lines of path that hold something other than
// blanks, as the JSONL reader does; -1 if it cannot be read.
func countLines(path string) int64 {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return -1
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	blank := true
	for {
		k, err := f.Read(buf)
		chunk := buf[:k]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			line := chunk
			if i >= 0 {
				line = chunk[:i]
			}
			if blank && len(bytes.Trim(line, " \t\r")) > 0 {
				blank = false
			}
			if i < 0 {
				break
			}
			if !blank {
				n++
			}
			blank = true
			chunk = chunk[i+1:]
		}
		if err == io.EOF {
			if !blank {
				n++
			}
			return n
		}
		if err != nil {
			return -1
		}
	}
}
