package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/resourcelock"
)

// Release gives the lock up. For a reentrant lock held more than once it
// only lowers the hold count. Otherwise the lock ends at once (Done closes,
// Err returns ErrReleased, heartbeats stop) and the row is marked released,
// or deleted with WithDeleteOnRelease, by a write conditioned on this owner
// and the lock's RVN, so nobody else's lock is ever touched.
//
// It returns ErrNotHeld for a lock already released, the *LostError of a
// lock lost before (including one found taken over while releasing), and
// the error of a release write that could not be confirmed: the row then
// runs out on its own after a lease.
func (l *Lock) Release(ctx context.Context, opts ...ReleaseOption) error {
	var r releaseConfig
	for _, o := range opts {
		o(&r)
	}
	if err := checkData(r.data); err != nil {
		return err
	}
	c := l.c
	c.mu.Lock()
	if l.holds > 1 {
		l.holds--
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return l.release(ctx, r)
}

func (l *Lock) release(ctx context.Context, r releaseConfig) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	defer l.c.unclaim(l.key, l.slot)

	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	// From here on the lock is not held, whatever the write's fate: the
	// caller has stopped acting on it.
	l.endLocked(ErrReleased)
	cur := l.item
	l.mu.Unlock()

	del := l.delete
	if r.delete != nil {
		del = *r.delete
	}
	rctx := context.WithoutCancel(ctx)
	for try := 0; try < 3; try++ {
		var done bool
		var err error
		if del {
			done, cur, err = l.removeOnce(rctx, cur)
		} else {
			done, cur, err = l.markReleasedOnce(rctx, cur, r)
		}
		if done || err != nil {
			return err
		}
	}
	return fmt.Errorf("lock %q: release kept meeting earlier heartbeats that landed late", l.key)
}

// markReleasedOnce writes the released mark over cur. It reports done when
// the release is settled (err tells how); otherwise the row turned out to
// carry a later heartbeat of this lock, returned as the new cur.
func (l *Lock) markReleasedOnce(ctx context.Context, cur resourcelock.Item, r releaseConfig) (bool, resourcelock.Item, error) {
	rec := l.c.record(cur, true)
	if r.setData {
		rec.Data = r.data
	}
	expect := resourcelock.Precondition{RVN: cur.RVN, Owner: l.c.cfg.owner}
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	_, err := l.c.store.Update(rctx, l.key, expect, rec, l.c.writeOptions(nil))
	cancel()
	if err == nil {
		return true, cur, nil
	}
	it, missing, rerr := l.readBack(ctx)
	switch {
	case rerr != nil:
		return true, cur, fmt.Errorf("lock %q: release not confirmed, the lock will run out: %w", l.key, err)
	case !missing && it.RVN == rec.RVN:
		return true, cur, nil // landed, answer lost
	}
	return l.afterFailedRelease(it, missing, cur, err)
}

// removeOnce deletes the row of cur; see markReleasedOnce.
func (l *Lock) removeOnce(ctx context.Context, cur resourcelock.Item) (bool, resourcelock.Item, error) {
	expect := resourcelock.Precondition{RVN: cur.RVN, Owner: l.c.cfg.owner}
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	err := l.c.store.Remove(rctx, l.key, expect)
	cancel()
	if err == nil {
		return true, cur, nil
	}
	it, missing, rerr := l.readBack(ctx)
	switch {
	case rerr != nil:
		return true, cur, fmt.Errorf("lock %q: release not confirmed, the lock will run out: %w", l.key, err)
	case missing:
		return true, cur, nil // deleted: by us, its answer lost, or by TTL or another client
	}
	return l.afterFailedRelease(it, missing, cur, err)
}

// afterFailedRelease classifies a row read after a release write failed:
// still ours at the same RVN (the write did not land), ours at a later
// heartbeat's RVN (retry on it), or someone else's (the lock had been lost).
func (l *Lock) afterFailedRelease(it resourcelock.Item, missing bool, cur resourcelock.Item, writeErr error) (bool, resourcelock.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !missing {
		if _, ok := l.pending.Sent(it.RVN); ok {
			l.pending.Clear()
			return false, it, nil
		}
		if it.RVN == cur.RVN {
			return true, cur, fmt.Errorf("lock %q: release did not land, the lock will run out: %w", l.key, writeErr)
		}
	}
	lost := l.lostTo(it, missing)
	l.err = lost
	return true, cur, lost
}

// readBack reads the lock's row; missing reports that there is none.
func (l *Lock) readBack(ctx context.Context) (resourcelock.Item, bool, error) {
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	defer cancel()
	it, err := l.c.store.Get(rctx, l.key)
	if errors.Is(err, resourcelock.ErrNotFound) {
		return resourcelock.Item{}, true, nil
	}
	return it, false, err
}
