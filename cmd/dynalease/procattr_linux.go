package main

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// groupAttr puts the command in a process group of its own, and asks the
// kernel to kill it if dynalease itself dies (SIGKILL, OOM): the lease then
// runs out and the command must not outlive it. Pdeathsig reaches only the
// direct child; its own children are stopped only through the group. With
// foreground, the group also becomes the terminal's foreground group (see
// ownsTerminal), so that an interactive command reads the terminal, and
// gets Ctrl-C, as it would without dynalease.
func groupAttr(foreground bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if foreground {
		attr.Foreground, attr.Ctty = true, int(os.Stdin.Fd())
	}
	return attr
}

// ownsTerminal reports whether standard input is a terminal whose
// foreground process group is this process's: the command is then started
// in the foreground. A dynalease in the background, or without a
// terminal, leaves the terminal alone.
func ownsTerminal() bool {
	var pgrp int32
	fd := os.Stdin.Fd()
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false // not a terminal, or not ours
	}
	return int(pgrp) == syscall.Getpgrp()
}

// reclaimTerminal makes this process's group the terminal's foreground
// group again once the command's group is gone. A background process that
// does so gets SIGTTOU, which is ignored meanwhile.
func reclaimTerminal() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, os.Stdin.Fd(), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
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
