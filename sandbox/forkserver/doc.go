// Package forkserver starts the embedded sandbox's Python runs by forking
// them from an interpreter started once, the way a plain run starts (a
// jail.Starter): a run then pays a fork and its set-up rather than an
// interpreter's start. forkserver.py is the server; forkserver.go says
// how it is started, how a run reaches it and what a forked run can tell
// apart from a plain one. Linux only.
package forkserver
