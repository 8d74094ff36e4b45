// Package rollout reads verl datasets and rollout dumps row by row and writes
// them back out with the scorer's results appended.
//
// Inputs are streamed: parquet files record batch by record batch, JSONL
// files line by line, so memory does not grow with the number of rows. Three
// kinds of input are recognised (docs/semantics.md §1.1 and 1.2):
//
//   - a parquet file (*.parquet) with verl's nested schema;
//   - a JSONL file (*.jsonl, *.json, or "-" for stdin), one JSON object per
//     line, either dataset rows or rollout dump lines;
//   - a rollout dump directory holding <step>.jsonl files, read in numeric
//     step order.
//
// The writer keeps every input column or key untouched and appends four:
// reward, case_results, case_status and reward_error (see Create).
package rollout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Names of the four columns the writer appends to every row.
const (
	ColReward      = "reward"
	ColCaseResults = "case_results"
	ColCaseStatus  = "case_status"
	ColRewardError = "reward_error"
	// ColRewardExact is the reward under verl's exact comparison, written
	// only when the run compares otherwise (WriteOptions.RewardExact).
	ColRewardExact = "reward_exact"
)

// ResultColumns lists the appended columns in the order they are written.
var ResultColumns = []string{ColReward, ColCaseResults, ColCaseStatus, ColRewardError}

// ErrReservedColumn is wrapped by the error returned when an input already has
// a column or key named like one of ResultColumns. verl-score never renames or
// overwrites input columns, so such an input (typically an already scored
// file) is refused rather than silently changed.
var ErrReservedColumn = errors.New("input already has this column; verl-score refuses to overwrite it")

// ErrMissingColumn is wrapped by Open's error when a key the scorer needs
// is not in the input (the parquet schema, or the first JSONL row): most
// likely a misspelt --response-key, --ground-truth-key or
// --data-source-key. The message lists the columns that exist.
var ErrMissingColumn = errors.New("no such column")

// MissingColumnError names the key that is missing and the columns there
// are. It matches ErrMissingColumn.
type MissingColumnError struct {
	What  string   // "response", "ground truth", "data source", "language"
	Key   string   // the key as given
	Where string   // the file (and rows) looked at
	Have  []string // the columns or keys that exist, as dotted paths
}

func (e *MissingColumnError) Error() string {
	return fmt.Sprintf("%s: no %s column %q (columns: %s)", e.Where, e.What, e.Key, strings.Join(e.Have, ", "))
}

// Is makes errors.Is(err, ErrMissingColumn) true.
func (e *MissingColumnError) Is(target error) bool { return target == ErrMissingColumn }

// Options says where the scorer's inputs are found in a row.
// Fields tagged fingerprint:"-" do not change what a scored row holds;
// the others are part of a run's journal fingerprint (job).
type Options struct {
	// ResponseKey names the response column: a list of strings (verl's
	// generation output) or a single string. Default "responses".
	ResponseKey string
	// DataSourceKey names the data source column. Default "data_source".
	DataSourceKey string
	// RequireDataSource makes a DataSourceKey absent from the input an
	// error (ErrMissingColumn) rather than rows without a data source; set
	// it when the key was chosen, not defaulted.
	RequireDataSource bool `fingerprint:"-"`
	// GroundTruthKey is a dotted path to the ground truth through nested
	// structs or objects. Default "reward_model.ground_truth".
	GroundTruthKey string
	// ScoreKey names an optional reference score column, scalar or a list
	// aligned with the responses. Default "score".
	ScoreKey string `fingerprint:"-"`
	// LanguageKey, when set, is a dotted path to each row's language: a
	// string for all its responses, or a list of strings aligned with them
	// (e.g. extra_info.response_languages). Default: none.
	LanguageKey string
	// IDKey, when set, is a dotted path to each row's id: diff matches the
	// rows of two outputs by it. Unset, rows are matched by a digest of
	// their prompt and ground truth (see ScoredRow.Identity).
	IDKey string `fingerprint:"-"`
	// BatchRows is the number of rows per batch. Default 512.
	BatchRows int `fingerprint:"-"`
	// Scored reads an output of run for its responses (show, report):
	// the result columns are then expected, not refused.
	Scored bool `fingerprint:"-"`
	// Warn, when set, receives warnings that do not stop reading, such as
	// files skipped in a dump directory.
	Warn func(msg string) `fingerprint:"-"`
}

// DefaultOptions returns the options matching verl's defaults.
func DefaultOptions() Options {
	return Options{
		ResponseKey:    "responses",
		DataSourceKey:  "data_source",
		GroundTruthKey: "reward_model.ground_truth",
		ScoreKey:       "score",
		BatchRows:      512,
	}
}

// withDefaults fills the zero fields of o from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.ResponseKey == "" {
		o.ResponseKey = d.ResponseKey
	}
	if o.DataSourceKey == "" {
		o.DataSourceKey = d.DataSourceKey
	}
	if o.GroundTruthKey == "" {
		o.GroundTruthKey = d.GroundTruthKey
	}
	if o.ScoreKey == "" {
		o.ScoreKey = d.ScoreKey
	}
	if o.BatchRows <= 0 {
		o.BatchRows = d.BatchRows
	}
	return o
}

func (o Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}

// Kind is the kind of input a Reader reads.
type Kind int

