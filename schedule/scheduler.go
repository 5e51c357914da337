package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// DefaultKeyPrefix is the default Config.KeyPrefix.
const DefaultKeyPrefix = "dynalease/job/"

// defaultHorizon is the default Config.Horizon.
const defaultHorizon = 24 * time.Hour

// Config configures a Scheduler.
type Config struct {
	// Locks is the lock client the jobs' locks are taken with; its
	// identity names the instance. Required.
	Locks *lock.Client
	// KeyPrefix is put before a job's name to make its lock's key.
	// Default DefaultKeyPrefix.
	KeyPrefix string
	// Horizon is how far back an instance looks for missed slots; 24 h
	// when zero.
	Horizon time.Duration
	// SpreadStep delays an instance's attempt at a slot by this much for
	// each run it has under way (at most a quarter of the slot's starting
	// deadline), so that idle instances tend to win: jobs spread over the
	// fleet. Zero: 100 ms; negative: no delay.
	SpreadStep time.Duration
	// Clock is the clock of the schedule's waits: its timers say when to
	// look again and when a start gives up. It must be the lock client's.
	// Default the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// WallClock, when set, is the wall clock that decides which slot is
	// due; Clock's time when nil. It is the only place a wall clock enters
	// (the package doc, Clocks): a clock that jumps or runs off makes
	// slots start late or early, never twice. Set it when the lock
	// client's Clock is not the host's wall clock (tests, and hosts whose
	// wall clock is deliberately skewed).
	WallClock clock.PassiveClock
	// Log receives the scheduler's decisions (V(1)) and failures.
	Log logr.Logger
	// Metrics receives the jobs' figures (prommetrics' Metrics.Jobs);
	// none when nil.
	Metrics metrics.Jobs
	// TracerProvider receives a span per run (dynalease.job.run, its
	// context the run's). Nil: the global provider, which records nothing
	// until the application sets one.
	TracerProvider trace.TracerProvider
	// OnEvent, when set, is called for every slot event (started,
	// finished, skipped, missed) on the job's goroutine; it must return
	// quickly. Metrics and tests use it.
	OnEvent func(Event)
}

// Event is one thing that happened to a slot on this instance.
type Event struct {
	Job     string
	Kind    EventKind
	Slot    time.Time
	Attempt int
	// Status is a finished slot's (EventFinished); Err the run's error,
	// or why a start failed.
	Status Status
	Err    error
	// Lateness is how long after its slot a run started (EventStarted);
	// Duration how long it ran (EventFinished).
	Lateness, Duration time.Duration
	// Count is how many slots an EventMissed or EventSkipped stands for.
	Count int
}

// EventKind is the kind of an Event.
type EventKind int

// The kinds of events.
const (
	EventStarted  EventKind = iota // this instance started a run
	EventFinished                  // a run of this instance finished (or was lost: Err)
	EventSkipped                   // slots passed over by policy (SkipMissed, OverlapSkip)
	EventMissed                    // slots no instance started in time, as this one found them
)

// Scheduler runs a fleet's jobs: every instance runs one with the same
// jobs, and each slot runs on one instance (see the package doc).
type Scheduler struct {
	cfg     Config
	clk     timing.Clock
	wall    clock.PassiveClock // decides which slot is due
	jobs    []*Job
	running atomic.Int32
	tracer  tracing.Tracer
}

// New returns a scheduler of jobs on cfg.Locks. It validates cfg and the
// jobs (an error matching dynalease.ErrInvalid names the field) and sends
// no request.
func New(cfg Config, jobs ...Job) (*Scheduler, error) {
	if cfg.Locks == nil {
		return nil, &dynalease.InvalidError{Field: "Locks", Reason: "is nil"}
	}
	if ledgered.Timing(cfg.Locks).TTL > 0 {
		return nil, &dynalease.InvalidError{Field: "Locks", Reason: "its client sets a TTL on its rows (lock.Config.TTL): DynamoDB would delete a job's ledger with its row; use a client without one"}
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = defaultHorizon
	}
	if cfg.SpreadStep == 0 {
		cfg.SpreadStep = 100 * time.Millisecond
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Nop{}
	}
	s := &Scheduler{cfg: cfg, clk: timing.OrReal(cfg.Clock), tracer: tracing.New(cfg.TracerProvider)}
	s.wall = s.clk
	if cfg.WallClock != nil {
		s.wall = cfg.WallClock
	}
	deadline := ledgered.Timing(cfg.Locks).Lease + ledgered.Timing(cfg.Locks).Refresh
	names := map[string]bool{}
	for _, j := range jobs {
		if err := j.check(deadline); err != nil {
			return nil, err
		}
		if names[j.Name] {
			return nil, &dynalease.InvalidError{Field: "Job.Name", Reason: fmt.Sprintf("job %q is given twice", j.Name)}
		}
		if j.Schedule.Next(s.clk.Now()).IsZero() {
			return nil, &dynalease.InvalidError{Field: "Job.Schedule", Reason: fmt.Sprintf("job %q: the schedule names no slot after now", j.Name)}
		}
		names[j.Name] = true
		s.jobs = append(s.jobs, &j)
		for _, e := range []string{metrics.SlotStarted, metrics.SlotSucceeded, metrics.SlotFailed, metrics.SlotSkipped, metrics.SlotMissed} {
			cfg.Metrics.Slots(j.Name, e, 0) // every series from 0, for alerts on increase()
		}
	}
	return s, nil
}

