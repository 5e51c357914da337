package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/candidacy"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Elector campaigns for one lease and runs the leader's work while it holds
// it. Create one with New; call Run to stand for election. Its methods are
// safe for concurrent use.
type Elector struct {
	cfg      Config
	lease    keylease.Port // the record's lease: Config.Store's row, or Config.Lease
	clk      clockutil.Clock
	log      logr.Logger
	identity string
	notify   *notifier

	// cport is the lease that shows the row's candidates to their watch
	// (Candidates) with every answer; nil with Config.Lease.
	cport *candidacy.Port

	// mu guards the state shared between Run and the accessors.
	mu      sync.Mutex
	running bool
	current *term  // the term of the last Run that led, nil before
	leader  string // holder last observed, "" when none

	// k is the kernel: the one wait loop, the failure the loop keeps
	// retrying (and since when), the validity of the current term, its
	// renewals, and what a Run that gave up campaigning leaves to the
	// next (the watched record and the writes still in doubt).
	k *rvnlease.Kernel[*term]
}

// New validates cfg and returns an Elector. Zero durations take the
// published defaults. An invalid cfg gives an error matching
// dynalease.ErrInvalid; errors.As with *dynalease.InvalidError names the
// field.
func New(cfg Config) (*Elector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lease, err := cfg.port()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.WithValues("lock", lease.Describe(), "identity", lease.Identity())
	if cfg.Name != "" {
		log = log.WithValues("election", cfg.Name)
	}
	if margin := cfg.LeaseDuration - cfg.RenewDeadline; margin < cfg.RetryPeriod {
		log.Info("LeaseDuration − RenewDeadline is shorter than RetryPeriod; the leader's work has little time to stop before others may take over", "severity", "warning",
			"margin", margin.String(), "retryPeriod", cfg.RetryPeriod.String())
	}
	e := &Elector{
		cfg:      cfg,
		clk:      cfg.Clock,
		log:      log,
		identity: lease.Identity(),
		notify:   &notifier{fn: cfg.Callbacks.OnNewLeader},
	}
	e.lease = lease
	if p := candidacy.NewPort(lease, cfg.Clock, e.identity, cfg.Priority, cfg.stands(),
		cfg.staleAfter(), cfg.liveWindow(), cfg.RetryPeriod/2); p != nil {
		e.cport, e.lease = p, p
	}
	e.k = rvnlease.New(rvnlease.Settings[*term]{
		Clock: cfg.Clock, Identity: e.identity, RequestTimeout: cfg.RequestTimeout, Validity: cfg.termValidity(),
		Log: log, Observe: e.observeRequest, Watches: 1, Failing: cfg.Metrics.Failing,
		RenewEvery: cfg.RetryPeriod, RenewWorkers: 1, RenewLoop: "renewal",
		HoldOf: func(t *term) *rvnlease.Hold { return t.hold }, Expire: (*term).expired, TracerProvider: cfg.TracerProvider,
	})
	return e, nil
}

// Identity returns this candidate's identity.
func (e *Elector) Identity() string { return e.identity }

// IsLeader reports whether this candidate leads now: a term is in force and
// the clock has not reached its ValidUntil. It turns false at that instant
// by itself, whatever the election loop is doing.
//
// IsLeader does not make acting on its answer safe: a process that pauses
// between the check and the action may act after the term ended. Only
// fencing by the resource itself closes that gap.
func (e *Elector) IsLeader() bool {
	t := e.term()
	return t != nil && t.valid()
}

// ValidUntil returns, on this Elector's clock, the time until which the
// current term is valid, or the zero time when not leading. It moves later
// with each confirmed renewal.
func (e *Elector) ValidUntil() time.Time {
	t := e.term()
	if t == nil || !t.valid() {
		return time.Time{}
	}
	return t.until()
}

// Token returns the current term's fencing token, or 0 when not leading or
// without Config.Fencing. It is the same for the whole term and larger
// than the token of every earlier term of the lease, whoever led it.
func (e *Elector) Token() int64 {
	t := e.term()
	if t == nil || !t.valid() {
		return 0
	}
	return t.token
}

// Guard runs w, a guarded write of the caller's own (dynamodbstore's
// Store.Writes makes one of DynamoDB items), with this term's holding: the
// store commits w's writes, all or nothing, together with a check that
// the lease record still shows this term's acquisition, so a leader that
// lost its term (paused, partitioned) cannot commit anything. It refuses
// at once, with an error matching dynalease.ErrLost, when not leading; a
// refusal by the server matches both dynalease.ErrLost and
// resourcelock.ErrGuardLost, and ends the term. Its other errors are w's
// (see dynamodbstore.Store.Guard).
func (e *Elector) Guard(ctx context.Context, w resourcelock.Guarded) error {
	if w == nil {
		return &dynalease.InvalidError{Field: "Guard", Reason: "the guarded write is nil (dynamodbstore's Store.Writes makes one)"}
	}
	t := e.term()
	if t == nil || !t.valid() {
		return lostLeadership(fmt.Errorf("%s: not leading", e.lease.Describe()))
	}
	started := e.clk.Now()
	err := w(ctx, t.holding)
	e.observeRequest("guard", err, e.clk.Since(started))
	e.cfg.Metrics.GuardedWrite(rvnlease.GuardOutcome(err))
	if errors.Is(err, resourcelock.ErrGuardLost) {
		// Verified by the server: the record shows another acquisition.
		lost := t.hold.Lost(context.WithoutCancel(ctx), e.lease.Describe(), err)
		t.end(lost)
		return lostLeadership(lost)
	}
	return err
}

