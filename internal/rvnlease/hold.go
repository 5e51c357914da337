package rvnlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Hold is one held lease as the kernel keeps it: the writes over the row
// its identity holds (renewals and releases, each conditioned on the
// identity and the RVN of the last confirmed write, settled when their
// answers are lost), and its validity: the send time of the last
// confirmed write, and the hold's place among the kernel's validities,
// which only the kernel's validities write (Kernel.Start, Extend, End), under
// the kind's lock of the hold. A new hold is unstarted: it counts as passed,
// and ending it is a no-op. Its writes are not safe for concurrent use: the
// caller serializes them.
type Hold struct {
	w     writer
	sent  time.Duration // the send time of the last confirmed write since the Config's Epoch (Kernel's)
	valid Validity
}

// NewHold returns a hold of lease. cfg may be shared (a lock client's
// thousands of held locks share one), and must not change.
func NewHold(cfg *Config, lease keylease.Port) *Hold {
	return &Hold{w: writer{cfg: cfg, port: lease}, valid: unstarted()}
}

// Sent returns the send time of the hold's last confirmed write. Read it
// under the kind's lock of the hold, as Kernel.Passed.
func (h *Hold) Sent() time.Time { return h.w.cfg.Epoch.Add(h.sent) }

// Via returns a holder of the same row that writes through lease (the
// row written with other options), for one write: h itself is left as it
// is, so its other users (a loss being confirmed by a read) never see its
// lease change. The copy's writes in doubt are not h's: forgetting one can
// only make a row of ours look like a stranger's (see Attempts). The copy
// has no validity (it is unstarted): h's is read only under the kind's lock.
func (h *Hold) Via(lease keylease.Port) *Hold {
	c := &Hold{w: h.w, valid: unstarted()}
	c.w.port = lease
	c.w.attempts = Attempts{list: append([]attempt(nil), h.w.attempts.list...)}
	return c
}

// Written is what a holder's write found.
type Written struct {
	// Landed: a write of this holder is in the row (this one, or an
	// earlier one whose answer was lost; compare Item.RVN): Item is the
	// row, Sent that write's send time.
	Landed bool
	Item   rows.Item
	Sent   time.Time
	// Lost: the row is someone else's, was released by someone else, or
	// is missing (Missing). Item is the row found.
	Lost    bool
	Missing bool
	// Cause is the write's own error when it failed (Lost, or Err): a
	// failed condition (resourcelock.ErrConflict), or a failure whose
	// answer was lost and which may have landed before the row changed.
	Cause error
	// Err, when neither: the write did not land (the row still carries
	// cur's RVN; Item is the row found) or nothing could be learned. The
	// lease is still held until its validity runs out.
	Err error
}

// Loss returns the loss a Lost write found, for the lease named lease: the
// row missing, released by another holder, or written by one. Its Cause is
// the write's own error when that was the store's verdict on the write's
// condition (resourcelock.ErrConflict), and nil when the write's answer was
// lost and a read found the row changed: a timeout of the holder's own
// request did not cause the loss, and a caller matching
// context.DeadlineExceeded must not read a theft as its own timeout. It is
// the one classification of a holder's loss, for renewals and releases
// alike.
func (w Written) Loss(lease string) *dynalease.LostError {
	lost := lostTo(lease, w.Item, w.Missing)
	if errors.Is(w.Cause, resourcelock.ErrConflict) {
		lost.Cause = w.Cause
	}
	return lost
}

// Expired returns the loss of a hold on lease whose validity ran out before
// a renewal was confirmed, with the last renewal's failure as Cause when
// there was one (nil when the renewals were not sent in time, as after a
// pause). It is the one Expired loss of every kind of hold.
func Expired(lease string, lastErr error) *dynalease.LostError {
	return &dynalease.LostError{Lease: lease, Reason: dynalease.Expired, Cause: lastErr}
}

// Outcome classifies the write for the metrics: OK when it landed, Lost,
// or Error.
func (w Written) Outcome() metrics.Outcome {
	switch {
	case w.Landed:
		return metrics.OK
	case w.Lost:
		return metrics.Lost
	default:
		return metrics.Error
	}
}

