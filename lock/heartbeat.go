package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/resourcelock"
)

// Heartbeat renews the lock now, with a fresh RVN, conditioned on this
// owner and the lock's current RVN; it can also replace or delete the
// lock's data. It returns nil once the renewal is confirmed, a *LostError
// when the lock turns out lost, ErrNotHeld after Release, and otherwise the
// error of a renewal that could not be confirmed (the lock stays held until
// its validity runs out, unless a later heartbeat is confirmed).
func (l *Lock) Heartbeat(ctx context.Context, opts ...HeartbeatOption) error {
	var h heartbeatConfig
	for _, o := range opts {
		o(&h)
	}
	if err := checkData(h.data); err != nil {
		return err
	}
	return l.heartbeat(ctx, h)
}

// heartbeat writes one renewal. Every failure, a conditional failure
// included (the SDK may have retried an attempt that had landed), is
// resolved by reading the row: an RVN this lock attempted means success
// with that attempt's send time.
func (l *Lock) heartbeat(ctx context.Context, h heartbeatConfig) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()

	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	cur := l.item
	rec := l.c.record(cur, false)
	if h.setData {
		rec.Data = h.data
	}
	sent := l.c.clk.Now()
	l.pending.Add(rec.RVN, sent)
	l.mu.Unlock()

	expect := resourcelock.Precondition{RVN: cur.RVN, Owner: l.c.cfg.owner}
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	it, err := l.c.store.Update(rctx, l.key, expect, rec, l.c.writeOptions(nil))
	cancel()
	if err == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.confirmLocked(it, sent) {
			return l.err
		}
		return nil
	}
	return l.resolve(ctx, err)
}

// heldLocked returns nil while the lock is held, or why it is not. A lock
// whose validity has run out is ended here if its timer has not done so.
func (l *Lock) heldLocked() error {
	if !l.ended && !l.c.clk.Now().Before(l.validUntil) {
		l.loseLocked(&LostError{Key: l.key.String(), Reason: Expired, Cause: l.lastErr})
	}
	switch {
	case !l.ended:
		return nil
	case errors.Is(l.err, ErrReleased):
		return fmt.Errorf("%w: %q was released", ErrNotHeld, l.key)
	default:
		return l.err
	}
}

// resolve reads the row after a write of the lock failed with writeErr.
func (l *Lock) resolve(ctx context.Context, writeErr error) error {
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	it, err := l.c.store.Get(rctx, l.key)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && !errors.Is(err, resourcelock.ErrNotFound) {
		l.lastErr = writeErr
		return fmt.Errorf("lock %q: heartbeat not confirmed: %w (and reading it back: %w)", l.key, writeErr, err)
	}
	if err == nil {
		if sent, ok := l.pending.Sent(it.RVN); ok && !it.Released {
			if !l.confirmLocked(it, sent) {
				return l.err
			}
			return nil
		}
		if it.RVN == l.item.RVN && !it.Released {
			l.lastErr = writeErr
			return fmt.Errorf("lock %q: heartbeat did not land: %w", l.key, writeErr)
		}
	}
	l.loseLocked(l.lostTo(it, err != nil))
	return l.err
}

// lostTo describes the loss of the lock to the row it, found missing when
// missing.
func (l *Lock) lostTo(it resourcelock.Item, missing bool) *LostError {
	e := &LostError{Key: l.key.String()}
	switch {
	case missing:
		e.Reason = Deleted
	case it.Released:
		e.Reason, e.Holder = ReleasedElsewhere, it.HolderIdentity
	default:
		e.Reason, e.Holder = Stolen, it.HolderIdentity
	}
	return e
}

// record returns the record of a new write by this client over cur: a
// fresh RVN, this client's owner and lease, cur's data and acquire time.
func (c *Client) record(cur resourcelock.Item, released bool) resourcelock.Record {
	now := c.clk.Now()
	acquired := cur.AcquireTime
	if acquired.IsZero() {
		acquired = now
	}
	return resourcelock.Record{
		HolderIdentity: c.cfg.owner,
		RVN:            uuid.NewString(),
		LeaseDuration:  c.cfg.lease,
		Released:       released,
		AcquireTime:    acquired,
		RenewTime:      now,
		Data:           cur.Data,
	}
}

// writeOptions returns the options of a write: the TTL when enabled (the
// wall-clock time plus the lease plus the slack), and attributes.
func (c *Client) writeOptions(attrs map[string]types.AttributeValue) resourcelock.WriteOptions {
	o := resourcelock.WriteOptions{Attributes: attrs}
	if c.cfg.ttlSlack > 0 {
		o.Expires = time.Now().Add(c.cfg.lease + c.cfg.ttlSlack)
	}
	return o
}
