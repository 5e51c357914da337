package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/lock"
)

// noticeSlack is how long the lock client may take, at worst, from the end
// of its validity to this process signalling the child: the lock's own
// timer fires at that instant, and the signal follows in microseconds; a
// second covers a busy machine.
const noticeSlack = time.Second

func newRun(c *common) *cobra.Command {
	var (
		wait, grace time.Duration
		noWait      bool
	)
	cmd := &cobra.Command{
		Use:   "run NAME -- COMMAND [ARGS...]",
		Short: "Run COMMAND while holding the lock NAME; stop it if the lock is lost",
		Long: `run acquires the lock NAME (waiting while another owner holds it, up to
--wait, or failing at once with --no-wait), starts COMMAND in a process group
of its own with DYNALEASE_LOCK, DYNALEASE_OWNER and DYNALEASE_TOKEN (the
fencing token) in its environment, forwards SIGINT, SIGTERM and SIGHUP to it,
and when it exits stops what is left of its process group, releases the lock
and exits with its code.

If the lock is lost while COMMAND runs, its whole process group gets SIGTERM
at once, SIGKILL after --grace, and run exits 74. The lock's safety margin is
set to --grace plus one second, so the group is stopped before any other
owner may take the lock over; settings that leave no room for that are
refused.`,
		Args: nameThenCommand("usage: dynalease run NAME -- COMMAND [ARGS...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.runCommand(cmd.Context(), args[0], args[1:], wait, noWait, grace)
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "give up acquiring after this long; 0 waits the holder's lease (the lock client's budget)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "fail at once (exit 73) when the lock is held")
	cmd.Flags().DurationVar(&grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when the lock is lost")
	return cmd
}

// lockClient builds the lock client for commands that take locks: the
// safety margin covers the child's stop.
func (c *common) lockClient(ctx context.Context, grace time.Duration, m *server, name string) (*lock.Client, error) {
	log, err := c.logger()
	if err != nil {
		return nil, err
	}
	margin := grace + noticeSlack
	if margin >= c.lease/2 {
		return nil, exit(exitUsage, fmt.Errorf("--lease %v is too short for --grace %v: the safety margin (grace + %v) must stay under half the lease", c.lease, grace, noticeSlack))
	}
	heartbeat := c.heartbeat
	if heartbeat == 0 {
		heartbeat = c.lease / 4
	}
	db, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := []lock.Option{
		lock.WithLeaseDuration(c.lease), lock.WithSafetyMargin(margin), lock.WithHeartbeatPeriod(heartbeat),
		lock.WithRequestTimeout(min(c.requestTimeout, (c.lease-margin)/2-heartbeat)), lock.WithLogger(log),
	}
	if c.owner != "" {
		opts = append(opts, lock.WithOwnerName(c.owner))
	}
	if m != nil {
		opts = append(opts, lock.WithMetrics(m.metrics.Locks(name)))
	}
	if !c.noFencing {
		opts = append(opts, lock.WithFencing(c.fences()))
	}
	lc, err := lock.New(db, c.table, opts...)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return lc, nil
}

func (c *common) runCommand(ctx context.Context, name string, argv []string, wait time.Duration, noWait bool, grace time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	m, err := serve(c.metricsAddr)
	if err != nil {
		return err
	}
	defer m.close()
	lc, err := c.lockClient(ctx, grace, m, name)
	if err != nil {
		return err
	}
	// A signal while waiting for the lock stops the wait.
	actx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if wait > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, wait)
		defer cancel()
	}
	var l *lock.Lock
	if noWait {
		l, err = lc.TryAcquire(actx, name)
	} else {
		// --wait longer than the holder's lease keeps waiting: the budget
		// is the lease plus this much, and the context ends it at --wait.
		l, err = lc.Acquire(actx, name, lock.WithAdditionalWait(wait))
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
	defer lc.Close(context.WithoutCancel(ctx))
	// /healthz: this supervisor runs; /readyz: it holds the lock.
	m.health(checker{name: "dynalease-run", check: func() error { return nil }},
		checker{name: "lock-held", check: func() error {
			if !l.IsHeld() {
				return fmt.Errorf("lock %q not held: %v", name, l.Err())
			}
			return nil
		}})
	if !l.IsHeld() { // a pause since Acquire may have cost the lock
		return exit(exitLost, fmt.Errorf("lock %q lost before the command started: %v", name, l.Err()))
	}

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = childEnv(name, lc.Owner(), l.Token())
	child.SysProcAttr = groupAttr()
	if err := child.Start(); err != nil {
		_ = l.Release(context.WithoutCancel(ctx))
		return exit(exitUsage, fmt.Errorf("starting %s: %w", argv[0], err))
	}
	pgid := child.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(-pgid, s.(syscall.Signal))
		case werr := <-exited:
			// Nothing of the command may outlive its hold on the lock.
			killGroup(pgid)
			if rerr := l.Release(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, lock.ErrLost) {
				fmt.Fprintln(os.Stderr, "dynalease: releasing:", rerr)
			}
			return childExit(werr)
		case <-l.Done():
			fmt.Fprintf(os.Stderr, "dynalease: lock %q lost (%v); stopping the command\n", name, l.Err())
			stopGroup(pgid, exited, grace)
			return exit(exitLost, nil)
		}
	}
}

// stopGroup sends SIGTERM to the process group, and SIGKILL after grace if
// the child has not exited; then it kills whatever is left of the group.
func stopGroup(pgid int, exited <-chan error, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	killGroup(pgid)
}

// killGroup kills what is left of the process group and waits (a bounded
// while) until none of it remains, so that a lock released next is not
// overlapped by a dying grandchild. A process that left the group
// (setsid, setpgid) or runs elsewhere (a container started by the
// command) is beyond its reach.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// childEnv is the command's environment: ours, with the lock's name, the
// owner and (with fencing) the token, and no token inherited from a
// parent dynalease when there is none.
func childEnv(name, owner string, token int64) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DYNALEASE_TOKEN=") && !strings.HasPrefix(kv, "DYNALEASE_LOCK=") && !strings.HasPrefix(kv, "DYNALEASE_OWNER=") {
			env = append(env, kv)
		}
	}
	env = append(env, "DYNALEASE_LOCK="+name, "DYNALEASE_OWNER="+owner)
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

// nameThenCommand accepts exactly NAME -- COMMAND [ARGS...].
func nameThenCommand(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < 2 || cmd.ArgsLenAtDash() != 1 {
			return exit(exitUsage, errors.New(usage))
		}
		return nil
	}
}
