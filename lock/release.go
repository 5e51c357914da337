package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Release gives the lock up. For a reentrant lock held more than once it
// only lowers the hold count. Otherwise the lock ends at once (Done closes,
// Err returns ErrNotHeld, heartbeats stop) and the row is marked released,
// or deleted with WithDeleteOnRelease, by a write conditioned on this identity
// and the lock's RVN, so nobody else's lock is ever touched.
//
// It returns ErrNotHeld for a lock already released, the *dynalease.LostError of a
// lock lost before (including one found taken over while releasing), and
// the error of a release write that could not be confirmed: the row then
// runs out on its own after a lease. A lock that was lost only because its
// validity passed (dynalease.Expired) is still released in the row, best effort, so
// that others need not wait a lease for it; Release then returns its
// *dynalease.LostError all the same.
//
// The write is still sent when ctx has been cancelled (a deferred Release
// at shutdown releases), but Release returns by ctx's deadline, if it has
// one; each request is bounded by the client's request timeout.
func (l *Lock) Release(ctx context.Context, opts ...ReleaseOption) error {
	var r releaseConfig
	for _, o := range opts {
		o(&r)
	}
	if err := checkData("ReleaseWithData", r.data); err != nil {
		return err
	}
	if len(r.numbers) > 0 && (l.kind != kindLock || r.deletes(l.delete)) {
		return invalid("ledger", "only the kept row of a lock on one key takes numbers as it is released")
	}
	switch {
	case l.kind == kindShared && r.setData:
		return invalid("ReleaseWithData", "a shared lock's release writes no data: the row's data is its writer's")
	case l.kind == kindShared && r.deletes(false):
		return invalid("ReleaseDelete", "a shared lock's release deletes no row: other shared holders may hold it")
	}
	l.mu.Lock()
	if l.holds > 1 {
		l.holds--
		l.mu.Unlock()
		return nil
	}
	// No reentrant Acquire may take this lock from here on: it is being
	// released.
	l.holds = 0
	l.mu.Unlock()
	ctx, span := l.startCall(ctx, "dynalease.lock.release")
	err := l.release(ctx, r)
	outcome := "released"
	if err != nil {
		outcome = "error"
	}
	endCall(span, outcome, err)
	return err
}

func (l *Lock) release(ctx context.Context, r releaseConfig) error {
	defer l.c.unclaimLock(l)
	rctx, cancel := timing.KeepDeadline(ctx)
	defer cancel()
	// A heartbeat under way finishes first (bounded by the request
	// timeout), unless the deadline comes first: then the lock ends here
	// and runs out on its own.
	ended := r.ended
	if ended == nil {
		ended = ErrNotHeld
	}
	if err := l.startWrite(rctx); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if herr := l.heldLocked(); herr != nil {
			return herr
		}
		l.endLocked(ended)
		l.reportReleasedLocked()
		return fmt.Errorf("lock %q: not released before the deadline, the lock will run out: %w", l.lease.Key(), err)
	}
	defer l.endWrite()

	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		send := l.expiredUnreleasedLocked(err)
		cur := l.itemLocked()
		l.mu.Unlock()
		if send {
			// Its validity passed on this clock, but nobody may have
			// taken the row yet: a release conditioned on this identity and
			// RVN hands it over now rather than after a lease, and fails
			// harmlessly when someone has.
			if rerr := l.writeRelease(rctx, cur, r); rerr != nil {
				l.c.log.Info("releasing a lock whose validity had passed did not succeed; it will run out", "key", l.lease.Key().String(), "error", rerr.Error())
			}
		}
		return err
	}
	// From here on the lock is not held, whatever the write's fate: the
	// caller has stopped acting on it.
	l.endLocked(ended)
	l.reportReleasedLocked()
	cur := l.itemLocked()
	l.mu.Unlock()
	return l.writeRelease(rctx, cur, r)
}

// reenter takes one more hold of a reentrant lock still held, and reports
// whether it did. (The client's mu may be held: it is taken before a
// lock's.)
func (l *Lock) reenter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.reentrant || l.holds == 0 || l.errLocked() != nil || l.c.k.Passed(l) {
		return false
	}
	l.holds++
	return true
}

// expiredUnreleasedLocked reports whether the lock ended because its
// validity passed (err, from heldLocked) and no release has been sent for
// it yet; it counts the release as sent.
func (l *Lock) expiredUnreleasedLocked(err error) bool {
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.Expired || l.marks&releaseSent != 0 {
		return false
	}
	l.marks |= releaseSent
	return true
}