// Run runs the jobs until ctx ends, and returns ctx's error after every
// run under way has returned and released its lock. A run that returns an
// error once ctx has ended was cut short, not failed: its slot stays
// unfinished, and another instance settles it by the job's policy (a new
// attempt within its deadline when Retries allow, or failed). An error
// that waiting cannot fix (resourcelock.Permanent: a missing table, access
// denied; an invalid setting; the lock client closed, lock.ErrClosed) ends
// every job and Run returns it, wrapped with the job's name. A job notices
// a closed lock client at its next request: at once when Run starts on
// one, when a run under way is cut short by it (its lock ends with
// lock.ErrClosed, and so does its context), and, for a job waiting for its
// next slot, when that slot is due.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, j := range s.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.loop(ctx, j); err != nil {
				cancel(fmt.Errorf("schedule: job %q: %w", j.Name, err))
			}
		}()
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ctx.Err()) {
		return cause
	}
	return ctx.Err()
}

// unfixable reports whether err is a failure that waiting cannot fix: the
// store's, an invalid setting, or the lock client closed.
func unfixable(err error) bool {
	return resourcelock.Permanent(err) || errors.Is(err, dynalease.ErrInvalid) || errors.Is(err, lock.ErrClosed)
}

// loop is one job's loop: read the ledger, do what the plan says, wait for
// the next slot. It returns only an error that waiting cannot fix, or nil
// once ctx has ended or the schedule has no more slots.
func (s *Scheduler) loop(ctx context.Context, j *Job) error {
	key := s.cfg.KeyPrefix + j.Name
	log := s.cfg.Log.WithValues("job", j.Name)
	var handled, started time.Time
	// known is the ledger as the last step left it (its refusal's, or its
	// own release's), or as the loop planned from it before sleeping
	// until the next slot (slept: not fresh): the loop plans from it once,
	// without reading the row. A ledger behind the row costs a refused
	// write, never a slot started twice: the write that starts a slot is
	// conditioned on the row's own ledger.
	var known *slotLedger
	var slept bool
	var keptUntil time.Time // a ledger kept over a sleep is used only before the slot after the one slept for
	for ctx.Err() == nil {
		if slept && !keptUntil.IsZero() && !s.wall.Now().Before(keptUntil) {
			// Overslept (a suspended host, a clock stepped forward):
			// slots may have run elsewhere since; read the row.
			known = nil
		}
		led, err := s.readOr(ctx, key, known)
		fresh := known != nil && !slept
		reusable := known != nil && !slept // a step's outcome, not a ledger kept over a sleep
		known, slept = nil, false
		if unfixable(err) {
			return err
		}
		if err != nil {
			log.Error(err, "reading the job's ledger")
			_ = timing.Sleep(ctx, s.clk, ledgered.Timing(s.cfg.Locks).Refresh, "schedule")
			continue
		}
		now := s.wall.Now()
		if started.IsZero() {
			started = now
		}
		s.reportDue(j, led, started)
		d := j.plan(led, handled, now, s.cfg.Horizon)
		handled = s.reportPlan(j, d, handled, now)
		if handled, known, err = s.takeSteps(ctx, j, key, led, d.steps, fresh, handled); err != nil {
			return err
		}
		if len(d.steps) == 0 {
			if d.wake.IsZero() {
				log.Info("the schedule names no more slots; the job's loop ends")
				return nil
			}
			if reusable && d.skipTo.IsZero() && d.missed == 0 {
				// Planned from a step's own outcome: nobody writes
				// the row before the next slot but a start of it,
				// which the next step's write meets.
				known, slept, keptUntil = &led, true, j.Schedule.Next(d.wake)
			}
			_ = timing.Sleep(ctx, s.clk, d.wake.Sub(s.wall.Now()), "schedule")
		}
	}
	return nil
}

