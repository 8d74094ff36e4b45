package cmd

import (
	"encoding/json"
	"io"

	"github.com/spf13/pflag"
)

type pflagFlag = pflag.Flag

// pflagSliceValue is a list flag's value.
type pflagSliceValue = pflag.SliceValue

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
