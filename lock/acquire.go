package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/readlease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Acquire takes the lock on key, waiting while another holder holds it.
//
// A missing row is created at once, and a free one (released, nobody
// queued) taken at once, as is this client's own row kept for its stint
// (see the package doc: Stints); a row kept for another's stint is the
// queue's, and waited for as a held one. A
// row held by another holder is waited for: with fair waiting (the
// default, see the package doc) the call joins the row's queue and reads
// at a pace set by its place, every refresh period at the head, and takes
// the lock when it is handed to it; without, it polls every refresh
// period. Either way it is taken
// over, with a write conditioned on its RVN, once that RVN has stayed
// unchanged for the holder's lease as measured on this client's clock from
// the read that first returned it. Acquire gives up with an error matching
// ErrLocked when the lock is still held after the holder's lease plus
// WithAdditionalWait (waiting fairly: after the lock has stayed with one
// holder that long, while the queue moves it waits on), and with ctx's
// error when ctx ends first; it then leaves the queue. A takeover
// that fails for a reason waiting may fix (throttled, timed out) is tried
// again a poll later, past that budget if need be, until such failures
// have lasted the client's lease plus WithAdditionalWait; Acquire then
// gives up with the failure, which does not match ErrLocked. Requests that
// fail while nothing is learned give up after the same budget. With
// fencing tokens, a row that was written but could not be fenced is
// released at once and tried again a poll later, within the same budget
// (TryAcquire returns the failure).
//
// An Acquire of a key this client already holds waits in process for that
// lock's release (or, with WithReentrant, returns it with its hold count
// raised).
func (c *Client) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, false)
}

// TryAcquire takes the lock on key if it can without waiting: when the row
// is missing or free, or kept for this client's stint, or when this client
// has already watched the holder's RVN unchanged for the holder's lease (in
// earlier Acquire or TryAcquire calls). Otherwise it returns an error
// matching ErrLocked, having noted the holder's RVN for a later call. It
// never joins the queue.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, true)
}

func (c *Client) acquire(ctx context.Context, key string, opts []AcquireOption, try bool) (*Lock, error) {
	a, k, err := c.acquireConfig(key, opts)
	if err != nil {
		return nil, err
	}
	if a.upgradeable {
		return nil, invalid("WithUpgradeable", "only AcquireShared takes it")
	}
	return c.acquireTarget(ctx, target{key: k}, a, try)
}

// target is what one Acquire takes: one key, or a set of keys (set). Its
// claims are this client's on its keys, once taken.
type target struct {
	key     resourcelock.Key   // the key, or the set's name
	claim   *claim             // one key's claim
	set     *setHold           // a set's rows and claims
	permit  bool               // the key is a semaphore's slot
	shared  *readlease.Reader  // a shared hold of the key
	upgrade *readlease.Upgrade // a shared hold's upgrade to the writer
	// abandoning is called when the wait gives up with writes in doubt,
	// before they are released (rvnlease.Place.Abandoning).
	abandoning func()
}

// kind is a lock's kind: one key, a set of keys, a semaphore's permit.
type kind uint8

const (
	kindLock kind = iota
	kindSet
	kindPermit
	kindShared
)

// String names the kind for the metrics.
func (k kind) String() string {
	return [...]string{metrics.KindLock, metrics.KindSet, metrics.KindPermit, metrics.KindShared}[k]
}

// claimKey returns the key of t's claim in this client, and of the
// kernel's watch: its key, or a shared hold's own (sharedKey).
func (t target) claimKey() resourcelock.Key {
	if t.shared != nil {
		return sharedKey(t.key, t.shared)
	}
	return t.key
}

// kind returns t's kind of lock.
func (t target) kind() kind {
	switch {
	case t.set != nil:
		return kindSet
	case t.permit:
		return kindPermit
	case t.shared != nil:
		return kindShared
	}
	return kindLock
}

// acquireTarget takes t: its claims in this client, then the lease, through
// the kernel's one wait loop, in the acquisition's span.
func (c *Client) acquireTarget(ctx context.Context, t target, a acquireConfig, try bool) (*Lock, error) {
	k := t.kind().String()
	c.cfg.waits.Waiting(k, 1)
	defer c.cfg.waits.Waiting(k, -1)
	ctx, sp := c.startAcquire(ctx, t.kind(), t.key, try, 0)
	l, err := c.takeTarget(ctx, t, a, try, sp)
	sp.end(c, l, err)
	return l, err
}

