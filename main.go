// Command verl-score re-scores code-generation rollouts the way verl's
// SandboxFusion reward does.
package main

import (
	"os"

	"github.com/verl-score/verl-score/cmd"
)

func main() { os.Exit(cmd.Main()) }
