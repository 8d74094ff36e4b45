//go:build !linux

package server

// totalMemory is taken as 1 GiB where Linux's sysinfo is not there.
func totalMemory() int64 { return 1 << 30 }