// reportPlan reports the slots plan d skips or missed at now, and
// returns the last slot handled: d's skip's when it skips.
func (s *Scheduler) reportPlan(j *Job, d decision, handled, now time.Time) time.Time {
	switch {
	case !d.skipTo.IsZero():
		handled = d.skipTo
		s.event(Event{Job: j.Name, Kind: EventSkipped, Slot: d.skipTo, Count: d.missed})
	case d.missed > 0:
		s.event(Event{Job: j.Name, Kind: EventMissed, Slot: now, Count: d.missed})
	}
	return handled
}

// takeSteps takes the steps planned from led (fresh: a ledger the loop
// did not read, see pause) in order, and returns the last slot handled,
// the ledger the last step left when it knows it, and an error that
// waiting cannot fix.
func (s *Scheduler) takeSteps(ctx context.Context, j *Job, key string, led slotLedger, steps []step, fresh bool, handled time.Time) (time.Time, *slotLedger, error) {
	var known *slotLedger
	for _, st := range steps {
		if fresh && st.watches() && !s.pause(ctx, st) {
			break
		}
		settled, found, err := s.take(ctx, j, key, led, st)
		if err != nil {
			return handled, known, err
		}
		handled, known = later(handled, settled), found
	}
	return handled, known, nil
}

// pause waits, before a step that watches a running slot (st.watches),
// one refresh period of the lock client, or until the step's deadline if
// that comes first, and reports whether ctx lasted. The loop pauses when
// it planned the step from a ledger it did not read (a refusal's, just
// now): the row was seen held by the slot's run, and a wait that began at
// once would only read it again. The lock client keeps what the refusal
// saw (while the lock client's cache of watched keys, 10,000 of them, keeps
// the key), so the wait's takeover of a run that dies still counts from
// that sighting: the pause costs no lateness, only the read. A key evicted
// meanwhile costs a dead run's takeover one refresh period more.
func (s *Scheduler) pause(ctx context.Context, st step) bool {
	d := min(ledgered.Timing(s.cfg.Locks).Refresh, st.until.Sub(s.wall.Now()))
	return timing.Sleep(ctx, s.clk, d, "acquire") == nil // a wait on the lock, begun by a pause
}

// readOr returns known, the ledger as a refusal of the loop's last step
// found it (as fresh as a read right after it), or else reads it.
func (s *Scheduler) readOr(ctx context.Context, key string, known *slotLedger) (slotLedger, error) {
	if known != nil {
		return *known, nil
	}
	return s.read(ctx, key)
}

// read returns the ledger of the job's row; a missing row has none.
func (s *Scheduler) read(ctx context.Context, key string) (slotLedger, error) {
	info, err := s.cfg.Locks.Get(ctx, key)
	if errors.Is(err, resourcelock.ErrNotFound) {
		return slotLedger{}, nil
	}
	if err != nil {
		return slotLedger{}, err
	}
	return ledgerOf(ledgered.Numbers(info)), nil
}

