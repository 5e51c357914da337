package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// groupAttr puts the command in a process group of its own, and asks the
// kernel to kill it if dynalease itself dies (SIGKILL, OOM): the lease then
// runs out and the command must not outlive it. Pdeathsig reaches only the
// direct child; its own children are stopped only through the group.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAlive reports whether a process of the group pgid is still running:
// zombies (dead, waiting for a parent that may never reap them, as under a
// container's minimal init) do not count.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ")".
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
