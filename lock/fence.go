package lock

import (
	"context"
	"errors"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Token returns the lock's fencing token, or 0 when the client was made
// without Config.Fencing. Tokens of one key grow with every acquisition; a
// resource that remembers the largest token it has seen and refuses writes
// carrying a smaller one cannot be written by a holder that lost its lock
// while paused. Heartbeats do not change it.
//
// For a read-modify-write that is not enough on its own: a stale write can
// still land between a newer holder's read and its write. Raise the
// resource's fence to the token before reading (as examples/inventory
// does), or make the write conditional on the value read as well.
func (l *Lock) Token() int64 {
	if !l.c.cfg.fencing {
		// The row may still carry a counter (another client fences it),
		// but this client never gave it a generation: not a token.
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.row.token
}

// Guard runs w, a guarded write of the caller's own (dynamodbstore's
// Store.Writes makes one of DynamoDB items), with this acquisition's
// holding: the store commits w's writes, all or nothing, together with a
// check that the lock's row (every key's row, for a set) still shows this
// acquisition (holder identity and acquisition ID, not released). A
// holder that lost the lock (paused, partitioned, or simply too late)
// therefore cannot commit anything: the error matches dynalease.ErrLost
// (and resourcelock.ErrGuardLost), nothing was applied, and the lock is
// then marked lost.
//
// Guard refuses at once, without a request, a lock that is already known
// to be released or lost (ErrNotHeld, or its *dynalease.LostError). Its
// other errors are w's: the store says what they mean (see
// dynamodbstore.Store.Guard); an error matching dynalease.ErrInvalid, for
// writes refused before any request, names the field "items".
func (l *Lock) Guard(ctx context.Context, w resourcelock.Guarded) (err error) {
	if w == nil {
		return invalid("Guard", "the guarded write is nil (dynamodbstore's Store.Writes makes one)")
	}
	if l.kind == kindShared {
		return invalid("Guard", "a shared lock guards no writes: take the lock exclusively (Acquire) to guard a write")
	}
	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	h := resourcelock.Holding{Keys: []resourcelock.Key{l.lease.Key()}, HolderIdentity: l.c.cfg.identity, AcquisitionID: l.acquisitionIDLocked()}
	l.mu.Unlock()
	if set := l.claim.set; set != nil {
		h.Keys = set.keys
	}
	ctx, span := l.startCall(ctx, "dynalease.lock.guard")
	started := l.c.clk.Now()
	err = w(ctx, h)
	l.c.observeRequest("guard", err, l.c.clk.Since(started))
	outcome := rvnlease.GuardOutcome(err)
	l.c.cfg.metrics.GuardedWrite(outcome)
	defer func() { endCall(span, outcome, err) }() // the error Guard returns: a loss as LostError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dynalease.ErrInvalid):
		return refused("items", err)
	case errors.Is(err, resourcelock.ErrGuardLost):
		// The server's verdict is what the caller needs (nothing was
		// applied), even when the lock ended locally while the request
		// was in flight.
		lost := l.setLoss(l.hold.Lost(context.WithoutCancel(ctx), l.lease.Key().String(), err))
		l.mu.Lock()
		defer l.mu.Unlock()
		l.loseLocked(lost)
		return lost
	}
	return err
}