// Leader returns the identity of the holder last observed, this candidate
// included, or "" when the record was last seen missing or released. It
// names this candidate only while one of its terms is in force: once the
// term has ended (or its validity passed, whatever the election loop is
// doing) it returns "" until another holder is observed.
func (e *Elector) Leader() string {
	e.mu.Lock()
	leader, t := e.leader, e.current
	e.mu.Unlock()
	if leader == e.identity && (t == nil || !t.valid()) {
		return ""
	}
	return leader
}

// Check is a health check. It returns an error when a term of this Elector
// ended (or its validity passed) more than maxTolerableExpiredLease ago and
// OnStartedLeading has still not returned: the leader's work is running
// without leadership, or the election loop is stuck. It returns nil
// otherwise, including for candidates that are not leading.
func (e *Elector) Check(maxTolerableExpiredLease time.Duration) error {
	t := e.term()
	if t == nil || t.workReturned() {
		return nil
	}
	if over := e.clk.Now().Sub(t.until()); over > maxTolerableExpiredLease {
		return fmt.Errorf("election: %s: leadership ended %v ago but the leader's work has not returned", e.lease.Describe(), over)
	}
	return nil
}

// CheckStore is a readiness check. It returns an error, wrapping the
// failure, when the election loop has kept failing to read or write its
// record for more than tolerance (see LastError): the candidate cannot take
// part in the election (a missing table, no network, denied access). It
// returns nil while requests succeed or have failed for less than
// tolerance. Whether this candidate leads plays no part.
func (e *Elector) CheckStore(tolerance time.Duration) error {
	err, since := e.LastError()
	if err == nil {
		return nil
	}
	if d := e.clk.Since(since); d > tolerance {
		return fmt.Errorf("election: %s: requests to the lock failing for %v: %w", e.lease.Describe(), d.Round(time.Millisecond), err)
	}
	return nil
}

func (e *Elector) term() *term {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current
}

// LastError returns the failure the election loop keeps meeting (a
// request to the lock that failed and is being retried: throttling, a
// timeout, a refused connection), and since when, on this Elector's clock;
// nil and the zero time once a request succeeds again. A health check or
// an alert uses it to tell "cannot reach the lock" from "another candidate
// leads". Errors that end Run are returned by Run, and also kept here.
func (e *Elector) LastError() (err error, since time.Time) {
	return e.k.LastFailure()
}

// observeRequest reports one request to the lock to the metrics.
func (e *Elector) observeRequest(op string, err error, d time.Duration) {
	e.cfg.Metrics.Request(op, metrics.RequestOutcome(err), d)
}

// noteError records the outcome of a round: err nil clears the last error.
func (e *Elector) noteError(err error) { e.k.Note("", err) }

// forgetSelfAsLeader stops naming this candidate as the leader once its
// term has ended: who leads now is unknown until the next observation.
func (e *Elector) forgetSelfAsLeader() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader == e.identity {
		e.leader = ""
	}
}

// setLeader records the observed holder and reports a change to
// OnNewLeader.
func (e *Elector) setLeader(holder string) {
	e.mu.Lock()
	changed := holder != e.leader
	e.leader = holder
	e.mu.Unlock()
	if changed && holder != "" {
		e.cfg.Metrics.LeaderChanged()
		e.log.V(1).Info("new leader observed", "leader", holder)
		e.notify.report(holder)
	}
}

// Run stands for election until this candidate has led one term and the
// term has ended, or until ctx is done.
//
// It returns ctx's error when ctx ended the Run, whether or not a term had
// started; an error matching dynalease.ErrLost when a term ended without
// being asked to (no renewal confirmed in time, or the record was taken,
// released or deleted by someone else), or ended before its work could
// start (see Callbacks); an error matching ErrHandedOver when the term
// ended by handing the lease to another candidate (a live candidate of
// higher priority, or Elector.HandOver); and nil when OnStartedLeading
// returned by itself. In every case Run returns only after OnStartedLeading
// has returned. Run may then be called again to stand again; concurrent
// Runs of one Elector are refused (an error matching dynalease.ErrInvalid).
func (e *Elector) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return &dynalease.InvalidError{Field: "Run", Reason: "another Run of this Elector has not returned"}
	}
	e.running = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}()

	if e.cport != nil {
		// Whatever ends the Run, the entry goes: a Run that stands again
		// writes it again at its first poll.
		defer func() {
			if err := e.cport.Withdraw(ctx, e.cfg.RequestTimeout); err != nil {
				e.log.Info("could not withdraw the candidate's entry; it stops counting as live", "error", err.Error())
			}
		}()
	}
	r := newRun(e)
	// Step 1: campaign until this Run holds the record. A term whose
	// validity passed meanwhile ends at once, on the kernel's timer.
	sent, err := r.campaign(ctx)
	if err != nil {
		return err
	}
	// Step 2: lead until the term ends.
	return r.lead(ctx, sent)
}
