//go:build unix && !linux

package main

import "syscall"

// groupAttr puts the command in a process group of its own.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