// Kinds of input.
const (
	Parquet Kind = iota + 1
	JSONL
	Dump
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Parquet:
		return "parquet"
	case JSONL:
		return "jsonl"
	case Dump:
		return "dump"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Row is one input row with what the scorer needs.
type Row struct {
	// Index is the 0-based position in the whole input, across all files
	// of a dump directory.
	Index int
	// File is the file the row came from ("-" for stdin).
	File string
	// Line is the 1-based line number (JSONL and dumps) or the 1-based row
	// number within the parquet file.
	Line int
	// Responses are the completions to score. A scalar response column
	// gives one; a list column gives as many as the list holds. When Err is
	// set Responses may be empty.
	Responses []string
	// ResponseIsList is true when the response column is a list; the
	// outputs are then lists aligned with Responses.
	ResponseIsList bool
	// DataSource is "" when the row has none (dumps).
	DataSource string
	// GroundTruth is the raw JSON of the ground truth: a JSON string (verl
	// stores it as a string) or a JSON object (a parquet struct converted to
	// JSON, or a decoded JSON object). It is nil when missing or null, and
	// Err then says so.
	GroundTruth []byte
	// RefScores are the reference scores (ScoreKey) when the row has them,
	// one per value in the column (a scalar score gives one); NaN where
	// null. nil when the row has no score.
	RefScores []float64
	// Languages are the row's languages (LanguageKey): one for every
	// response, or one for them all; nil when the row has none.
	Languages []string
	// Err is a problem with this row (a bad JSON line, a missing field, a
	// wrong type). The row still gets exactly one output row; the error is
	// a *RowError naming the file, line or row, and field.
	Err error
	// Prompt identifies the row's prompt when several rows share one: in a
	// rollout dump each line is one response, and the lines of one prompt
	// (rollout.n > 1) share its "input" within one step's file. A digest of
	// the file name and that input; "" for dataset rows, a prompt each.
	// TaskID is the row's id as the dataset names it (IDKey, else the
	// first of DefaultIDKeys the row has); "" when none.
	TaskID string
	Prompt string
	// InvalidUTF8Bytes counts the bytes of the row's line that were not
	// valid UTF-8 and were replaced by U+FFFD (JSONL and dumps).
	InvalidUTF8Bytes int
}

// Language is the language of response j from the row's language column:
// its own entry, or the row's single one; "" when the row has none.
func (r *Row) Language(j int) string {
	switch {
	case len(r.Languages) == len(r.Responses) && j < len(r.Languages):
		return r.Languages[j]
	case len(r.Languages) == 1:
		return r.Languages[0]
	}
	return ""
}

// SourceOr is the row's data source, or def when it has none.
func (r *Row) SourceOr(def string) string {
	if r.DataSource != "" {
		return r.DataSource
	}
	return def
}

// RowError is a problem with one input row.
type RowError struct {
	File   string
	Line   int    // line (JSONL) or row (parquet) number, 1-based
	Parq   bool   // Line is a parquet row number
	Field  string // "" when the row as a whole is bad
	Reason string
}

// Error returns e.g. `taco.jsonl:17: field "reward_model.ground_truth": missing`.
func (e *RowError) Error() string {
	var b strings.Builder
	if e.Parq {
		fmt.Fprintf(&b, "%s: row %d: ", e.File, e.Line)
	} else {
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Batch is a run of consecutive input rows.
type Batch struct {
	Rows []Row

	// rec holds the input record batch for parquet inputs; the writer
	// passes its columns through unchanged.
	rec arrow.RecordBatch
	// lines holds the input lines for JSONL inputs, aligned with Rows.
	lines []srcLine
}

// srcLine is one JSONL input line as read.
type srcLine struct {
	raw   []byte // the line without its line ending and trailing blanks
	obj   bool   // raw is a JSON object
	empty bool   // raw is an object without members
}

// Release drops the batch's reference to its input record batch. It is
// optional: memory is managed by the Go garbage collector.
func (b *Batch) Release() {
	if b.rec != nil {
		b.rec.Release()
		b.rec = nil
	}
}

// Reader reads an input batch by batch.
type Reader interface {
	// Next returns the next batch, or io.EOF after the last one.
	Next() (*Batch, error)
	// Kind is the kind of input being read.
	Kind() Kind
	// Close releases the files.
	Close() error
}

// Open opens the input at path: "-" is JSONL on stdin, a directory is a
// rollout dump directory, *.parquet is parquet and *.jsonl or *.json is JSONL
// (a JSONL file whose first row has "output" and "gts" and no response key is
// read as a rollout dump file).
func Open(path string, opts Options) (Reader, error) {
	opts = opts.withDefaults()
	if path == "-" {
		return OpenReader(os.Stdin, "-", opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	if st.IsDir() {
		return openDumpDir(path, opts)
	}
	if f := formatOf(path); f != nil {
		return f.open(path, opts)
	}
	return nil, fmt.Errorf("open input %s: unknown format (want a %s file, a dump directory, or - for stdin)",
		path, knownExts())
}

// OpenInput opens path as Open does, but reads "-" from stdin when stdin
// is not nil (so commands can take their standard input from a test).
func OpenInput(path string, stdin io.Reader, opts Options) (Reader, error) {
	if path == "-" && stdin != nil {
		return OpenReader(stdin, "-", opts)
	}
	return Open(path, opts)
}

// OpenReader reads JSONL (dataset rows or rollout dump lines) from r; name is
// used in messages and as Row.File. Closing the Reader does not close r.
func OpenReader(r io.Reader, name string, opts Options) (Reader, error) {
	return newJSONLReader(r, nil, name, opts.withDefaults())
}

func isReserved(name string) bool {
	for _, c := range append(ResultColumns[:len(ResultColumns):len(ResultColumns)], ColRewardExact) {
		if name == c {
			return true
		}
	}
	return false
}
