package rollout

import (
	"fmt"
	"io"
	"testing"
)

// Every row lands in exactly one shard, in input order, with the rows of a
// prompt together, whatever the number of shards and the batch size.
func TestShardsPartitionTheInput(t *testing.T) {
	for _, input := range []string{"../testdata/dump", "../testdata/example.jsonl"} {
		for _, n := range []int{1, 2, 3, 7, 50} {
			for _, batch := range []int{1, 4, 1000} {
				opts := DefaultOptions()
				opts.BatchRows = batch
				var all []int
				promptShard := map[string]int{}
				var total int64
				for k := range n {
					rd, err := OpenInput(input, nil, opts)
					if err != nil {
						t.Fatal(err)
					}
					total = CountRows(rd)
					sr := Shard(rd, ShardSpec{K: k, N: n}, total)
					for {
						b, err := sr.Next()
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						for _, row := range b.Rows {
							all = append(all, row.Index)
							if row.Prompt == "" {
								continue
							}
							if s, ok := promptShard[row.Prompt]; ok && s != k {
								t.Errorf("%s N=%d: a prompt is in shards %d and %d", input, n, s, k)
							}
							promptShard[row.Prompt] = k
						}
					}
					rd.Close()
				}
				if fmt.Sprint(all) != fmt.Sprint(seq(int(total))) {
					t.Errorf("%s N=%d batch %d: rows %v, want each of 0..%d once in order", input, n, batch, all, total-1)
				}
			}
		}
	}
	if _, err := ParseShard("3/3"); err == nil {
		t.Error("shard 3/3 accepted")
	}
	if s, err := ParseShard("2/8"); err != nil || s != (ShardSpec{2, 8}) {
		t.Errorf("2/8: %v %v", s, err)
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
