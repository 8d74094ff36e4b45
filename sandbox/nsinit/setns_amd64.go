//go:build linux

package nsinit

const sysSetnsNr = 308
