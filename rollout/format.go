package rollout

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/verl-score/verl-score/atomicfile"
)

// A fileFormat is one file format of inputs and outputs: the names it is
// chosen by and its codec. Adding a format is one entry in formats.
type fileFormat struct {
	name string
	// exts are the file name endings (lower case) that select the format;
	// the first is what an output of this format is named with.
	exts []string
	// open reads the file as input rows.
	open func(path string, opts Options) (Reader, error)
	// create writes scored rows into af.
	create func(af *atomicfile.File, src Reader, wo WriteOptions) (Writer, error)
	// openScored reads back a file create wrote.
	openScored func(path string, opts Options) (ScoredReader, error)
}

var formats = []fileFormat{
	{
		name: "parquet",
		exts: []string{".parquet"},
		open: func(path string, opts Options) (Reader, error) { return openParquet(path, opts) },
		create: func(af *atomicfile.File, src Reader, wo WriteOptions) (Writer, error) {
			return newParquetWriter(af, src, wo)
		},
		openScored: func(path string, opts Options) (ScoredReader, error) { return openScoredParquet(path, opts) },
	},
	{
		name: "JSONL",
		exts: []string{".jsonl", ".json"},
		open: func(path string, opts Options) (Reader, error) {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("open input: %w", err)
			}
			r, err := newJSONLReader(f, f, path, opts)
			if err != nil {
				f.Close()
				return nil, err
			}
			return r, nil
		},
		create: func(af *atomicfile.File, _ Reader, wo WriteOptions) (Writer, error) {
			return &jsonlWriter{out: af.Writer, af: af, wo: wo}, nil
		},
		openScored: func(path string, opts Options) (ScoredReader, error) {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("open scored output: %w", err)
			}
			jr := &jsonlReader{br: bufio.NewReaderSize(f, 256<<10), closer: f, name: path, opts: opts}
			return &scoredJSONL{jr: jr}, nil
		},
	},
}

// formatOf is the format a file named path is in, nil when its name
// selects none.
func formatOf(path string) *fileFormat {
	p := strings.ToLower(path)
	for i := range formats {
		for _, ext := range formats[i].exts {
			if strings.HasSuffix(p, ext) {
				return &formats[i]
			}
		}
	}
	return nil
}

// knownExts lists the endings formats are chosen by, for messages:
// ".parquet, .jsonl or .json".
func knownExts() string {
	var all []string
	for _, f := range formats {
		all = append(all, f.exts...)
	}
	if len(all) == 1 {
		return all[0]
	}
	return strings.Join(all[:len(all)-1], ", ") + " or " + all[len(all)-1]
}

// ScoredName is the name of the output that scoring input gets by default:
// the input's name with ".scored" before the extension, in the input's
// format ("data.parquet" → "data.scored.parquet"); stdin, a directory (a
// dump) and a name of no known format get JSONL.
func ScoredName(input string) string {
	if input == "-" {
		return "scored" + formats[jsonlFormat].exts[0]
	}
	clean := strings.TrimRight(input, string(filepath.Separator))
	if st, err := os.Stat(clean); err == nil && st.IsDir() {
		return clean + ".scored" + formats[jsonlFormat].exts[0]
	}
	ext := filepath.Ext(clean)
	out := formats[jsonlFormat].exts[0]
	if f := formatOf(clean); f != nil && ext == f.exts[0] {
		out = f.exts[0]
	}
	return strings.TrimSuffix(clean, ext) + ".scored" + out
}

// jsonlFormat is the index in formats of the format of stdin and dumps.
const jsonlFormat = 1
