// Command leader is one candidate in a leader election held on a DynamoDB
// table. Start several with different -id values: exactly one of them leads
// at any time, and when it dies another takes over.
//
// It prints one line per event on stdout, as a timestamp followed by
// key=value pairs, for example:
//
//	2026-11-21T12:00:00.123Z id=cand-1 event=started-leading valid-for=1.5s
//	2026-11-21T12:00:00.623Z id=cand-1 event=leader-work tick=1
//	2026-11-21T12:00:01.050Z id=cand-2 event=new-leader leader=cand-1
//	2026-11-21T12:00:09.002Z id=cand-1 event=stopped-leading
//	2026-11-21T12:00:09.003Z id=cand-1 event=exit err=none
//
// The other events are candidate (at start, with the settings), renewed
// (with -show-renewals: ValidUntil moved after a confirmed renewal),
// handed-over (the leader stepped down for a candidate of higher -priority,
// or on SIGUSR1, and handed it the lease) and term-ended (a term ended
// without being asked to; the candidate stands again).
//
// -priority makes a candidate stand with a priority (higher leads): start
// one with -priority 1 beside candidates at 0 and it takes over from the
// leader a few renewals later, at a safe point. SIGUSR1 to the leader hands
// the lease to the live candidate of highest priority.
//
// The table is named by -table and the lease by -name. With
// DYNAMODB_ENDPOINT set (for example http://127.0.0.1:8000, DynamoDB Local)
// it talks to that server; otherwise to Amazon DynamoDB with the usual AWS
// configuration (environment, shared config files, instance role).
//
// The default durations are short so that a demonstration moves quickly;
// the library's own defaults are 15s, 10s and 2s. SIGINT or SIGTERM stops
// the candidate; a leader first lets its work return and then, with
// -release-on-cancel, marks the lease released so that another candidate
// takes over at once instead of after a full lease. A second signal exits
// immediately.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/examples/internal/ddbclient"
)

// workPeriod is how often the leader's stand-in work prints a tick.
const workPeriod = 500 * time.Millisecond

func main() {
	table := flag.String("table", "dynalease-demo", "DynamoDB table that holds the lease")
	name := flag.String("name", "leader", "lease (lock) name: the partition key value of its item")
	id := flag.String("id", defaultIdentity(), "this candidate's identity; unique among candidates")
	lease := flag.Duration("lease", 2*time.Second,
		fmt.Sprintf("LeaseDuration: how long others wait on an unchanged lease (library default %v)", election.DefaultLeaseDuration))
	renew := flag.Duration("renew", 1500*time.Millisecond,
		fmt.Sprintf("RenewDeadline: how long a leader leads after its last confirmed renewal was sent (library default %v)", election.DefaultRenewDeadline))
	retry := flag.Duration("retry", 200*time.Millisecond,
		fmt.Sprintf("RetryPeriod: renewal and polling period (library default %v)", election.DefaultRetryPeriod))
	createTable := flag.Bool("create-table", false, "create the table if it does not exist")
	releaseOnCancel := flag.Bool("release-on-cancel", true, "release the lease when stopped by a signal")
	priority := flag.Int64("priority", 0, "this candidate's priority: a live candidate of higher priority takes over from the leader")
	showRenewals := flag.Bool("show-renewals", false, "while leading, also print a line whenever ValidUntil moves (each confirmed renewal)")
	verbosity := flag.Int("v", -1, "the library's logs on stderr: -1 errors only, 0 also info, 1 also debug")
	flag.Parse()

	out := &printer{id: *id}
	// The first SIGINT or SIGTERM cancels ctx; stop() then restores the
	// default action, so a second signal kills the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()

	err := run(ctx, out, options{
		table: *table, name: *name, id: *id,
		lease: *lease, renew: *renew, retry: *retry,
		createTable: *createTable, releaseOnCancel: *releaseOnCancel,
		showRenewals: *showRenewals, verbosity: *verbosity, priority: *priority,
	})
	if err != nil {
		out.print("exit", "err", err)
		os.Exit(1)
	}
	out.print("exit", "err", "none")
}

type options struct {
	table, name, id     string
	lease, renew, retry time.Duration
	createTable         bool
	releaseOnCancel     bool
	showRenewals        bool
	verbosity           int
	priority            int64
}

