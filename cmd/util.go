package cmd

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/pflag"
)

type pflagFlag = pflag.Flag

type abortKey struct{}

// abortChan returns the channel closed by a second interrupt signal, or
// nil when the context carries none.
func abortChan(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(abortKey{}).(<-chan struct{})
	return ch
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
