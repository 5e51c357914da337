package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/schedule"
)

// cronFlags are the job settings of dynalease cron.
type cronFlags struct {
	spec, tz, missed, overlap string
	deadline, grace           time.Duration
	catchUp, retries          int
}

func newCron(c *common) *cobra.Command {
	var f cronFlags
	cmd := &cobra.Command{
		Use:         "cron NAME --schedule SPEC [--tz ZONE] -- COMMAND [ARGS...]",
		Annotations: map[string]string{servesMetrics: "yes"},
		Short:       "Run COMMAND once per slot of SPEC, on one instance of the fleet",
		Long: `cron runs the job NAME: every instance of a fleet runs the same dynalease
cron, and COMMAND runs once for each slot of SPEC, on one of them (see
package schedule). SPEC is a cron expression (five fields, or @hourly,
@daily, …, in --tz) or "@every DURATION" (slots at the multiples of
DURATION since the Unix epoch, so every instance names the same ones).

Each slot is started by the write that takes the job's lock (key
dynalease/job/NAME) and records the slot in it, so a slot never runs twice,
nor after a later one, whatever the instances' clocks say. COMMAND runs as
under run: in a process group of its own, stopped (SIGTERM, SIGKILL after
--grace) when the lock is lost, with DYNALEASE_SLOT (the slot, RFC 3339
UTC), DYNALEASE_ATTEMPT and DYNALEASE_TOKEN (the run's number, growing
with every run of the job) in its environment. Its exit code marks the
slot succeeded (0) or failed.

SIGINT, SIGTERM or SIGHUP stops cron: a run under way gets SIGTERM (SIGKILL
after --grace), and its slot is recorded as its exit says.`,
		Args: nameThenCommand("usage: dynalease cron NAME --schedule SPEC [--tz ZONE] -- COMMAND [ARGS...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.cronCommand(cmd.Context(), args[0], args[1:], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.spec, "schedule", "", "the job's schedule: a cron expression, a descriptor, or @every DURATION (required)")
	fl.StringVar(&f.tz, "tz", "UTC", "the time zone of a cron expression, e.g. Europe/Paris")
	fl.DurationVar(&f.deadline, "starting-deadline", 0, "how late after its slot a run may start; 0: the lease plus the poll period")
	fl.StringVar(&f.missed, "missed", "latest", "slots missed while every instance was down: latest (run the latest once), skip, or each")
	fl.IntVar(&f.catchUp, "catch-up", 0, "with --missed each, run at most this many of them (0: 10)")
	fl.IntVar(&f.retries, "retries", 0, "new attempts of a slot whose run died (its lock lost); 0: the slot is recorded failed")
	fl.StringVar(&f.overlap, "overlap", "wait", "a slot due while the previous run goes on: wait (within its deadline) or skip")
	fl.DurationVar(&f.grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when the lock is lost or cron stops")
	return cmd
}

// job returns the job NAME that runs argv, as the flags say.
func (f cronFlags) job(name string, run func(ctx context.Context, r schedule.Run) error) (schedule.Job, error) {
	if f.spec == "" {
		return schedule.Job{}, errors.New("--schedule is required")
	}
	loc, err := time.LoadLocation(f.tz)
	if err != nil {
		return schedule.Job{}, fmt.Errorf("--tz: %w", err)
	}
	s, err := schedule.Cron(f.spec, loc)
	if err != nil {
		return schedule.Job{}, fmt.Errorf("--schedule: %w", err)
	}
	j := schedule.Job{Name: name, Schedule: s, Run: run, StartingDeadline: f.deadline, CatchUp: f.catchUp, Retries: f.retries}
	switch f.missed {
	case "latest":
		j.Missed = schedule.RunLatest
	case "skip":
		j.Missed = schedule.SkipMissed
	case "each":
		j.Missed = schedule.RunEach
	default:
		return j, fmt.Errorf("--missed %q: want latest, skip or each", f.missed)
	}
	switch f.overlap {
	case "wait":
		j.Overlap = schedule.OverlapWait
	case "skip":
		j.Overlap = schedule.OverlapSkip
	default:
		return j, fmt.Errorf("--overlap %q: want wait or skip", f.overlap)
	}
	return j, nil
}

func (c *common) cronCommand(ctx context.Context, name string, argv []string, f cronFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	var owner string // the lock client's, once made
	job, err := f.job(name, func(ctx context.Context, r schedule.Run) error { return runSlot(ctx, log, argv, owner, r, f.grace) })
	if err != nil {
		return exit(exitUsage, err)
	}
	lc, err := c.lockClient(ctx, log, f.grace, "cron")
	if err != nil {
		return err
	}
	defer lc.Close(context.WithoutCancel(ctx))
	owner = lc.Identity()
	cfg := schedule.Config{Locks: lc, Log: log}
	cfg.Metrics, cfg.TracerProvider = c.tel.jobs(), c.tel.tracerProvider()
	s, err := schedule.New(cfg, job)
	if err != nil {
		return exit(exitUsage, err)
	}
	up := checker{name: "dynalease-cron", check: func() error { return nil }}
	c.tel.health(up, up)
	sctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := s.Run(sctx); err != nil && sctx.Err() == nil {
		return classify(err)
	}
	return nil
}

// runSlot runs argv for the slot r, in a process group of its own, and
// stops the group (SIGTERM, SIGKILL after grace) when ctx ends: the lock
// lost, or cron stopping. A group that cannot be confirmed gone ends this
// process at once, without releasing the lock: it runs out by itself.
func runSlot(ctx context.Context, log logr.Logger, argv []string, owner string, r schedule.Run, grace time.Duration) error {
	env := append(childEnv(ctx, r.Lock.Key(), owner, r.Token),
		"DYNALEASE_SLOT="+r.Slot.UTC().Format(time.RFC3339),
		"DYNALEASE_ATTEMPT="+strconv.Itoa(r.Attempt))
	ch, err := startChild(log, argv, env)
	if err != nil {
		return err
	}
	select {
	case werr := <-ch.exited:
		if !ch.reap() {
			ch.leftToRunOut(r.Lock.Key())
			exitNow(exitLost)
		}
		return werr
	case <-ctx.Done():
		fmt.Fprintf(os.Stderr, "dynalease: stopping the run of slot %s (%v)\n", r.Slot.UTC().Format(time.RFC3339), context.Cause(ctx))
		if !ch.stop(grace) {
			ch.leftToRunOut(r.Lock.Key())
			exitNow(exitLost)
		}
		return context.Cause(ctx)
	}
}
