package lock

import (
	"context"
	"fmt"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rvnlease"
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
//
// The write is still sent when ctx has been cancelled (a deferred Release
// at shutdown releases), but Release returns by ctx's deadline, if it has
// one; each request is bounded by the client's request timeout.
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
	// No reentrant Acquire may take this lock from here on: it is being
	// released.
	l.holds = 0
	c.mu.Unlock()
	return l.release(ctx, r)
}

func (l *Lock) release(ctx context.Context, r releaseConfig) error {
	defer l.c.unclaim(l.key, l.slot)
	rctx, cancel := clockutil.KeepDeadline(ctx)
	defer cancel()
	// A heartbeat under way finishes first (bounded by the request
	// timeout), unless the deadline comes first: then the lock ends here
	// and runs out on its own.
	if err := l.startWrite(rctx); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if herr := l.heldLocked(); herr != nil {
			return herr
		}
		l.endLocked(ErrReleased)
		l.reportReleasedLocked()
		return fmt.Errorf("lock %q: not released before the deadline, the lock will run out: %w", l.key, err)
	}
	defer l.endWrite()

	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	// From here on the lock is not held, whatever the write's fate: the
	// caller has stopped acting on it.
	l.endLocked(ErrReleased)
	l.reportReleasedLocked()
	cur := l.item
	l.mu.Unlock()

	del := l.delete
	if r.delete != nil {
		del = *r.delete
	}
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
	return l.afterRelease(l.hold.Write(ctx, cur, rec), rec.RVN, cur)
}

// removeOnce deletes the row of cur; see markReleasedOnce.
func (l *Lock) removeOnce(ctx context.Context, cur resourcelock.Item) (bool, resourcelock.Item, error) {
	expect := resourcelock.Precondition{RVN: cur.RVN, Owner: l.c.cfg.owner}
	rctx, cancel := clockutil.WithTimeout(ctx, l.c.clk, l.c.cfg.requestTimeout)
	started := l.c.clk.Now()
	err := l.c.store.Remove(rctx, l.key, expect)
	cancel()
	l.c.observeRequest("remove", err, l.c.clk.Since(started))
	if err == nil {
		return true, cur, nil
	}
	w := l.hold.Settle(ctx, cur, err)
	if w.Lost && w.Missing {
		return true, cur, nil // deleted: by us, its answer lost, or by TTL or another client
	}
	return l.afterRelease(w, "", cur)
}

// afterRelease classifies what a release write found: the release itself
// landed (its RVN rvn in the row), a later heartbeat of this lock had
// landed (retry on it), the lock had been lost, or the write did not land.
func (l *Lock) afterRelease(w rvnlease.Written, rvn string, cur resourcelock.Item) (bool, resourcelock.Item, error) {
	switch {
	case w.Landed && rvn != "" && w.Item.RVN == rvn:
		return true, cur, nil
	case w.Landed:
		return false, w.Item, nil
	case w.Lost:
		lost := l.lostTo(w.Item, w.Missing)
		l.mu.Lock()
		l.err = lost
		l.mu.Unlock()
		return true, cur, lost
	default:
		return true, cur, fmt.Errorf("lock %q: release not confirmed, the lock will run out: %w", l.key, w.Err)
	}
}
