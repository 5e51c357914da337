package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Acquire takes the lock on key, waiting while another owner holds it.
//
// A missing row is created at once and a released one taken at once. A
// row held by another owner is waited for: with fair waiting (the
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
// fail while nothing is learned give up after the same budget.
//
// An Acquire of a key this client already holds waits in process for that
// lock's release (or, with WithReentrant, returns it with its hold count
// raised).
func (c *Client) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, false)
}

// TryAcquire takes the lock on key if it can without waiting: when the row
// is missing or released, or when this client has already watched the
// holder's RVN unchanged for the holder's lease (in earlier Acquire or
// TryAcquire calls). Otherwise it returns an error matching ErrLocked,
// having noted the holder's RVN for a later call. Like an Acquire with
// WithFailIfLocked, it never joins the queue.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, true)
}

func (c *Client) acquire(ctx context.Context, key string, opts []AcquireOption, try bool) (*Lock, error) {
	a, k, err := c.acquireConfig(key, opts)
	if err != nil {
		return nil, err
	}
	return c.acquireTarget(ctx, target{key: k}, a, try)
}

// target is what one Acquire takes: one key, or a set of keys (set). Its
// slots are this client's claims on its keys, once taken.
type target struct {
	key    resourcelock.Key // the key, or the set's name
	slot   *slot            // one key's slot
	set    *setHold         // a set's rows and slots
	permit bool             // the key is a semaphore's slot
}

// acquireTarget takes t: its slots in this client, then the lease.
func (c *Client) acquireTarget(ctx context.Context, t target, a acquireConfig, try bool) (*Lock, error) {
	if try {
		a.failIfLocked = true
	}
	k := t.key
	// Close ends the call as ctx would, and it then returns ErrClosed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.closing, func() { cancel(ErrClosed) })
	defer stop()
	if t.set != nil {
		if err := c.claimSet(ctx, t.set, a); err != nil {
			return nil, closedOr(ctx, err)
		}
		t.slot = t.set.slots[0]
	} else {
		s, held, err := c.claim(ctx, k, a)
		if err != nil || held != nil {
			return held, closedOr(ctx, err)
		}
		t.slot = s
	}
	at := &acquireCall{c: c, key: k, cfg: a, try: try, target: t}
	l, err := at.run(ctx)
	c.failing.Forget(k.String()) // nothing retries for this call any more
	at.remember(ctx, l != nil)
	if err != nil {
		c.unclaimTarget(t)
		return nil, closedOr(ctx, err)
	}
	l.countAcquired(c.clk.Since(at.start))
	c.mu.Lock()
	closed := c.closed
	if !closed {
		t.own(l)
	}
	c.mu.Unlock()
	if closed {
		_ = l.release(context.WithoutCancel(ctx), releaseConfig{})
		return nil, ErrClosed
	}
	if c.sched != nil {
		l.mu.Lock()
		sent := l.sent
		l.mu.Unlock()
		// The first heartbeat is due a random part of the period early, so
		// that locks taken together spread out.
		c.sched.Add(background{l}, sent.Add(clockutil.Spread(c.cfg.heartbeat)))
	}
	c.log.V(1).Info("acquired", "key", k.String(), "rvn", l.RVN())
	return l, nil
}

// closedOr returns ErrClosed for a call that ended because the client was
// closed, and err otherwise.
func closedOr(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return err
}

// acquireCall is one Acquire's work on the remote row: the engine's acquirer
// plus what is the lock client's own, the wait budget and try. Only its
// goroutine touches it.
//
// Invariants: acq.Obs is what this client has watched of another owner's
// row, shared with later calls through the client's observation cache;
// deadline is when this call gives up, set once a holder is seen (or, when
// no answer ever came, from the start and this client's own lease).
type acquireCall struct {
	c      *Client
	key    resourcelock.Key
	cfg    acquireConfig
	try    bool
	target target
	start  time.Time
	acq    *rvnlease.Acquirer

	deadline     time.Time // give up after this; zero until a holder is seen
	budgetFrom   time.Time // when this call first found the lock held (fair: held by budgetHolder)
	budgetHolder string
	lastErr      error     // the last failure of a round, nil after a round without one
	failingSince time.Time // when the rounds started failing; zero with lastErr nil
}

