package rollout

import "unicode/utf8"

// replaceInvalidUTF8 returns b with every ill-formed UTF-8 sequence replaced
// by U+FFFD the way Python's bytes.decode("utf-8", "replace") does (the
// Unicode "maximal subpart" practice): a truncated but otherwise valid
// prefix of a sequence becomes one U+FFFD, and any other bad byte becomes
// one U+FFFD of its own. Surrogates (ED A0..BF) and overlong forms are
// ill-formed. It also returns how many bytes were replaced; b is returned
// as is when it is valid.
func replaceInvalidUTF8(b []byte) ([]byte, int) {
	if utf8.Valid(b) {
		return b, 0
	}
	out := make([]byte, 0, len(b)+8)
	bad := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, c)
			i++
			continue
		}
		n, lo, hi := seqShape(c)
		if n == 0 { // 80..C1, F5..FF: never a lead byte
			out = append(out, "\uFFFD"...)
			bad++
			i++
			continue
		}
		// Walk the continuation bytes while they stay well-formed.
		j := i + 1
		for k := 1; k < n && j < len(b); k++ {
			cb := b[j]
			if k == 1 {
				if cb < lo || cb > hi {
					break
				}
			} else if cb < 0x80 || cb > 0xBF {
				break
			}
			j++
		}
		if j-i == n {
			out = append(out, b[i:j]...)
		} else {
			out = append(out, "\uFFFD"...)
			bad += j - i
		}
		i = j
	}
	return out, bad
}

// seqShape gives the length of the sequence a lead byte starts and the
// range allowed for its second byte; n is 0 for a byte that cannot lead.
func seqShape(c byte) (n int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}
