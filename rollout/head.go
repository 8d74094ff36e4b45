package rollout

// Head returns a batch of the first n rows of b, sharing b's data. It lets
// an interrupted run write the finished leading rows of a batch.
func (b *Batch) Head(n int) *Batch {
	if n >= len(b.Rows) {
		return b
	}
	h := &Batch{Rows: b.Rows[:n]}
	if b.rec != nil {
		h.rec = b.rec.NewSlice(0, int64(n))
	}
	if b.lines != nil {
		h.lines = b.lines[:n]
	}
	return h
}
