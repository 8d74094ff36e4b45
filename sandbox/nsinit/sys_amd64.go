//go:build linux

package nsinit

// System call numbers the syscall package lacks here.
const (
	sysSetnsNr     = 308
	sysExecveat    = 322
	sysMemfdCreate = 319
	tinyReaperArch = true // the tiny reaper is x86-64 code
)
