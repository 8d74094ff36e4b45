package job

import "fmt"

// count writes n and noun, plural unless n is 1: "1 row", "3 rows".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
