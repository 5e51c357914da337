package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/health"
)

func newElect(c *common) *cobra.Command {
	var (
		grace, retry time.Duration
		once         bool
		priority     int64
	)
	cmd := &cobra.Command{
		Use:         "elect NAME -- COMMAND [ARGS...]",
		Annotations: map[string]string{servesMetrics: "yes"},
		Short:       "Stand for election NAME; run COMMAND while leader",
		Long: `elect stands as a candidate for the election NAME and runs COMMAND (in a
process group of its own, with DYNALEASE_LOCK, DYNALEASE_LOCK_OWNER and, unless
--no-fencing, DYNALEASE_TOKEN) while it leads. When the term ends the group
gets SIGTERM, SIGKILL after --grace, and elect stands again (or exits with
--once: the command's code if it ended the term, 74 if the term was lost).
SIGTERM or SIGINT to elect stops the command first and then hands the
leadership over at once (the record is marked released).

Every candidate stands on the election's row with its --priority (higher
leads): a leader steps down for a live candidate of higher priority once its
term has lasted three retry periods, stopping the command first, and hands
the lease to it. SIGUSR1 to the leading elect hands the lease over the same
way to the live candidate of highest priority, whatever the priorities; elect
then stands again (or, with --once, exits 0). dynalease get NAME lists the
candidates.

The renew deadline is the lease minus --grace minus one second, so the
command is stopped before another candidate may take over; a lease too short
for that is refused.`,
		Args: nameThenCommand("usage: dynalease elect NAME -- COMMAND [ARGS...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.elect(cmd.Context(), args[0], args[1:], grace, retry, once, priority)
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when the term ends")
	cmd.Flags().DurationVar(&retry, "retry", 0, "renewal and polling period; lease/10 when 0")
	cmd.Flags().BoolVar(&once, "once", false, "exit after one term")
	cmd.Flags().Int64Var(&priority, "priority", 0, "this candidate's priority: higher leads")
	return cmd
}

func (c *common) elect(ctx context.Context, name string, argv []string, grace, retry time.Duration, once bool, priority int64) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t, err := c.electTimes(grace, retry)
	if err != nil {
		return exit(exitUsage, err)
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	db, err := c.client(ctx)
	if err != nil {
		return err
	}
	owner := c.owner
	if owner == "" {
		host, _ := os.Hostname()
		owner = host + "-" + uuid.NewString()
	}
	scfg := dynamodbstore.Config{Client: db, Table: c.table, SingleWriterRegion: c.singleWriter, SkipTableCheck: c.skipCheck, Logger: log}
	if !c.noFencing {
		scfg.FenceTable = c.fences()
	}
	store, err := dynamodbstore.New(scfg)
	if err != nil {
		return exit(exitUsage, err)
	}
	sctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var childErr error // the command's end in the last term
	e, err := election.New(election.Config{
		Store:           store,
		Name:            name,
		Identity:        owner,
		LeaseDuration:   t.lease,
		RenewDeadline:   t.renew,
		RetryPeriod:     t.retry,
		RequestTimeout:  t.requestTimeout,
		ReleaseOnCancel: true,
		Priority:        priority,
		Stand:           true,
		Fencing:         !c.noFencing,
		Logger:          log,
		Metrics:         c.tel.election(name),
		TracerProvider:  c.tel.tracerProvider(),
		Callbacks: election.Callbacks{
			OnStartedLeading: func(tctx context.Context) { childErr = superviseTerm(tctx, log, name, owner, argv, grace) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return exit(exitUsage, err)
	}
	c.tel.health(health.Liveness(e, t.renew), health.Readiness(e, 3*t.retry))
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1) // before anything can send it: its default action ends the process
	defer signal.Stop(usr1)
	go handOverOnSignal(sctx, e, name, usr1)
	for {
		childErr = nil
		err := e.Run(sctx)
		switch {
		case sctx.Err() != nil:
			return childExit(childErr)
		case errors.Is(err, election.ErrHandedOver):
			fmt.Fprintf(os.Stderr, "dynalease: %v\n", err)
			if once {
				return nil
			}
		case errors.Is(err, dynalease.ErrLost):
			fmt.Fprintf(os.Stderr, "dynalease: leadership of %q lost: %v\n", name, err)
			if once {
				return exit(exitLost, nil)
			}
		case err != nil:
			return classify(err)
		case once:
			return childExit(childErr) // the command ended the term
		default:
			// The command ended its own term and the record was released:
			// let the others have a go before standing again, so a command
			// that keeps failing does not spin or keep the leadership.
			if childErr != nil {
				fmt.Fprintln(os.Stderr, "dynalease: the command ended:", childErr)
			}
			select {
			case <-sctx.Done():
				return nil
			case <-time.After(c.lease):
			}
		}
	}
}

// handOverOnSignal hands the lease over to the live candidate of highest
// priority each time usr1 delivers SIGUSR1 while e leads, until ctx ends.
func handOverOnSignal(ctx context.Context, e *election.Elector, name string, usr1 <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-usr1:
			if err := e.HandOver(ctx, ""); err != nil {
				fmt.Fprintf(os.Stderr, "dynalease: hand over %q: %v\n", name, err)
			}
		}
	}
}

// superviseTerm runs the command for one term: until it exits (which ends
// the term) or the term's context ends (which stops its process group).
// Nothing is started outside the term: the check below reads the clock
// itself, since the term's own timer may not have run yet after a pause.
// A group that cannot be confirmed gone ends this process at once, so that
// neither a release nor the next term follows it.
func superviseTerm(ctx context.Context, log logr.Logger, name, owner string, argv []string, grace time.Duration) error {
	pauseBeforeStart()
	if !termInForce(ctx) {
		return nil
	}
	tok, _ := election.TokenFromContext(ctx)
	ch, err := startChild(log, argv, childEnv(ctx, name, owner, tok))
	if err != nil {
		return exit(exitUsage, err)
	}
	select {
	case err := <-ch.exited:
		if !ch.reap() {
			ch.leftToRunOut(name)
			exitNow(codeOf(childExit(err)))
		}
		return err
	case <-ctx.Done():
		if !ch.stop(grace) {
			ch.leftToRunOut(name)
			exitNow(exitLost)
		}
		return nil
	}
}

// termInForce reports whether the leader's context ctx is live and its
// deadline, the term's validity, has not passed by the clock.
func termInForce(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	d, ok := ctx.Deadline()
	return !ok || time.Now().Before(d)
}
