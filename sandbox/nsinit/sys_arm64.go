//go:build linux

package nsinit

// System call numbers the syscall package lacks here.
const (
	sysSetnsNr     = 268
	sysExecveat    = 281
	sysMemfdCreate = 279
	tinyReaperArch = false
)
