//go:build linux

package sandbox

import (
	"time"

	"github.com/verl-score/verl-score/sandbox/jail"
	"github.com/verl-score/verl-score/sandbox/lang"
)

// runLimits are jail.RunLimits with the sandbox's own options.
func runLimits(o Options, spec *lang.Language, memMB int, timeout time.Duration) jail.Limits {
	lim := jail.RunLimits(spec.HeapLimited, memMB, timeout)
	if spec.StackSetting && o.RubyStackMB > 0 && lim.StackMB > 0 {
		lim.StackMB = o.RubyStackMB
	}
	return lim
}
