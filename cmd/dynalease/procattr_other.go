//go:build unix && !linux

package main

import "syscall"

// groupAttr puts the command in a process group of its own. The terminal
// is left to this process on these systems (foreground is ignored).
func groupAttr(foreground bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// ownsTerminal reports false: the command is never made the terminal's
// foreground group on these systems.
func ownsTerminal() bool { return false }

// reclaimTerminal does nothing on these systems.
func reclaimTerminal() {}

// groupAlive reports whether a process of the group pgid still exists
// (zombies included: without /proc they cannot be told apart).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
