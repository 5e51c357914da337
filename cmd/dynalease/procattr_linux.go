package main

import "syscall"

// groupAttr puts the command in a process group of its own, and asks the
// kernel to kill it if dynalease itself dies (SIGKILL, OOM): the lease then
// runs out and the command must not outlive it. Pdeathsig reaches only the
// direct child; its own children are stopped only through the group.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
