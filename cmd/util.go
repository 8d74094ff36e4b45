package cmd

import (
	"encoding/json"
	"io"

	"github.com/spf13/pflag"
)

type pflagFlag = pflag.Flag

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
