//go:build unix && !linux

package main

import "syscall"

// groupAttr puts the command in a process group of its own.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupAlive reports whether a process of the group pgid still exists
// (zombies included: without /proc they cannot be told apart).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