func (at *acquireCall) run(ctx context.Context) (*Lock, error) {
	c := at.c
	at.start = c.clk.Now()
	port := acquirePort{c: c, key: at.key, cfg: &at.cfg}
	if at.target.set != nil {
		port.set = at.target.set.rows
	}
	at.acq = rvnlease.NewAcquirer(c.engineFor(at.cfg.onlyIfExists), port, at.newRecord)
	if c.cfg.fair && !at.try && !at.cfg.failIfLocked {
		at.acq.Queue(port, c.cfg.lease, at.cfg.refresh)
	}
	obs, doubt, _ := c.seen.get(at.key)
	at.acq.Resume(obs, doubt)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := at.acq.Round(ctx)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("lock %q: %w", at.key, err)
		}
		if res.Outcome == rvnlease.Ours {
			if c.cfg.fencing {
				if res, err = at.acq.Fence(ctx, res); err != nil {
					return nil, fmt.Errorf("lock %q: %w", at.key, err)
				}
			}
			return newLock(c, at.target, at.cfg, res.Item, res.Sent), nil
		}
		obs := at.acq.Obs
		now := c.clk.Now()
		if err := at.noteError(res, now); err != nil {
			return nil, err
		}
		held := obs.Known && !obs.Free()
		// A lease that may be taken over now is taken over, whatever the
		// budget: the budget ends at the holder's expiry by default, and a
		// poll that straddles it must not give up on a lock it may take.
		due := at.acq.TakeoverDue()
		switch {
		case held:
			at.extendDeadline(obs)
			if at.cfg.failIfLocked {
				return nil, at.lockedError(obs, res.Err)
			}
		case at.try && res.Outcome == rvnlease.Others:
			// Free, but someone else was faster.
			return nil, fmt.Errorf("%w: %q was taken meanwhile", ErrLocked, at.key)
		case at.deadline.IsZero() && at.lastErr != nil:
			// No answer has named a holder yet: the budget a holder with
			// this client's own lease would get.
			at.deadline = at.start.Add(clockutil.Add(c.cfg.lease, at.cfg.additionalWait))
		}
		until := at.deadline
		if graceEnd := at.graceEnd(obs, now); graceEnd.After(until) {
			until = graceEnd
		}
		if !until.IsZero() && !now.Before(until) && !due {
			if err := at.giveUp(now, held, obs); err != nil {
				return nil, err
			}
		}
		wait := at.acq.Wait(at.cfg.refresh)
		if !until.IsZero() && !due {
			if d := until.Sub(now); d < wait {
				wait = max(d, 0)
			}
		}
		if err := at.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// graceEnd returns how long a failing takeover may still be retried: when
// the watched lease has run out (it may be taken over) but the last round
// failed for a transient reason (a takeover throttled, timed out), the
// budget no longer measures a live holder but a failing table, and the
// call keeps trying, a poll apart, until the failures have lasted as long
// as the budget a call gets when no answer comes at all. The zero time
// otherwise.
func (at *acquireCall) graceEnd(obs rvnlease.Observation, now time.Time) time.Time {
	if at.lastErr == nil || !(obs.Expired(now) || at.acq.Handed()) {
		return time.Time{}
	}
	return at.failingSince.Add(clockutil.Add(at.c.cfg.lease, at.cfg.additionalWait))
}

// giveUp returns the error of an Acquire whose budget has run out: the
// lock still held (with the last failure, if the rounds since failed), a
// takeover that kept failing, or the last failure when the rounds learned
// nothing. It returns nil when the row was last seen free and the last
// round failed nothing: the next round creates it.
func (at *acquireCall) giveUp(now time.Time, held bool, obs rvnlease.Observation) error {
	waited := now.Sub(at.start)
	switch {
	case held && at.lastErr != nil && at.acq.Handed():
		return fmt.Errorf("lock %q: it was handed to this client but confirming it kept failing for %v: %w",
			at.key, now.Sub(at.failingSince), at.lastErr)
	case held && at.lastErr != nil && obs.Expired(now):
		return fmt.Errorf("lock %q: the lease of %q ran out but taking the lock over kept failing for %v: %w",
			at.key, obs.Holder, now.Sub(at.failingSince), at.lastErr)
	case held:
		return fmt.Errorf("%w after waiting %v", at.lockedError(obs, at.lastErr), waited)
	case at.lastErr != nil:
		return fmt.Errorf("lock %q: no answer from the lock table after %v: %w", at.key, waited, at.lastErr)
	}
	return nil
}