// take tries st: takes the job's lock with the ledger's condition, then
// runs the slot (or only closes it) and releases the lock with the slot
// finished. It returns the latest slot the step settled: st's when done
// here, refused by the ledger (another instance started or finished it),
// or given up at its deadline, and after a run here also the slots the
// overlap policy settled; zero asks the loop to look again. found is the
// ledger as the step left it, when it knows it: as a refusal by the
// ledger's bound found it, or as its own confirmed release wrote it over
// led, the ledger the step was planned from (the loop plans from it
// without reading the row again). Its error is one that waiting cannot
// fix.
func (s *Scheduler) take(ctx context.Context, j *Job, key string, led slotLedger, st step) (settled time.Time, found *slotLedger, err error) {
	log := s.cfg.Log.WithValues("job", j.Name, "slot", st.slot, "attempt", st.attempt)
	wait := st.until.Sub(s.wall.Now())
	actx, cancel := timing.WithTimeout(ctx, s.clk, wait)
	defer cancel()
	if n := s.running.Load(); n > 0 && s.cfg.SpreadStep > 0 {
		delay := min(time.Duration(n)*s.cfg.SpreadStep, j.StartingDeadline/4)
		if err := timing.Sleep(actx, s.clk, delay, "schedule"); err != nil {
			return s.gaveUp(ctx, j, st, err), nil, nil
		}
	}
	l, err := s.acquireStep(actx, j, key, st, wait)
	switch {
	case errors.Is(err, ledger.ErrNotBelow):
		log.V(1).Info("started or finished elsewhere")
		if numbers, ok := ledgered.Refused(err); ok {
			led := ledgerOf(numbers)
			found = &led
		}
		return st.slot, found, nil
	case errors.Is(err, lock.ErrLocked) && j.Overlap == OverlapSkip && st.attempt == 1 && st.close == Unfinished:
		s.event(Event{Job: j.Name, Kind: EventSkipped, Slot: st.slot, Count: 1, Err: err})
		return st.slot, nil, nil
	case err != nil && ctx.Err() == nil && (actx.Err() != nil || errors.Is(err, lock.ErrLocked)):
		return s.gaveUp(ctx, j, st, err), nil, nil
	case unfixable(err):
		return time.Time{}, nil, err
	case err != nil:
		if ctx.Err() == nil {
			log.Error(err, "taking the job's lock")
			_ = timing.Sleep(ctx, s.clk, ledgered.Timing(s.cfg.Locks).Refresh, "schedule")
		}
		return time.Time{}, nil, nil
	}
	if st.close != Unfinished {
		log.Info("closing a slot whose run died", "outcome", st.close)
		if s.release(l, st.slot, st.close, log) {
			found = settledBy(led, st, st.close)
		}
		s.event(Event{Job: j.Name, Kind: EventFinished, Slot: st.slot, Attempt: st.attempt, Status: st.close})
		return st.slot, found, nil
	}
	if st.late {
		log.Info("starting a slot after its starting deadline, by the missed-slot policy")
	}
	began := s.wall.Now()
	if o := s.runSlot(ctx, j, l, st, log); o != Unfinished {
		found = settledBy(led, st, o)
	}
	last, n, kind := j.overlapped(st.slot, began, s.wall.Now(), s.cfg.Horizon)
	if n > 0 {
		s.event(Event{Job: j.Name, Kind: kind, Slot: last, Count: n})
	}
	return last, found, nil
}

// acquireStep takes the job's lock at key for step st, with the ledger's
// write that starts (or closes) its slot: a try for a slot skipped on
// overlap, else a wait for a live holder until the step's deadline
// (wait from now), not only for its lease.
func (s *Scheduler) acquireStep(ctx context.Context, j *Job, key string, st step, wait time.Duration) (*lock.Lock, error) {
	numbers, below := startWrites(st.slot, st.attempt)
	opts := []lock.AcquireOption{ledgered.Take(numbers, below)}
	if j.Overlap == OverlapSkip && st.attempt == 1 && st.close == Unfinished {
		return s.cfg.Locks.TryAcquire(ctx, key, opts...)
	}
	if wait > 0 {
		opts = append(opts, lock.WithAdditionalWait(wait))
	}
	return s.cfg.Locks.Acquire(ctx, key, opts...)
}

// gaveUp settles st, which could not take the job's lock by its deadline
// (err): a slot's first attempt is missed; a retry or a close found the
// slot's run alive, and the loop looks at the slot again. It returns zero
// once ctx has ended.
func (s *Scheduler) gaveUp(ctx context.Context, j *Job, st step, err error) time.Time {
	if ctx.Err() != nil {
		return time.Time{}
	}
	if st.attempt == 1 {
		s.event(Event{Job: j.Name, Kind: EventMissed, Slot: st.slot, Count: 1, Err: err})
	}
	return st.slot
}

