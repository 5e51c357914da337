//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one candidate process, the leader of its own process group so
// that a signal to the group reaches everything it may have started.
type child struct {
	name     string
	cmd      *exec.Cmd
	stopping bool  // the demo signalled it, so an exit is expected
	exited   bool  // its exit was handled
	exitErr  error // cmd.Wait's result
	exitLine string
}

// line is one line a candidate printed, or the news that it exited,
// stamped with the demo's elapsed time when it arrived.
type line struct {
	at     time.Duration
	cand   string
	text   string
	stderr bool
	fields map[string]string // the key=value pairs of a stdout line

	exited bool
	err    error // cmd.Wait's result when exited
}

func (l *line) event() string { return l.fields["event"] }

// startCandidate starts a candidate with args and forwards its output, line by line,
// to d.lines.
func (d *demo) startCandidate(name, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = childProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	d.children = append(d.children, &child{name: name, cmd: cmd})
	go func() {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); d.forward(name, stdout, false) }()
		go func() { defer wg.Done(); d.forward(name, stderr, true) }()
		wg.Wait() // Wait closes the pipes, so only after they are read
		err := cmd.Wait()
		d.lines <- &line{at: d.now(), cand: name, exited: true, err: err}
	}()
	return nil
}

func (d *demo) forward(name string, r io.Reader, isStderr bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := &line{at: d.now(), cand: name, text: sc.Text(), stderr: isStderr}
		if !isStderr {
			l.fields = parseFields(l.text)
		}
		d.lines <- l
	}
	// A read error only means the process went away; its exit is reported
	// separately.
}

// parseFields splits `TIME k=v k="quoted v" ...` into its pairs, the
// leading timestamp under "time". It stops at the first malformed token.
func parseFields(s string) map[string]string {
	ts, rest, _ := strings.Cut(s, " ")
	m := map[string]string{"time": ts}
	for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		k, after, ok := strings.Cut(rest, "=")
		if !ok || strings.Contains(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = after[len(q):]
		} else {
			v, rest, _ = strings.Cut(after, " ")
		}
		m[k] = v
	}
	return m
}

// signal sends sig to c's process group and returns when it was sent.
func (d *demo) signal(c *child, sig syscall.Signal) time.Duration {
	c.stopping = true
	at := d.now()
	if !c.exited {
		// A negative pid names the process group; the child is its leader.
		if err := syscall.Kill(-c.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			d.problem("sending %v to %s: %v", sig, c.name, err)
		}
	}
	return at
}

// killAll kills every candidate that has not exited, and waits up to a few
// seconds for their exits, so that none outlives the demo.
func (d *demo) killAll() {
	for _, c := range d.children {
		if !c.exited {
			d.signal(c, syscall.SIGKILL)
		}
	}
	timeout := time.NewTimer(3 * time.Second)
	defer timeout.Stop()
	for d.running() > 0 {
		select {
		case l := <-d.lines:
			d.handle(l)
		case <-timeout.C:
			fmt.Fprintf(os.Stderr, "demo: %d candidates did not exit after SIGKILL\n", d.running())
			return
		}
	}
}

func (d *demo) running() int {
	n := 0
	for _, c := range d.children {
		if !c.exited {
			n++
		}
	}
	return n
}

func (d *demo) child(name string) *child {
	for _, c := range d.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// await handles lines until one satisfies cond, and returns it. It fails
// when timeout passes first (the error says what did not happen) or when
// ctx is done.
func (d *demo) await(ctx context.Context, timeout time.Duration, missing string, cond func(*line) bool) (*line, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
			if missing == "" {
				return nil, nil
			}
			return nil, fmt.Errorf("%s within %v", missing, timeout)
		case l := <-d.lines:
			d.handle(l)
			if cond != nil && cond(l) {
				return l, nil
			}
		}
	}
}

// pause handles lines for a while.
func (d *demo) pause(ctx context.Context, dur time.Duration) error {
	_, err := d.await(ctx, max(dur, 0), "", nil)
	return err
}

// awaitLeader returns the started-leading line of a candidate not named in
// except that leads now, waiting for one if there is none yet.
func (d *demo) awaitLeader(ctx context.Context, timeout time.Duration, missing string, except ...string) (*line, error) {
	for name := range d.leading {
		if !slices.Contains(except, name) {
			return d.startLine[name], nil
		}
	}
	return d.await(ctx, timeout, missing, startedLeading(except...))
}

// startedLeading matches a started-leading line of a candidate not named
// in except.
func startedLeading(except ...string) func(*line) bool {
	return func(l *line) bool {
		if l.exited || l.stderr || l.event() != "started-leading" {
			return false
		}
		return !slices.Contains(except, l.cand)
	}
}

// awaitExit waits for c to exit, unless it has already.
func (d *demo) awaitExit(ctx context.Context, c *child) error {
	if c.exited {
		return nil
	}
	_, err := d.await(ctx, stopTimeout, c.name+" did not exit after SIGTERM",
		func(l *line) bool { return l.exited && l.cand == c.name })
	return err
}

// handle prints a line and keeps the books: who leads according to the
// candidates' own lines, when each last confirmed a renewal, and how each
// process ended.
func (d *demo) handle(l *line) {
	c := d.child(l.cand)
	switch {
	case l.exited:
		c.exited, c.exitErr = true, l.err
		d.endLeading(l.cand)
		if !c.stopping {
			d.problem("%s exited unexpectedly: %s", l.cand, describeExit(l.err))
		}
		d.show(l.at, l.cand, "(process ended: "+describeExit(l.err)+")")
		return
	case l.stderr:
		d.show(l.at, l.cand+"!", l.text)
		return
	}
	switch l.event() {
	case "started-leading":
		for other, since := range d.leading {
			if other != l.cand {
				d.overlap = true
				d.problem("two leaders at once: %s started leading at %.3fs while %s had been leading since %.3fs",
					l.cand, l.at.Seconds(), other, since.Seconds())
			}
		}
		d.leading[l.cand] = l.at
		d.startLine[l.cand] = l
		d.noteRenewal(l)
	case "renewed":
		d.noteRenewal(l)
	case "stopped-leading":
		d.endLeading(l.cand)
		d.stoppedAt[l.cand] = l.at
	case "exit":
		c.exitLine = l.fields["err"]
	}
	if !d.verbose && (l.event() == "leader-work" || l.event() == "renewed") {
		return
	}
	d.show(l.at, l.cand, l.text)
}

// noteRenewal estimates, from a line that reports valid-for, when the
// confirmed write that set the candidate's validity was sent: validity is
// RenewDeadline after that send time, and the line was printed just after
// valid-for was computed and read at once.
func (d *demo) noteRenewal(l *line) {
	v, err := time.ParseDuration(l.fields["valid-for"])
	if err != nil {
		d.problem("%s: cannot read valid-for in %q", l.cand, l.text)
		return
	}
	d.lastRenewal[l.cand] = l.at - (renewDeadline - v)
}

func (d *demo) endLeading(name string) { delete(d.leading, name) }

// currentLeader returns the one candidate leading by its own report, or ""
// when none or several do.
func (d *demo) currentLeader() string {
	if len(d.leading) != 1 {
		return ""
	}
	for name := range d.leading {
		return name
	}
	return ""
}

// describeExit describes cmd.Wait's result: "exit status 1", "signal:
// killed".
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