// Write writes rec over cur, conditioned on this holder's identity and cur's
// RVN, and settles the answer.
func (h *Hold) Write(ctx context.Context, cur rows.Item, rec resourcelock.Record) Written {
	expect := resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: h.w.cfg.Identity}
	port := h.w.port
	ans := h.w.write(ctx, rec, cur.RVN, func(c context.Context) (rows.Item, error) { return port.Update(c, expect, rec) })
	return h.written(ans, cur)
}

// maxRewrites bounds how many writes WriteOwn sends. Each rewrite follows
// an earlier write of the holder whose answer was lost; the holder's
// writes are serialized and settled in turn, so a second one in a row is
// already unusual.
const maxRewrites = 3

// WriteOwn writes next(cur) over cur like Write, and reports Landed only
// for that write: when the row turns out to carry an earlier write of this
// holder (whose answer was lost, so the caller's cur is stale), confirm is
// told of that write, and a new record, next of the row found, is written
// on top of it. A heartbeat that carries new data, and a release, must not
// be reported done because a different write landed. When confirm returns
// false (the caller's hold ended meanwhile, its validity passed) nothing
// more is written, and WriteOwn returns the earlier write's Written. It
// returns the Written of the last write; after maxRewrites writes that
// each met an earlier one, an error (the last earlier write confirmed).
func (h *Hold) WriteOwn(ctx context.Context, cur rows.Item, next func(cur rows.Item) resourcelock.Record, confirm func(Written) bool) Written {
	for try := 1; ; try++ {
		rec := next(cur)
		w := h.Write(ctx, cur, rec)
		if !w.Landed || w.Item.RVN == rec.RVN {
			return w
		}
		h.w.cfg.Log.V(1).Info("an earlier write had landed; writing again on top of it", "rvn", w.Item.RVN)
		if !confirm(w) {
			return w
		}
		if try == maxRewrites {
			return Written{Err: fmt.Errorf("the row kept showing earlier writes of this holder (%d writes sent)", maxRewrites)}
		}
		cur = w.Item
	}
}

// RemoveOwn deletes the row of cur with a delete conditioned on this
// holder's identity and cur's RVN, and settles a failure like Settle.
// When the row turns out to carry a later
// write of this holder (its answer lost), that write is deleted in turn,
// up to maxRewrites deletes in all. The row gone, whoever deleted it, is
// reported Lost with Missing (see ReleaseDone).
func (h *Hold) RemoveOwn(ctx context.Context, cur rows.Item) Written {
	cfg := h.w.cfg
	remover := h.w.port
	for try := 1; ; try++ {
		expect := resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: cfg.Identity}
		rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
		start := cfg.Clock.Now()
		err := remover.Remove(rctx, expect)
		cancel()
		cfg.observe("remove", start, err)
		if err == nil {
			return Written{Lost: true, Missing: true}
		}
		w := h.Settle(ctx, cur, err)
		if !w.Landed {
			return w
		}
		if try == maxRewrites {
			return Written{Err: fmt.Errorf("the row kept showing later writes of this holder (%d deletes sent)", maxRewrites)}
		}
		cur = w.Item
	}
}

// Lost reads the row after a write conditioned on this holder's holding
// was refused (resourcelock.ErrGuardLost: the server saw the row no longer
// show the acquisition) and returns the loss the row shows, with cause.
// When the read fails too, the server's verdict stands: Stolen. Unlike
// the holder's other methods it touches none of the holder's writes in
// doubt, so it may run beside a renewal.
func (h *Hold) Lost(ctx context.Context, lease string, cause error) *dynalease.LostError {
	cfg := h.w.cfg
	rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
	start := cfg.Clock.Now()
	it, err := h.w.port.Get(rctx)
	cancel()
	missing := errors.Is(err, resourcelock.ErrNotFound)
	if missing {
		cfg.observe("get", start, nil) // an answer: there is no row
	} else {
		cfg.observe("get", start, err)
	}
	lost := &dynalease.LostError{Lease: lease, Reason: dynalease.Stolen}
	if err == nil || missing {
		lost = lostTo(lease, it, missing)
	}
	lost.Cause = cause
	return lost
}

