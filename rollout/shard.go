package rollout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ShardSpec is --shard K/N: shard K (0-based) of N.
type ShardSpec struct{ K, N int }

// ParseShard reads "K/N" with 0 <= K < N.
func ParseShard(s string) (ShardSpec, error) {
	a, b, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return ShardSpec{}, fmt.Errorf("shard %q: want K/N with 0 <= K < N, e.g. 0/4", s)
	}
	return ShardSpec{K: k, N: n}, nil
}

func (s ShardSpec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// start is the first row index of shard k's range before prompts are kept
// whole: floor(k*total/n).
func (s ShardSpec) start(k int, total int64) int64 { return int64(k) * total / int64(s.N) }

// of is the shard whose range holds row idx.
func (s ShardSpec) of(idx, total int64) int {
	k := int(idx * int64(s.N) / total)
	for k+1 < s.N && s.start(k+1, total) <= idx {
		k++
	}
	for k > 0 && s.start(k, total) > idx {
		k--
	}
	return k
}

// Shard returns the rows of r that belong to shard spec.K: the input's
// rows (total of them) are cut into N contiguous ranges of about
// total/N rows, each boundary moved forward to where a prompt starts, so
// that the rows of one prompt (dump lines sharing Row.Prompt) stay in one
// shard. Every row is in exactly one shard, whatever the batch size, and
// the rows keep their indexes in the whole input.
func Shard(r Reader, spec ShardSpec, total int64) Reader {
	return &shardReader{Reader: r, spec: spec, total: total, group: -1}
}

type shardReader struct {
	Reader
	spec       ShardSpec
	total      int64
	prevPrompt string
	group      int // the shard of the current prompt group
	done       bool
}

func (s *shardReader) Next() (*Batch, error) {
	for !s.done {
		b, err := s.Reader.Next()
		if err != nil {
			return nil, err
		}
		lo, hi := -1, -1
		for i := range b.Rows {
			row := &b.Rows[i]
			if row.Prompt == "" || row.Prompt != s.prevPrompt || s.group < 0 {
				s.group = s.spec.of(int64(row.Index), s.total)
			}
			s.prevPrompt = row.Prompt
			switch {
			case s.group == s.spec.K && lo < 0:
				lo, hi = i, i+1
			case s.group == s.spec.K:
				hi = i + 1
			case s.group > s.spec.K:
				s.done = true
			}
			if s.done {
				break
			}
		}
		if lo >= 0 {
			return b.Slice(lo, hi), nil
		}
	}
	return nil, io.EOF
}
