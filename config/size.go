package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a plain integer or one with a K/KB/KiB,
// M/MB/MiB or G/GB/GiB suffix (all binary multiples).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	units := []struct {
		suffixes []string
		mult     int64
	}{
		{[]string{"gib", "gb", "g"}, 1 << 30},
		{[]string{"mib", "mb", "m"}, 1 << 20},
		{[]string{"kib", "kb", "k"}, 1 << 10},
		{[]string{"b"}, 1},
	}
unit:
	for _, u := range units {
		for _, suf := range u.suffixes {
			if strings.HasSuffix(lower, suf) {
				t, mult = strings.TrimSpace(t[:len(t)-len(suf)]), u.mult
				break unit
			}
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q: want a positive number of bytes like 33554432 or 32MiB", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// FormatSize writes n in the largest unit that divides it (ParseSize
// reads it back).
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