// lockedError says that the lock is held by obs.Holder, naming the last
// failure of a request when there was one.
func (at *acquireCall) lockedError(obs rvnlease.Observation, last error) error {
	if last != nil {
		return fmt.Errorf("%w: %q is held by %q (and the last request failed: %w)", ErrLocked, at.key, obs.Holder, last)
	}
	return fmt.Errorf("%w: %q is held by %q", ErrLocked, at.key, obs.Holder)
}

// remember keeps what this call learned for later calls on the key: the
// watched row, and its writes still in doubt. A call that gives up with
// writes in doubt first releases the row one of them may have left (an
// orphan naming this client that nobody holds), within one request
// timeout; if that fails, a later call recognises the row as this
// client's.
func (at *acquireCall) remember(ctx context.Context, acquired bool) {
	c := at.c
	if at.acq == nil {
		return
	}
	if acquired {
		if pace := at.acq.Obs.Pace; pace > 0 {
			// Only the queue's pace outlives an acquisition, for the
			// next wait on the key.
			c.seen.put(at.key, rvnlease.Observation{Pace: pace}, rvnlease.Attempts{})
		} else {
			c.seen.forget(at.key)
		}
		return
	}
	at.acq.LeaveQueue(ctx)
	if at.acq.Pending() > 0 && at.acq.Abandon(ctx) > 0 {
		c.seen.forget(at.key)
		return
	}
	if at.acq.Obs.Known || at.acq.Pending() > 0 {
		c.seen.put(at.key, at.acq.Obs, at.acq.InDoubt())
	}
}

// noteError keeps the failure of a round (see rvnlease.Result.Err: a
// round whose read succeeded may still have failed to write), and since
// when the rounds have failed, for the client's failing report and the
// error that ends the call. TryAcquire returns a failure at once, unless
// the round showed the lock held (and not yet takeable): then it is
// locked, with the failure named.
func (at *acquireCall) noteError(res rvnlease.Result, now time.Time) error {
	at.c.failing.Note(at.key.String(), res.Err)
	if res.Err == nil {
		at.lastErr, at.failingSince = nil, time.Time{}
		return nil
	}
	if at.lastErr == nil {
		at.failingSince = now
	}
	at.lastErr = res.Err
	if obs := at.acq.Obs; at.try && !(obs.Known && !obs.Free() && !obs.Expired(now)) {
		return fmt.Errorf("lock %q: %w", at.key, res.Err)
	}
	return nil
}

// extendDeadline sets the wait budget when this call first finds the lock
// held: the holder's lease, counted from when its RVN was first seen (but
// not before this call started), plus the additional wait (and, behind the
// queue's head, the yield to the head). Renewals by the holder do not
// extend it; a later holder with a longer lease does, from the same
// starting point. A fair waiter with a place in the queue counts from the
// last time the lock changed hands instead: while the queue moves, it keeps
// its place. (One without a place, say a set whose first key is free
// while another is held, counts as an unfair one: holders changing
// elsewhere are no progress of its own.)
func (at *acquireCall) extendDeadline(obs rvnlease.Observation) {
	if at.budgetFrom.IsZero() || (at.acq.Fair() && at.acq.Place() >= 0 && obs.Holder != at.budgetHolder) {
		at.budgetFrom, at.budgetHolder = obs.SeenAt, obs.Holder
		if at.budgetFrom.Before(at.start) {
			at.budgetFrom = at.start
		}
	}
	if d := at.budgetFrom.Add(clockutil.Add(obs.Lease, at.cfg.additionalWait, at.acq.Yield())); d.After(at.deadline) {
		at.deadline = d
	}
}

func (at *acquireCall) sleep(ctx context.Context, d time.Duration) error {
	return clockutil.Sleep(ctx, at.c.clk, d, "acquire")
}

// newRecord returns the record of an acquiring write, or of the renewal of
// a row of ours confirmed late or left by an earlier call (cur): either way
// with this call's data (its attributes are the port's).
func (at *acquireCall) newRecord(cur resourcelock.Item) resourcelock.Record {
	rec := at.c.record(cur, false)
	rec.Data = at.cfg.data
	return rec
}
