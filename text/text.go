// Package text holds the small wording helpers the commands' messages
// share.
package text

import "fmt"

// Count is n with its noun, plural unless n is 1: "1 row", "3 rows".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