// runSlot runs st's slot under l, and releases l with the slot finished
// unless l was lost meanwhile.
func (s *Scheduler) runSlot(ctx context.Context, j *Job, l *lock.Lock, st step, log logr.Logger) (finished Status) {
	s.running.Add(1)
	defer s.running.Add(-1)
	start := s.clk.Now()
	s.event(Event{Job: j.Name, Kind: EventStarted, Slot: st.slot, Attempt: st.attempt, Lateness: s.wall.Now().Sub(st.slot)})
	err := s.runTraced(ctx, j, l, st)
	ev := Event{Job: j.Name, Kind: EventFinished, Slot: st.slot, Attempt: st.attempt, Duration: s.clk.Since(start), Err: err}
	if ended := l.Err(); errors.Is(ended, lock.ErrClosed) {
		// The lock client was closed: Close released the row (the slot
		// unfinished, for another instance to settle), and the job's loop
		// ends at its next request.
		ev.Err = ended
		log.Info("the lock client was closed during the run; the slot stays unfinished", "error", ended.Error())
		s.event(ev)
		return Unfinished
	} else if ended != nil {
		// The row may already be another instance's: no ledger is
		// written. A lock lost only because its validity passed is still
		// released, conditioned on this run's RVN (it fails harmlessly if
		// someone took the row), so the others need not wait a lease.
		ev.Err = ended
		log.Info("the run's lock was lost; the slot stays unfinished", "error", ended.Error())
		_ = l.Release(context.Background()) // returns the loss; the client logs a failed write
		s.event(ev)
		return Unfinished
	}
	if err != nil && ctx.Err() != nil {
		// The scheduler stops: the run was cut short, not failed. The
		// slot stays unfinished, for another instance to settle by
		// policy (a retry within its deadline, or failed).
		ev.Err = err
		log.Info("the scheduler stopped during the run; the slot stays unfinished", "error", err.Error())
		if rerr := l.Release(context.Background()); rerr != nil {
			log.Error(rerr, "releasing the job's lock; another instance takes it after its lease")
		}
		s.event(ev)
		return Unfinished
	}
	ev.Status = Succeeded
	if err != nil {
		ev.Status = Failed
		log.Error(err, "run failed")
	}
	finished = ev.Status
	if !s.release(l, st.slot, ev.Status, log) {
		finished = Unfinished // the row may not say so
	}
	s.event(ev)
	return finished
}

// runTraced runs j's slot st under l, in a span of its own, and returns
// the run's error.
func (s *Scheduler) runTraced(ctx context.Context, j *Job, l *lock.Lock, st step) error {
	rctx, cancel := l.Context(ctx)
	rctx, span := s.tracer.Start(rctx, "dynalease.job.run")
	token := run(st.slot, st.attempt)
	if span.IsRecording() {
		span.SetAttributes(tracing.Job.String(j.Name), tracing.Slot.String(st.slot.Format(time.RFC3339Nano)),
			tracing.Attempt.Int(st.attempt), tracing.Token.Int64(token), tracing.Identity.String(s.cfg.Locks.Identity()))
	}
	err := j.Run(rctx, Run{Job: j.Name, Slot: st.slot, Attempt: st.attempt, Token: token, Lock: l})
	cancel()
	if span.IsRecording() {
		outcome := "succeeded"
		switch {
		case errors.Is(l.Err(), lock.ErrClosed):
			outcome = "closed"
		case l.Err() != nil:
			outcome = "lost"
		case err != nil && ctx.Err() != nil:
			outcome = "stopped"
		case err != nil:
			outcome = "failed"
		}
		span.SetAttributes(tracing.Outcome.String(outcome))
	}
	tracing.End(span, err)
	return err
}

// release releases l with slot finished as o, even once ctx has ended.
// It reports whether the release was confirmed.
func (s *Scheduler) release(l *lock.Lock, slot time.Time, o Status, log logr.Logger) bool {
	if err := l.Release(context.Background(), ledgered.Close(doneWrites(slot, o))); err != nil {
		log.Error(err, "releasing the job's lock; the slot stays unfinished until its lease runs out")
		return false
	}
	return true
}

// event reports e to the metrics and to Config.OnEvent.
func (s *Scheduler) event(e Event) {
	m := s.cfg.Metrics
	switch e.Kind {
	case EventStarted:
		m.Slots(e.Job, metrics.SlotStarted, 1)
		m.Lateness(e.Job, e.Lateness)
	case EventFinished:
		switch e.Status {
		case Succeeded:
			m.Slots(e.Job, metrics.SlotSucceeded, 1)
			m.Succeeded(e.Job, s.wall.Now())
		case Failed:
			m.Slots(e.Job, metrics.SlotFailed, 1)
		}
		if e.Duration > 0 {
			m.RunDuration(e.Job, e.Duration)
		}
	case EventSkipped:
		m.Slots(e.Job, metrics.SlotSkipped, e.Count)
	case EventMissed:
		m.Slots(e.Job, metrics.SlotMissed, e.Count)
	}
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(e)
	}
}

// reportDue reports by when j must succeed again: two slots after the
// ledger's last success, plus the starting deadline. Every instance
// reports the same time, from the ledger, however often it restarts. A job
// that never succeeded counts from when this instance first read its
// ledger (started): a fleet that keeps restarting before any success
// keeps moving that time, which the alert cannot tell from a new job.
func (s *Scheduler) reportDue(j *Job, led slotLedger, started time.Time) {
	from := led.succeeded
	if from.IsZero() {
		from = started
	}
	if second := j.Schedule.Next(j.Schedule.Next(from)); !second.IsZero() {
		s.cfg.Metrics.Due(j.Name, second.Add(j.StartingDeadline))
	}
}
