//go:build unix && !linux

package main

import "syscall"

// childProcAttr puts a candidate in its own process group, so that the demo
// can signal it and anything it started as one, and so that a Ctrl-C at the
// terminal reaches the demo alone, which then stops the candidates itself.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
