package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Heartbeat renews the lock now, with a fresh RVN, conditioned on this
// identity and the lock's current RVN, keeping its data. It returns nil
// once the renewal is confirmed, a *dynalease.LostError when the lock turns
// out lost, ErrNotHeld after Release, and otherwise the error of a renewal
// that could not be confirmed (the lock stays held until its validity runs
// out, unless a later heartbeat is confirmed).
func (l *Lock) Heartbeat(ctx context.Context) error {
	return l.heartbeat(ctx, heartbeatConfig{})
}

// SetData is a Heartbeat that also replaces the lock's data with data
// (nil or empty removes it), in the same write; it returns as Heartbeat
// does, and Data returns data once it returns nil. Data over the store's
// limit is refused (an error matching dynalease.ErrInvalid) without a
// request.
func (l *Lock) SetData(ctx context.Context, data []byte) error {
	if err := checkData("data", data); err != nil {
		return err
	}
	if l.kind == kindShared {
		return invalid("SetData", "a shared lock writes no data: the row's data is its writer's")
	}
	return l.heartbeat(ctx, heartbeatConfig{data: data, setData: true})
}

// heartbeat writes one renewal through the kernel's hold, which settles every
// failure (a conditional one included: the SDK may have retried an attempt
// that had landed) by the row the failure carries or a read.
func (l *Lock) heartbeat(ctx context.Context, h heartbeatConfig) error {
	if err := l.startWrite(ctx); err != nil {
		return fmt.Errorf("lock %q: heartbeat not sent: %w", l.lease.Key(), err)
	}
	defer l.endWrite()

	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	cur := l.itemLocked()
	l.mu.Unlock()

	next := func(cur rows.Item) resourcelock.Record {
		rec := l.c.record(cur, false)
		if h.setData {
			rec.Data = h.data
		}
		return rec
	}
	started := l.c.clk.Now()
	w := l.hold.WriteOwn(ctx, cur, next, l.confirmEarlier)
	d := l.c.clk.Since(started)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.cfg.metrics.Heartbeat(w.Outcome(), d)
	switch {
	case w.Landed:
		l.c.k.Note(l.lease.Key().String(), nil)
		if !l.confirmLocked(w.Item, w.Sent) {
			return l.errLocked()
		}
		return nil
	case w.Lost:
		lost := l.setLoss(w.Loss(l.lease.Key().String()))
		if l.upgradedLocked(w.Item) {
			l.endUpgradedLocked()
			return l.errLocked()
		}
		l.loseLocked(lost)
		return l.errLocked()
	default:
		l.c.k.Note(l.lease.Key().String(), w.Err)
		l.extrasLocked().lastErr = w.Err
		return fmt.Errorf("lock %q: heartbeat not confirmed: %w", l.lease.Key(), w.Err)
	}
}

// confirmEarlier records an earlier write of this lock, found landed by a
// later one (see rvnlease.Hold.WriteOwn), and reports whether the lock
// is still held.
func (l *Lock) confirmEarlier(w rvnlease.Written) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.confirmLocked(w.Item, w.Sent)
}

// heldLocked returns nil while the lock is held, or why it is not. A lock
// whose validity has run out is ended here if its timer has not done so.
func (l *Lock) heldLocked() error {
	l.expireIfPassedLocked()
	switch {
	case l.errLocked() == nil:
		return nil
	case errors.Is(l.errLocked(), ErrNotHeld):
		return fmt.Errorf("%q was released: %w", l.lease.Key(), l.errLocked()) // ErrNotHeld, and ErrClosed after Close
	default:
		return l.errLocked()
	}
}

// record returns the record of a new write by this client over cur: a
// fresh RVN, this client's identity and lease, cur's data and acquire time.
func (c *Client) record(cur rows.Item, released bool) resourcelock.Record {
	now := c.clk.Now()
	acquired := cur.AcquireTime
	if acquired.IsZero() {
		acquired = now
	}
	return resourcelock.Record{
		HolderIdentity: c.cfg.identity,
		RVN:            uuid.NewString(),
		LeaseDuration:  c.cfg.lease,
		Released:       released,
		AcquireTime:    acquired,
		RenewTime:      now,
		Data:           cur.Data,
	}
}

// heartbeatConfig is what one heartbeat writes beyond a renewal.
type heartbeatConfig struct {
	data    []byte
	setData bool
}
