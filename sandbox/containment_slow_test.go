//go:build slowlangs && linux

package sandbox

import "testing"

// TestSlowForkBombThenInnocents is TestForkBombThenInnocents twenty times
// over (1020 runs at one slot: 88 s under the race detector, most of the
// README's test command's longest package, so it runs here).
func TestSlowForkBombThenInnocents(t *testing.T) {
	forkBombThenInnocents(t, 20)
}
