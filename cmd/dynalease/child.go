package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// defaultGroupGoneWait bounds how long dynalease waits, after SIGKILL, for
// the command's process group to be gone. A group still there by then (a
// member stuck in the kernel) is never followed by a release: the lock is
// left to run out.
const defaultGroupGoneWait = 5 * time.Second

// child is the command run under a lock or a term: in a process group of
// its own, in the terminal's foreground when dynalease had it.
type child struct {
	pgid       int
	foreground bool
	exited     chan error // receives the command's end once
}

// startChild starts argv with env, and logs its process id.
func startChild(log logr.Logger, argv, env []string) (*child, error) {
	fg := ownsTerminal()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	cmd.SysProcAttr = groupAttr(fg)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	c := &child{pgid: cmd.Process.Pid, foreground: fg, exited: make(chan error, 1)}
	log.Info("started the command", "pid", c.pgid, "foreground", fg)
	go func() { c.exited <- cmd.Wait() }()
	return c, nil
}

// signal passes s on to the command's group.
func (c *child) signal(s syscall.Signal) { _ = syscall.Kill(-c.pgid, s) }

// reap kills what is left of the group once the command has exited, takes
// the terminal back, and reports whether the group is confirmed gone.
func (c *child) reap() bool {
	gone := killGroup(c.pgid)
	if c.foreground {
		reclaimTerminal()
	}
	return gone
}

// stop sends SIGTERM to the group, SIGKILL after grace if the command has
// not exited, and then reaps it (see reap).
func (c *child) stop(grace time.Duration) bool {
	c.signal(syscall.SIGTERM)
	select {
	case err := <-c.exited:
		c.exited <- err // for a later reader
	case <-time.After(grace):
	}
	return c.reap()
}

// leftToRunOut tells, on stderr, that the lock name is not released
// because the command's group could not be confirmed gone.
func (c *child) leftToRunOut(name string) {
	fmt.Fprintf(os.Stderr, "dynalease: the command's process group %d is still there after SIGKILL; not releasing %q: it will run out by itself\n", c.pgid, name)
}

// killGroup kills what is left of the process group and waits (a bounded
// while) until none of it remains, so that a lock released next is not
// overlapped by a dying grandchild. It reports whether the group is gone.
// A process that left the group (setsid, setpgid) or runs elsewhere (a
// container started by the command) is beyond its reach.
func killGroup(pgid int) bool {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(groupGoneWait())
	for {
		alive := groupNeverGone() || groupAlive(pgid)
		if !alive {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exitNow ends this process at once with code, without releasing anything:
// the lease runs out by itself. Tests of the package replace it.
var exitNow = os.Exit

// childEnv is the command's environment: ours, with the lock's name, the
// owner it is held under, (with fencing) the token and, when ctx carries a
// span, its trace context (TRACEPARENT, TRACESTATE). DYNALEASE_OWNER is
// left out, so that a dynalease the command runs makes an owner name of
// its own (two clients must never share one); no lock variables are
// inherited from a parent dynalease.
func childEnv(ctx context.Context, name, owner string, token int64) []string {
	trace := traceEnv(ctx)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DYNALEASE_TOKEN", "DYNALEASE_LOCK", "DYNALEASE_LOCK_OWNER", "DYNALEASE_OWNER":
			continue
		case "TRACEPARENT", "TRACESTATE":
			if trace != nil {
				continue
			}
		}
		env = append(env, kv)
	}
	env = append(env, trace...)
	env = append(env, "DYNALEASE_LOCK="+name, "DYNALEASE_LOCK_OWNER="+owner)
	if token != 0 {
		env = append(env, "DYNALEASE_TOKEN="+strconv.FormatInt(token, 10))
	}
	return env
}

// childExit turns the child's end into this process's exit: its code, or
// 128 + the signal that killed it.
func childExit(err error) error {
	var own *exitError
	if err == nil || errors.As(err, &own) {
		return err
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exit(128+int(ws.Signal()), nil)
		}
		return exit(ee.ExitCode(), nil)
	}
	return exit(exitUnavailable, err)
}