// ReleaseDone reports whether a release written over cur (marking it
// released, or deleting it) is done as far as anyone can tell: it landed;
// or the row is gone; or its answer was lost (a timeout, a reset, a 5xx:
// not the server's verdict on its condition) and the row now carries an
// RVN other than cur's, so that the release may well have landed before
// the row changed again. A release refused by its condition while the row
// carries another RVN is a loss that came before it (a takeover, or a
// forced release and a new holder): false, so the caller hears of it,
// even though an SDK retry of a release that had landed would look the
// same (a false alarm, never a hidden theft). A row that still carries
// cur's RVN but is not this holder's (marked released by another writer,
// which keeps the RVN) is a loss too.
func (w Written) ReleaseDone(cur rows.Item) bool {
	answerLost := w.Cause != nil && !errors.Is(w.Cause, resourcelock.ErrConflict)
	return w.Landed || (w.Lost && (w.Missing || (w.Item.RVN != cur.RVN && answerLost)))
}

// Settle reads the row after a write the caller sent by other means (a
// conditional delete) failed with writeErr, and says what it found: Lost
// with Missing when the row is gone, Landed when it carries a write of
// this holder other than cur's.
func (h *Hold) Settle(ctx context.Context, cur rows.Item, writeErr error) Written {
	var ans answer
	if it, ok := rows.CurrentItem(writeErr); ok {
		ans = h.w.settle(it, false, h.w.cfg.Clock.Now())
	} else {
		ans = h.w.read(ctx)
	}
	if ans.err != nil {
		ans.err = fmt.Errorf("%w (and reading the row back: %w)", writeErr, ans.err)
	}
	ans.cause = writeErr
	return h.written(ans, cur)
}

func (h *Hold) written(ans answer, cur rows.Item) Written {
	switch {
	case ans.landed:
		return Written{Landed: true, Item: ans.item, Sent: ans.sent}
	case ans.err != nil:
		return Written{Err: ans.err, Cause: ans.cause}
	case !ans.missing && ans.item.RVN == cur.RVN && ans.item.HolderIdentity == h.w.cfg.Identity && !ans.item.Released:
		return Written{Err: fmt.Errorf("the write did not land (the row still carries %s): %w", cur.RVN, ans.cause), Cause: ans.cause, Item: ans.item}
	default:
		return Written{Lost: true, Item: ans.item, Missing: ans.missing, Cause: ans.cause}
	}
}

// lostTo returns the loss of the hold on lease to the row it (missing
// when there is none) found in place of the holder's own: Deleted,
// ReleasedElsewhere or Stolen.
func lostTo(lease string, it rows.Item, missing bool) *dynalease.LostError {
	e := &dynalease.LostError{Lease: lease}
	switch {
	case missing:
		e.Reason = dynalease.Deleted
	case it.Released:
		e.Reason, e.HolderIdentity = dynalease.ReleasedElsewhere, it.HolderIdentity
	default:
		e.Reason, e.HolderIdentity = dynalease.Stolen, it.HolderIdentity
	}
	return e
}

// GuardOutcome classifies the error of a guarded write for GuardedWrite:
// "committed", "lock_lost" (resourcelock.ErrGuardLost), "condition_failed"
// (one of the caller's own conditions: resourcelock.ErrConflict),
// "conflict" (concurrent writes kept cancelling it:
// resourcelock.ErrContention) or "error".
func GuardOutcome(err error) string {
	switch {
	case err == nil:
		return "committed"
	case errors.Is(err, resourcelock.ErrGuardLost):
		return "lock_lost"
	case errors.Is(err, resourcelock.ErrContention):
		return "conflict"
	case errors.Is(err, resourcelock.ErrConflict):
		return "condition_failed"
	default:
		return "error"
	}
}
