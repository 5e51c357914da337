package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/lock"
)

func newRun(c *common) *cobra.Command {
	var (
		wait, grace time.Duration
		noWait      bool
		keys        []string
		permits     int
		shared      bool
	)
	cmd := &cobra.Command{
		Use:         "run {NAME | --shared NAME | --keys K1,K2,... | --permits N NAME} -- COMMAND [ARGS...]",
		Annotations: map[string]string{servesMetrics: "yes"},
		Short:       "Run COMMAND while holding the lock NAME; stop it if the lock is lost",
		Long: `run acquires the lock NAME (waiting while another owner holds it, up to
--wait, or failing at once with --no-wait), starts COMMAND in a process group
of its own (the terminal's foreground group when dynalease has the
terminal, so interactive commands work as without it) with DYNALEASE_LOCK,
DYNALEASE_LOCK_OWNER and DYNALEASE_TOKEN (the fencing token) in its
environment (DYNALEASE_OWNER is not passed on: a dynalease that COMMAND runs
makes an owner name of its own), forwards SIGINT, SIGTERM and SIGHUP to it,
and when it exits stops what is left of its process group, releases the lock
and exits with its code. A group that is still there 5 s after SIGKILL is
never followed by a release: the lock is left to run out.

With --keys instead of NAME, run takes the locks on all the keys at once,
in one transaction, or none of them (see lock.Client.AcquireSet): two runs
over overlapping keys, in any order, never deadlock. DYNALEASE_LOCK then
holds the keys joined by commas, and DYNALEASE_TOKEN the set's one
fencing token, higher than every token any of the keys had before.

With --permits N, NAME is a semaphore of N permits: run takes one of them
(see lock.Client.AcquirePermit), waiting while all N are held, and the
command runs while it holds it. DYNALEASE_LOCK then names the permit's slot
(NAME#permit-I), and DYNALEASE_TOKEN is the permit's own fencing token.

With --shared, run takes a shared hold of NAME, a read lock (see
lock.Client.AcquireShared): any number of shared runs hold NAME at once,
and none while a run without --shared (a writer) holds it; a writer that
waits holds new shared runs back. DYNALEASE_TOKEN is then the token of the
last writer of NAME (0 before any), so that a resource can refuse a reader
that read before a later writer wrote.

If the lock is lost while COMMAND runs, its whole process group gets SIGTERM
at once, SIGKILL after --grace, and run exits 74. The lock's safety margin is
set to --grace plus one second, so the group is stopped before any other
owner may take the lock over; settings that leave no room for that are
refused.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(keys) > 0 && permits != 0 {
				return exit(exitUsage, errors.New("--keys and --permits do not go together"))
			}
			if shared && (len(keys) > 0 || permits != 0) {
				return exit(exitUsage, errors.New("--shared takes one NAME: not with --keys or --permits"))
			}
			if len(keys) > 0 {
				return commandOnly("usage: dynalease run --keys K1,K2,... -- COMMAND [ARGS...]")(cmd, args)
			}
			return nameThenCommand("usage: dynalease run NAME -- COMMAND [ARGS...]")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t := target{keys: keys}
			if len(keys) == 0 {
				t, args = target{name: args[0], permits: permits, shared: shared}, args[1:]
			}
			// One span for the whole run: the acquire, the command (whose
			// TRACEPARENT names it) and the release.
			ctx, span := c.tel.span(cmd.Context(), "dynalease.run", tracing.Key.String(t.String()))
			err := c.runCommand(ctx, t, args, wait, noWait, grace)
			c.tel.end(span, err)
			return err
		},
	}
	cmd.Flags().IntVar(&permits, "permits", 0, "NAME is a semaphore of this many permits: take one of them")
	cmd.Flags().BoolVar(&shared, "shared", false, "take a shared hold of NAME (a read lock): shared runs hold it together, never with a writer")
	cmd.Flags().StringSliceVar(&keys, "keys", nil, "take these keys all at once, or none, instead of the lock NAME")
	cmd.Flags().DurationVar(&wait, "wait", 0, "give up acquiring after this long; 0 waits the holder's lease (the lock client's budget)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "fail at once (exit 73) when the lock is held")
	cmd.Flags().DurationVar(&grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when the lock is lost")
	cmd.Flags().BoolVar(&c.unfair, "unfair", false, "wait as the AWS Java lock client does: no queue, no hand-over (waiting is fair by default)")
	return cmd
}

// lockClient builds the lock client for commands that take locks: the
// safety margin covers the child's stop.
func (c *common) lockClient(ctx context.Context, log logr.Logger, grace time.Duration, name string) (*lock.Client, error) {
	t, err := c.runTimes(grace)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	store, err := c.store(ctx, !c.noFencing, log)
	if err != nil {
		return nil, err
	}
	cfg := lock.Config{
		Store: store, Identity: c.owner, Fencing: !c.noFencing,
		LeaseDuration: t.lease, SafetyMargin: t.margin, HeartbeatPeriod: t.heartbeat,
		RequestTimeout: t.requestTimeout, Logger: log, Unfair: c.unfair,
	}
	cfg.Metrics, cfg.TracerProvider = c.tel.locks(name), c.tel.tracerProvider()
	lc, err := lock.New(cfg)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return lc, nil
}

// target is what run takes: the lock name, or the keys of a set.
type target struct {
	name    string
	keys    []string
	permits int  // NAME is a semaphore of this many permits; 0 for a lock
	shared  bool // a shared hold of NAME
}

// String names the target: the lock name, or the keys joined by commas.
func (t target) String() string {
	if len(t.keys) > 0 {
		return strings.Join(t.keys, ",")
	}
	return t.name
}

// acquire takes t, waiting (Acquire) or not (TryAcquire).
func (t target) acquire(ctx context.Context, lc *lock.Client, try bool, opts ...lock.AcquireOption) (*lock.Lock, error) {
	switch {
	case t.shared && try:
		return lc.TryAcquireShared(ctx, t.name, opts...)
	case t.shared:
		return lc.AcquireShared(ctx, t.name, opts...)
	case t.permits != 0 && try:
		return lc.TryAcquirePermit(ctx, t.name, t.permits, opts...)
	case t.permits != 0:
		return lc.AcquirePermit(ctx, t.name, t.permits, opts...)
	case len(t.keys) > 0 && try:
		return lc.TryAcquireSet(ctx, t.keys, opts...)
	case len(t.keys) > 0:
		return lc.AcquireSet(ctx, t.keys, opts...)
	case try:
		return lc.TryAcquire(ctx, t.name, opts...)
	}
	return lc.Acquire(ctx, t.name, opts...)
}

func (c *common) runCommand(ctx context.Context, t target, argv []string, wait time.Duration, noWait bool, grace time.Duration) error {
	name := t.String()
	if ctx == nil {
		ctx = context.Background()
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	lc, err := c.lockClient(ctx, log, grace, name)
	if err != nil {
		return err
	}
	// A signal while waiting for the lock stops the wait.
	actx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if wait < 0 {
		return exit(exitUsage, fmt.Errorf("--wait %v is negative", wait))
	}
	if wait > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, wait)
		defer cancel()
	}
	var l *lock.Lock
	if noWait {
		l, err = t.acquire(actx, lc, true)
	} else {
		// --wait longer than the holder's lease keeps waiting: the budget
		// is the lease plus this much, and the context ends it at --wait.
		l, err = t.acquire(actx, lc, false, lock.WithAdditionalWait(wait))
	}
	if err != nil {
		if actx.Err() != nil { // --wait ran out, or a signal stopped the wait
			return exit(exitNotAcquired, fmt.Errorf("acquiring %q: %w", name, err))
		}
		return classify(fmt.Errorf("acquiring %q: %w", name, err))
	}
	// Take the signals over before the wait's handler lets them go, so
	// none falls back to its default action in between.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	stop()
	leftToRunOut := false // the lock must not be released: see child.leftToRunOut
	defer func() {
		if !leftToRunOut {
			lc.Close(context.WithoutCancel(ctx))
		}
	}()
	// /healthz: this supervisor runs; /readyz: it holds the lock.
	c.tel.health(checker{name: "dynalease-run", check: func() error { return nil }},
		checker{name: "lock-held", check: func() error {
			if !l.IsHeld() {
				return fmt.Errorf("lock %q not held: %v", name, l.Err())
			}
			return nil
		}})
	pauseBeforeStart()
	if !l.IsHeld() { // a pause since Acquire may have cost the lock
		return exit(exitLost, fmt.Errorf("lock %q lost before the command started: %v", name, l.Err()))
	}
	ch, err := startChild(log, argv, childEnv(ctx, l.Key(), lc.Identity(), l.Token()))
	if err != nil {
		_ = l.Release(context.WithoutCancel(ctx))
		return exit(exitUsage, err)
	}
	for {
		select {
		case s := <-sigs:
			ch.signal(s.(syscall.Signal))
		case werr := <-ch.exited:
			// Nothing of the command may outlive its hold on the lock.
			if !ch.reap() {
				leftToRunOut = true
				ch.leftToRunOut(name)
				return childExit(werr)
			}
			if rerr := l.Release(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, dynalease.ErrLost) {
				fmt.Fprintln(os.Stderr, "dynalease: releasing:", rerr)
			}
			return childExit(werr)
		case <-l.Done():
			fmt.Fprintf(os.Stderr, "dynalease: lock %q lost (%v); stopping the command\n", name, l.Err())
			if !ch.stop(grace) {
				leftToRunOut = true
				ch.leftToRunOut(name)
			}
			return exit(exitLost, nil)
		}
	}
}

// commandOnly accepts exactly -- COMMAND [ARGS...].
func commandOnly(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < 1 || cmd.ArgsLenAtDash() != 0 {
			return exit(exitUsage, errors.New(usage))
		}
		return nil
	}
}

// nameThenCommand accepts exactly NAME -- COMMAND [ARGS...].
func nameThenCommand(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < 2 || cmd.ArgsLenAtDash() != 1 {
			return exit(exitUsage, errors.New(usage))
		}
		return nil
	}
}