func (c *Client) takeTarget(ctx context.Context, t target, a acquireConfig, try bool, sp acquireSpan) (*Lock, error) {
	if try {
		a.failIfLocked = true
	}
	ctx, cancel := c.closable(ctx)
	defer cancel()
	if t.set != nil {
		if err := c.claimSet(ctx, t.set, a); err != nil {
			return nil, closedOr(ctx, err)
		}
		t.claim = t.set.claims[0]
	} else if t.upgrade != nil {
		s, err := c.claimAhead(t.claimKey())
		if err != nil {
			return nil, err
		}
		t.claim = s
	} else {
		s, held, err := c.claim(ctx, t.claimKey(), a)
		if err != nil || held != nil {
			return held, closedOr(ctx, err)
		}
		t.claim = s
	}
	start := c.clk.Now()
	place := rvnlease.Place{Key: t.claimKey(), Lease: c.acquireLease(t, &a), NewRecord: c.newRecord(&a),
		Fair: c.cfg.fair && a.below == nil, LeaseDuration: c.cfg.lease, Abandoning: t.abandoning}
	if t.set == nil {
		place.Stint = c.cfg.stint // sets have none
	}
	if a.below != nil {
		place.Admit = belowAdmits(a.below)
	}
	if a.numbers != nil || a.below != nil {
		plain := a
		plain.numbers, plain.below = nil, nil
		place.Plain = c.acquireLease(t, &plain)
	}
	r := c.request(a, try, t.key.String())
	r.Unremembered = t.shared != nil
	r.Span = sp.Acquisition
	r.Places = []rvnlease.Place{place}
	won, err := c.k.Acquire(ctx, r)
	if err != nil {
		c.unclaimTarget(t)
		return nil, closedOr(ctx, acquireError(ctx, t.key.String(), err))
	}
	return c.handOut(ctx, t, a, won, start)
}

// request returns the kernel's request for one call with a's settings,
// without its places; failKey names the call in the client's failing
// report.
func (c *Client) request(a acquireConfig, try bool, failKey string) rvnlease.Request {
	return rvnlease.Request{
		OnlyIfExists: a.onlyIfExists,
		Period:       a.refresh,
		Budget:       rvnlease.Budget{Extra: a.additionalWait, OwnLease: c.cfg.lease},
		Try:          try,
		Fence:        c.cfg.fencing,
		FailKey:      failKey,
		Loop:         "acquire",
	}
}

// handOut makes the lock of t from the wait's win, started at start, and
// hands it out: its claims owned, its heartbeats scheduled. A client
// closed meanwhile releases it (best effort) and returns ErrClosed.
func (c *Client) handOut(ctx context.Context, t target, a acquireConfig, won rvnlease.Won, start time.Time) (*Lock, error) {
	l := newLock(c, t, a, won)
	l.countAcquired(c.clk.Since(start))
	c.mu.Lock()
	closed := c.closed
	if !closed {
		t.own(l)
	}
	c.mu.Unlock()
	if closed {
		_ = l.release(context.WithoutCancel(ctx), releaseConfig{ended: errClosedRelease})
		return nil, ErrClosed
	}
	if c.k.Renews() {
		l.mu.Lock()
		sent := l.hold.Sent()
		l.mu.Unlock()
		// The first heartbeat is due a random part of the period early, so
		// that locks taken together spread out.
		c.k.RenewAfter(background{l}, sent)
	}
	if log := c.log.V(1); log.Enabled() {
		log.Info("acquired", "key", t.key.String(), "rvn", l.rvn())
	}
	return l, nil
}

// closable returns ctx, also ended (with ErrClosed as its cause) when the
// client is closed: Close ends the calls still waiting.
func (c *Client) closable(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.closing, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// closedOr returns ErrClosed for a call that ended because the client was
// closed, and err otherwise.
func closedOr(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return err
}

// acquireError returns the error of a wait for what (a key, a set) that
// ended without the lock: ErrLocked when it found the lock held, ctx's
// error when ctx ended it, and the wait's failure otherwise.
func acquireError(ctx context.Context, what string, err error) error {
	var held *rvnlease.HeldError
	switch {
	case errors.As(err, &held):
		return fmt.Errorf("%w: %q %w", ErrLocked, what, held)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	return fmt.Errorf("lock %q: %w", what, err)
}

// newRecord returns the record of an acquiring write with a's data, or of
// the renewal of a row of ours confirmed late or left by an earlier call
// (cur): its attributes are the port's.
func (c *Client) newRecord(a *acquireConfig) func(cur rows.Item) resourcelock.Record {
	return func(cur rows.Item) resourcelock.Record {
		rec := c.record(cur, false)
		rec.Data = a.data
		return rec
	}
}
