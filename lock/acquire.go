package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/clockutil"
	rvnlease "github.com/dynalease/dynalease/internal/lease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Acquire takes the lock on key, waiting while another owner holds it.
//
// A missing row is created at once and a released one taken at once. A
// row held by another owner is polled every refresh period; it is taken
// over, with a write conditioned on its RVN, once that RVN has stayed
// unchanged for the holder's lease as measured on this client's clock from
// the read that first returned it. Acquire gives up with an error matching
// ErrLocked when the lock is still held after the holder's lease plus
// WithAdditionalWait, and with ctx's error when ctx ends first.
//
// An Acquire of a key this client already holds waits in process for that
// lock's release (or, with Reentrant, returns it with its hold count
// raised).
func (c *Client) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, false)
}

// TryAcquire takes the lock on key if it can without waiting: when the row
// is missing or released, or when this client has already watched the
// holder's RVN unchanged for the holder's lease (in earlier Acquire or
// TryAcquire calls). Otherwise it returns an error matching ErrLocked,
// having noted the holder's RVN for a later call.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, key, opts, true)
}

func (c *Client) acquire(ctx context.Context, key string, opts []AcquireOption, try bool) (*Lock, error) {
	a, k, err := c.acquireConfig(key, opts)
	if err != nil {
		return nil, err
	}
	if try {
		a.failIfLocked = true
	}
	s, held, err := c.claim(ctx, k, a)
	if err != nil || held != nil {
		return held, err
	}
	l, err := (&attempt{c: c, key: k, cfg: a, try: try, slot: s}).run(ctx)
	if err != nil {
		c.unclaim(k, s)
		return nil, err
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		s.lock = l
	}
	c.mu.Unlock()
	if closed {
		_ = l.release(context.WithoutCancel(ctx), releaseConfig{})
		return nil, ErrClosed
	}
	if c.sched != nil {
		c.sched.add(l)
	}
	c.log.V(1).Info("acquired", "key", k.String(), "rvn", l.RVN())
	return l, nil
}

// attempt is one Acquire's work on the remote row. Only its goroutine
// touches it.
//
// Invariants: triedRVN is the RVN the last takeover was conditioned on;
// pending holds every RVN this Acquire tried to write, with
// its send time; mine, when set, is an RVN of ours confirmed in the row
// whose validity had already run out (a write whose answer was lost), to be
// renewed before the lock is handed out; obs is what this client has
// watched of another owner's row, shared with later calls through the
// client's observation cache.
type attempt struct {
	c     *Client
	key   resourcelock.Key
	cfg   acquireConfig
	try   bool
	slot  *slot
	start time.Time

	pending    rvnlease.Attempts
	mine       resourcelock.Item
	obs        rvnlease.Observation
	deadline   time.Time // give up after this; zero until a holder is seen
	budgetFrom time.Time // when this call first found the lock held
	triedRVN   string    // the RVN of the last takeover write sent
}

type result int

const (
	resultUnknown result = iota // nothing learned
	resultOurs                  // a write of ours is confirmed
	resultOthers                // the row is someone else's, missing or released
)