// writeRelease marks the row of cur released, or deletes it, by a write
// conditioned on this identity and cur's RVN.
func (l *Lock) writeRelease(rctx context.Context, cur rows.Item, r releaseConfig) error {
	if r.deletes(l.delete) {
		// A later heartbeat that landed unseen is deleted in turn.
		w := l.hold.RemoveOwn(rctx, cur)
		return l.afterRelease(w, cur)
	}
	hold := &l.hold
	if len(r.numbers) > 0 {
		o := l.c.writeOptions(nil)
		o.Numbers = r.numbers
		hold = l.hold.Via(l.lease.With(o))
	}
	next := func(cur rows.Item) resourcelock.Record {
		rec := l.c.record(cur, true)
		if r.setData {
			rec.Data = r.data
		}
		return rec
	}
	var w rvnlease.Written
	if l.c.cfg.fair {
		// Handed to the queue's head when others wait (a set's first
		// key: see setlease.Set), unless the stint is on; an earlier
		// heartbeat that landed unseen is written over again.
		keep, start := l.stint(cur)
		w = hold.ReleaseQueued(rctx, cur, next, keep)
		if keep && w.Landed && w.Item.Released && w.Item.HandedTo == "" && len(w.Item.Queue) > 0 {
			// Kept for the stint: an Acquire of the key by this client
			// takes it back at once, by a write conditioned on its RVN.
			l.c.k.KeepForStint(l.lease.Key(), w.Item, start)
		}
		if w.Landed && w.Item.HandedTo != "" {
			l.c.cfg.waits.HandedOver(l.kind.String())
			// Handed over: an Acquire of the key by this client starts
			// from the row it left, and joins the queue at once.
			// Its timer of the handed RVN starts two poll periods
			// late (waiting longer is always safe), so that the waiters
			// already queued, who see it a poll later at most, take over
			// a hand-over nobody confirms before it does.
			l.c.k.HandedOver(l.lease.Key(), w.Item, 2*l.c.cfg.refresh)
		}
	} else {
		// Unfair: an earlier heartbeat that landed unseen is written
		// over again.
		w = hold.WriteOwn(rctx, cur, next, func(rvnlease.Written) bool { return true })
	}
	return l.afterRelease(w, cur)
}

// stint returns whether a release of a row, as it stands, keeps it for this
// client's stint (see the package doc, Stints), and when that stint began.
// A stint is on for a lock on one key of a fair client while the queue's
// waiters, as seen before the release (cur), have waited less than
// Config.Stint since this lock first saw them; waiters the release meets
// that the lock had not seen (they joined since its last write) have
// waited, as this client can tell, no time yet. Entries of this client's
// own (stale ones of an earlier wait) are not waiters.
//
// Without waiters in cur the decision matters only for waiters the
// release meets (its first write, expecting none, is then refused and
// written again over the row found): it keeps the row, and the stint
// starts now. No closure: a release allocates nothing for it.
func (l *Lock) stint(cur rows.Item) (keep bool, start time.Time) {
	if l.kind != kindLock || l.c.cfg.stint <= 0 {
		return false, time.Time{}
	}
	if !l.othersQueued(cur) {
		return true, l.c.clk.Now()
	}
	l.mu.Lock()
	if l.x == nil {
		// Defensive only: cur is the lock's row (itemLocked), and a row
		// with waiters is kept in the extras, so this cannot happen;
		// if it did, the waiters' wait would be unknown: hand over.
		l.mu.Unlock()
		return false, time.Time{}
	}
	begun := l.x.stintStart
	l.mu.Unlock()
	return l.c.clk.Since(l.c.born)-begun < l.c.cfg.stint, l.c.born.Add(begun)
}

// afterRelease classifies what a release over cur found (see
// rvnlease.Written.ReleaseDone): done, the lock lost before (a *dynalease.LostError,
// which Err returns from then on unless the lock had already been lost),
// or a write that did not land.
func (l *Lock) afterRelease(w rvnlease.Written, cur rows.Item) error {
	switch {
	case w.ReleaseDone(cur):
		if !w.Landed && !w.Missing {
			l.c.log.V(1).Info("the row changed while the release was under way; it may have landed first", "key", l.lease.Key().String())
		}
		return nil
	case w.Lost:
		lost := l.setLoss(w.Loss(l.lease.Key().String()))
		l.mu.Lock()
		if _, already := l.errLocked().(*dynalease.LostError); !already {
			l.setErrLocked(lost)
		}
		l.mu.Unlock()
		return lost
	default:
		return fmt.Errorf("lock %q: release not confirmed, the lock will run out: %w", l.lease.Key(), w.Err)
	}
}

// ReleaseOption configures one Release.
type ReleaseOption func(*releaseConfig)

type releaseConfig struct {
	data    []byte
	setData bool
	delete  *bool
	numbers map[string]int64
	// ended is what Err returns once the release has ended the lock:
	// ErrNotHeld, or errClosedRelease for Close's.
	ended error
}

// deletes reports whether the release deletes the row, given the
// acquisition's WithDeleteOnRelease.
func (r releaseConfig) deletes(onRelease bool) bool {
	if r.delete != nil {
		return *r.delete
	}
	return onRelease
}

// ReleaseWithData stores data in the row as it is released (kept rows
// only).
func ReleaseWithData(data []byte) ReleaseOption {
	return func(r *releaseConfig) { r.data, r.setData = data, true }
}

// ReleaseDelete overrides the acquisition's WithDeleteOnRelease.
func ReleaseDelete(del bool) ReleaseOption { return func(r *releaseConfig) { r.delete = &del } }
