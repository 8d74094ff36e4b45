// Package results owns what a run records: the row and response records
// of its journal and outputs, the case records of --cases-out with their
// codecs (JSON lines and parquet, chosen by the file's name here alone),
// and the summary with pass@k. job writes them; report, check, merge and
// show read them through this package.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/verl-score/verl-score/atomicfile"
	"github.com/verl-score/verl-score/score"
	"github.com/verl-score/verl-score/verdict"
)

// Case is one record of a cases file: a case's verdict and metadata, and
// the response it belongs to.
type Case struct {
	Row           int    `json:"row"`
	ResponseIndex int    `json:"response_index"`
	DataSource    string `json:"data_source"`
	verdict.Case
	// SWE is a repository task's outcome, on the first case of its
	// response (its texts cut as the cases' are).
	SWE *score.SWEResult `json:"swe,omitempty"`
}

// ProvenanceKey is the parquet key-value metadata key of a run's
// provenance (JSON), in its outputs and its parquet cases files.
const ProvenanceKey = "verl_score.provenance"

// provenancePrefix is how a JSON-lines cases file's provenance line
// begins: {"provenance": ...}, the file's first line when run wrote one.
const provenancePrefix = `{"provenance":`

// CaseWriter writes a cases file, atomically: nothing is in place before
// Commit, and Abort leaves nothing.
type CaseWriter interface {
	Write(c *Case) error
	Commit() error
	Abort()
}

// IsParquet reports whether a file named path is parquet (by its name).
func IsParquet(path string) bool { return strings.EqualFold(filepath.Ext(path), ".parquet") }

// CreateCases starts a cases file at path: parquet when its name ends in
// .parquet, JSON lines otherwise. prov, when not nil, is the run's
// provenance (JSON): the parquet file's metadata, the JSON file's first
// line.
func CreateCases(path string, prov json.RawMessage) (CaseWriter, error) {
	if IsParquet(path) {
		return createCasesParquet(path, prov)
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	w := &casesJSONL{path: path, af: af}
	if prov != nil {
		b, err := json.Marshal(struct {
			Provenance json.RawMessage `json:"provenance"`
		}{prov})
		if err != nil {
			af.Abort()
			return nil, fmt.Errorf("cases file %s: provenance: %w", path, err)
		}
		af.Write(append(b, '\n'))
	}
	return w, nil
}

// CasesProvenance is the provenance of the cases file at path, nil when
// it has none.
func CasesProvenance(path string) (json.RawMessage, error) {
	if IsParquet(path) {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return nil, fmt.Errorf("cases file %s: %w", path, err)
		}
		defer pf.Close()
		return provenanceOf(pf), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cases file: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return nil, nil // empty
	}
	if !bytes.HasPrefix(line, []byte(provenancePrefix)) {
		return nil, nil
	}
	return parseProvenanceLine(path, 1, line)
}

func parseProvenanceLine(path string, no int, line []byte) (json.RawMessage, error) {
	var p struct {
		Provenance json.RawMessage `json:"provenance"`
	}
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, no, err)
	}
	return p.Provenance, nil
}

// casesJSONL writes one JSON object per line.
type casesJSONL struct {
	path string
	af   *atomicfile.File
}

func (w *casesJSONL) Write(c *Case) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	w.af.Write(b)
	if err := w.af.WriteByte('\n'); err != nil {
		return fmt.Errorf("cases file %s: %w", w.path, err)
	}
	return nil
}

func (w *casesJSONL) Commit() error { return w.af.Commit() }
func (w *casesJSONL) Abort()        { w.af.Abort() }

// ReadCases calls fn with each case of the cases file at path, in order,
// and returns the file's provenance (nil when it has none). Parquet or
// JSON lines is chosen by the name, as CreateCases chose it. An error of
// fn comes back with the file and the line (for parquet, the case's
// ordinal) in front.
func ReadCases(path string, fn func(*Case) error) (json.RawMessage, error) {
	if IsParquet(path) {
		return readCasesParquet(path, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cases file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var prov json.RawMessage
	for no := 1; sc.Scan(); no++ {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(provenancePrefix)) {
			p, err := parseProvenanceLine(path, no, line)
			if err != nil {
				return nil, err
			}
			if prov == nil {
				prov = p
			}
			continue
		}
		var c Case
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, no, err)
		}
		if err := fn(&c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, no, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return prov, nil
}
