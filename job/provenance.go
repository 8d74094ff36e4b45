package job

// finishProvenance fills in the toolchains of the languages the run used.
func (r *runner) finishProvenance() {
	prov := r.opts.Provenance
	if prov == nil || r.opts.Toolchains == nil {
		return
	}
	prov.Toolchains = r.opts.Toolchains(r.sum.Languages())
}
