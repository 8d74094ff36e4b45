//go:build linux

package server

import "syscall"

// totalMemory is this machine's memory in bytes (1 GiB where unknown).
func totalMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		return int64(si.Totalram) * int64(si.Unit)
	}
	return 1 << 30
}