// run stands for election until ctx is cancelled. It returns nil when ctx
// ended it, and an error when the candidate could not run at all.
func run(ctx context.Context, out *printer, o options) error {
	client, err := ddbclient.New(ctx)
	if err != nil {
		return err
	}
	if o.createTable {
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := dynamodbstore.CreateTable(tctx, client, o.table, dynamodbstore.TableOptions{})
		cancel()
		if err != nil {
			return err
		}
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: o.table})
	if err != nil {
		return err
	}

	// The callbacks need the Elector (for ValidUntil), which needs them.
	var el *election.Elector
	lead := func(ctx context.Context) {
		out.print("started-leading", "valid-for", time.Until(el.ValidUntil()))
		work(ctx, out, el, o.showRenewals)
	}
	el, err = election.New(election.Config{
		Store:         store,
		Name:          o.name,
		Identity:      o.id,
		LeaseDuration: o.lease,
		RenewDeadline: o.renew,
		RetryPeriod:   o.retry,
		Callbacks: election.Callbacks{
			OnStartedLeading: lead,
			OnStoppedLeading: func() { out.print("stopped-leading") },
			OnNewLeader:      func(leader string) { out.print("new-leader", "leader", leader) },
		},
		ReleaseOnCancel: o.releaseOnCancel,
		// Every candidate stands, so that a leader can hand over to it.
		Priority: o.priority,
		Stand:    true,
		Logger:   stderrLogger(o.verbosity),
	})
	if err != nil {
		return err
	}
	out.print("candidate", "table", o.table, "name", o.name, "priority", o.priority,
		"lease", o.lease, "renew", o.renew, "retry", o.retry, "release-on-cancel", o.releaseOnCancel)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1) // before anything can send it: its default action ends the process
	defer signal.Stop(usr1)
	go handOverOnSIGUSR1(ctx, out, el, usr1)

	// Run returns once a term this candidate led has ended, or when ctx is
	// done; stand again until asked to stop. A term ends by itself with an
	// error wrapping dynalease.ErrLost (no renewal confirmed in
	// time, or the lease taken), with one matching election.ErrHandedOver
	// when the leader handed the lease to another candidate, or with nil
	// when work returned because the term had run out before the elector
	// noticed.
	for ctx.Err() == nil {
		err := el.Run(ctx)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, election.ErrHandedOver):
			out.print("handed-over", "to", el.Leader())
		default:
			out.print("term-ended", "err", errOrNone(err))
		}
	}
	return nil
}

// handOverOnSIGUSR1 hands the lease to the live candidate of highest
// priority each time usr1 delivers SIGUSR1 while this candidate leads.
func handOverOnSIGUSR1(ctx context.Context, out *printer, el *election.Elector, usr1 <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-usr1:
			if err := el.HandOver(ctx, ""); err != nil {
				out.print("hand-over-refused", "err", err)
			}
		}
	}
}

func errOrNone(err error) any {
	if err == nil {
		return "none"
	}
	return err
}

// work is the leader's work: a tick every workPeriod while this candidate
// leads. Its ctx, the term's context, is cancelled when the term ends or
// the candidate is asked to stop, and the term is over only once work has
// returned, so work returns promptly then. Before each step it also asks
// IsLeader, which turns false by itself the moment the term's validity
// runs out: after a pause (GC, SIGSTOP) the cancellation may not have been
// delivered yet. A step that sends requests should derive their contexts
// from ctx, whose Deadline is the term's current ValidUntil. None of this
// can stop a step already under way; see "What is not guaranteed" in the
// election package.
func work(ctx context.Context, out *printer, el *election.Elector, showRenewals bool) {
	ticker := time.NewTicker(workPeriod)
	defer ticker.Stop()
	var poll <-chan time.Time
	if showRenewals {
		p := time.NewTicker(5 * time.Millisecond)
		defer p.Stop()
		poll = p.C
	}
	lastValid := el.ValidUntil()
	for tick := 1; ; {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if ctx.Err() != nil || !el.IsLeader() {
				return
			}
			out.print("leader-work", "tick", tick)
			tick++
		case <-poll:
			// ValidUntil is RenewDeadline after the send time of the last
			// confirmed renewal, so it moves with each one.
			if v := el.ValidUntil(); v.After(lastValid) {
				lastValid = v
				out.print("renewed", "valid-for", time.Until(v))
			}
		}
	}
}

// stderrLogger returns a logger that writes the library's logs to stderr:
// errors always (an unreachable endpoint, a missing table), info messages up
// to verbosity.
func stderrLogger(verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().UTC().Format(timeFormat), prefix, args)
	}, funcr.Options{Verbosity: verbosity})
}

func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

const timeFormat = "2006-01-02T15:04:05.000Z"

// printer writes event lines to stdout, one whole line per write, from any
// goroutine.
type printer struct {
	id string
	mu sync.Mutex
}

// print writes "TIME id=ID event=EVENT k=v ...". Durations are rounded to
// the millisecond; values with spaces or quotes are quoted.
func (p *printer) print(event string, kv ...any) {
	var b strings.Builder
	b.WriteString(time.Now().UTC().Format(timeFormat))
	fmt.Fprintf(&b, " id=%s event=%s", quote(p.id), event)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if d, ok := v.(time.Duration); ok {
			v = d.Round(time.Millisecond)
		}
		fmt.Fprintf(&b, " %s=%s", kv[i], quote(fmt.Sprint(v)))
	}
	b.WriteByte('\n')
	p.mu.Lock()
	defer p.mu.Unlock()
	os.Stdout.WriteString(b.String())
}

func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}