func (at *attempt) run(ctx context.Context) (*Lock, error) {
	c := at.c
	at.start = c.clk.Now()
	at.obs, _ = c.seen.get(at.key)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, it, sent, err := at.round(ctx)
		if err != nil {
			return nil, err
		}
		if res == resultOurs {
			if c.clk.Now().Before(sent.Add(c.cfg.validity())) {
				c.seen.forget(at.key)
				if c.cfg.fencing && it.NeedsFence() {
					if it, err = at.fence(ctx, it, sent); err != nil {
						return nil, err
					}
				}
				return newLock(c, at.key, at.slot, at.cfg, it, sent), nil
			}
			at.mine = it // confirmed too late: renew it first
			continue
		}
		if at.obs.Known {
			c.seen.put(at.key, at.obs)
		}
		now := c.clk.Now()
		held := at.obs.Known && !at.obs.Free()
		// A lease that ran out while this round's read was under way (or
		// while this process stalled after it) is not "still held": the
		// next round takes it over at once, whatever the budget. Only once
		// per RVN, so a takeover write that keeps failing waits a poll.
		takeoverDue := held && at.obs.Expired(now) && at.obs.RVN != at.triedRVN
		if held {
			at.extendDeadline()
			if at.cfg.failIfLocked {
				return nil, fmt.Errorf("%w: %q is held by %q", ErrLocked, at.key, at.obs.Holder)
			}
			if !now.Before(at.deadline) && !takeoverDue {
				return nil, fmt.Errorf("%w: %q still held by %q after waiting %v", ErrLocked, at.key, at.obs.Holder, now.Sub(at.start))
			}
		} else if at.try && res == resultOthers {
			// Free, but someone else was faster.
			return nil, fmt.Errorf("%w: %q was taken meanwhile", ErrLocked, at.key)
		}
		wait := clockutil.Jittered(at.cfg.refresh)
		if held {
			if takeoverDue {
				continue
			}
			d := at.obs.Expiry().Sub(now)
			if d > 0 && d < wait {
				wait = d
			}
			if d := at.deadline.Sub(now); d < wait {
				wait = d
			}
		}
		if err := at.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// extendDeadline sets the wait budget when this call first finds the lock
// held: the holder's lease, counted from when its RVN was first seen (but
// not before this call started), plus the additional wait. Renewals by the
// holder do not extend it; a later holder with a longer lease does, from
// the same starting point.
func (at *attempt) extendDeadline() {
	if at.budgetFrom.IsZero() {
		at.budgetFrom = at.obs.SeenAt
		if at.budgetFrom.Before(at.start) {
			at.budgetFrom = at.start
		}
	}
	if d := at.budgetFrom.Add(at.obs.Lease + at.cfg.additionalWait); d.After(at.deadline) {
		at.deadline = d
	}
}

func (at *attempt) sleep(ctx context.Context, d time.Duration) error {
	return clockutil.SleepObserved(ctx, at.c.clk, d, func() { at.c.idle("acquire") })
}

// round makes one attempt: renew a late-confirmed row of ours, create a
// missing or released row, take over an expired one, or read the row (and
// create it at once if it turns out free).
func (at *attempt) round(ctx context.Context) (res result, it resourcelock.Item, sent time.Time, err error) {
	c := at.c
	switch {
	case at.mine.RVN != "":
		expect := resourcelock.Precondition{RVN: at.mine.RVN, Owner: c.cfg.owner}
		res, it, sent, err = at.write(ctx, c.record(at.mine, false), func(rc context.Context, rec resourcelock.Record, o resourcelock.WriteOptions) (resourcelock.Item, error) {
			return c.store.Update(rc, at.key, expect, rec, o)
		})
		at.mine = resourcelock.Item{}
	case !at.obs.Known || at.obs.Free():
		res, it, sent, err = at.create(ctx)
	case at.obs.Expired(c.clk.Now()):
		at.triedRVN = at.obs.RVN
		expect := resourcelock.Precondition{RVN: at.obs.RVN}
		res, it, sent, err = at.write(ctx, at.newRecord(), func(rc context.Context, rec resourcelock.Record, o resourcelock.WriteOptions) (resourcelock.Item, error) {
			return c.store.Update(rc, at.key, expect, rec, o)
		})
	default:
		res, it, sent, err = at.read(ctx)
		if err == nil && res == resultOthers && at.obs.Free() {
			res, it, sent, err = at.create(ctx)
		}
	}
	return res, it, sent, err
}

// newRecord returns the record of an acquiring write.
func (at *attempt) newRecord() resourcelock.Record {
	rec := at.c.record(resourcelock.Item{}, false)
	rec.Data = at.cfg.data
	return rec
}

func (at *attempt) create(ctx context.Context) (result, resourcelock.Item, time.Time, error) {
	c := at.c
	return at.write(ctx, at.newRecord(), func(rc context.Context, rec resourcelock.Record, o resourcelock.WriteOptions) (resourcelock.Item, error) {
		o.OnlyIfExists = at.cfg.onlyIfExists
		return c.store.Create(rc, at.key, rec, o)
	})
}

type writeFunc func(context.Context, resourcelock.Record, resourcelock.WriteOptions) (resourcelock.Item, error)

// write sends one acquiring write and classifies the answer, resolving a
// failure by reading the row back.
func (at *attempt) write(ctx context.Context, rec resourcelock.Record, send writeFunc) (result, resourcelock.Item, time.Time, error) {
	c := at.c
	o := c.writeOptions(at.cfg.attributes)
	o.KeepData = !at.cfg.replaceData
	sent := c.clk.Now()
	at.pending.Add(rec.RVN, sent)
	rctx, cancel := clockutil.WithTimeout(ctx, c.clk, c.cfg.requestTimeout)
	it, err := send(rctx, rec, o)
	cancel()
	if err == nil {
		return resultOurs, it, sent, nil
	}
	if errors.Is(err, resourcelock.ErrInvalidArgument) || errors.Is(err, resourcelock.ErrTableNotFound) {
		return resultUnknown, it, sent, err
	}
	c.log.V(1).Info("acquiring write failed; reading the row to resolve it", "key", at.key.String(), "error", err.Error())
	return at.read(ctx)
}

// read gets the row and classifies it.
func (at *attempt) read(ctx context.Context) (result, resourcelock.Item, time.Time, error) {
	c := at.c
	rctx, cancel := clockutil.WithTimeout(ctx, c.clk, c.cfg.requestTimeout)
	it, err := c.store.Get(rctx, at.key)
	cancel()
	returned := c.clk.Now()
	switch {
	case errors.Is(err, resourcelock.ErrNotFound):
		if at.cfg.onlyIfExists {
			return resultUnknown, it, time.Time{}, err
		}
		at.obs.Observe(resourcelock.Record{}, true, returned)
		return resultOthers, it, time.Time{}, nil
	case errors.Is(err, resourcelock.ErrTableNotFound), errors.Is(err, resourcelock.ErrInvalidRecord):
		// Waiting cannot help: the table is missing, or its row is not a
		// lock this client can read (for example a leaseDuration written
		// as "20s").
		return resultUnknown, it, time.Time{}, err
	case err != nil:
		if at.try {
			return resultUnknown, it, time.Time{}, err
		}
		c.log.Error(err, "reading a lock failed", "key", at.key.String())
		return resultUnknown, it, time.Time{}, nil
	}
	if sent, ok := at.pending.Sent(it.RVN); ok {
		c.log.V(1).Info("an acquiring write whose answer was lost had landed", "key", at.key.String(), "rvn", it.RVN)
		return resultOurs, it, sent, nil
	}
	at.obs.Observe(it.Record, false, returned)
	return resultOthers, it, time.Time{}, nil
}

// fence gives a freshly acquired row a fencing generation. If that fails,
// the row is released (conditioned on this acquisition) so that nobody
// waits a lease for a lock that was never handed out.
func (at *attempt) fence(ctx context.Context, it resourcelock.Item, sent time.Time) (resourcelock.Item, error) {
	c := at.c
	rctx, cancel := clockutil.WithTimeout(ctx, c.clk, c.cfg.requestTimeout)
	fenced, err := c.store.Fence(rctx, at.key, c.cfg.owner, it.AcquisitionID)
	cancel()
	if err == nil {
		return fenced, nil
	}
	l := newLock(c, at.key, at.slot, at.cfg, it, sent)
	if rerr := l.release(context.WithoutCancel(ctx), releaseConfig{}); rerr != nil && !errors.Is(rerr, ErrLost) {
		c.log.Info("releasing a lock whose fencing failed did not succeed; it will run out", "key", at.key.String(), "error", rerr.Error())
	}
	return resourcelock.Item{}, fmt.Errorf("lock %q: acquired but could not be given a fencing token: %w", at.key, err)
}
