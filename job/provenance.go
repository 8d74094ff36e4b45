package job

// finishProvenance fills in the toolchains of the languages the run used
// and the images its repository tasks used.
func (r *runner) finishProvenance() {
	prov := r.opts.Provenance
	if prov == nil {
		return
	}
	if r.opts.Toolchains != nil {
		prov.Toolchains = r.opts.Toolchains(r.sum.Languages())
	}
	if r.opts.Images != nil {
		prov.Images = r.opts.Images()
	}
}
