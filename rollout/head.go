package rollout

// Head returns a batch of the first n rows of b, sharing b's data. It lets
// an interrupted run write the finished leading rows of a batch.
func (b *Batch) Head(n int) *Batch {
	if n >= len(b.Rows) {
		return b
	}
	return b.Slice(0, n)
}

// Slice returns a batch of rows i to j-1 of b, sharing b's data.
func (b *Batch) Slice(i, j int) *Batch {
	if i == 0 && j >= len(b.Rows) {
		return b
	}
	s := &Batch{Rows: b.Rows[i:j]}
	if b.rec != nil {
		s.rec = b.rec.NewSlice(int64(i), int64(j))
	}
	if b.lines != nil {
		s.lines = b.lines[i:j]
	}
	return s
}
