package rvnlease

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/resourcelock"
)

// Holder writes over a row its owner holds: renewals and releases, each
// conditioned on the owner and the RVN of the last confirmed write. It is
// not safe for concurrent use: the caller serializes its writes.
type Holder struct {
	w writer
}

// NewHolder returns a holder of the lease behind port. cfg may be shared
// (a lock client's thousands of held locks share one), and must not
// change.
func NewHolder(cfg *Config, port Port) *Holder {
	return &Holder{w: writer{cfg: cfg, port: port}}
}

// Written is what a holder's write found.
type Written struct {
	// Landed: a write of this holder is in the row (this one, or an
	// earlier one whose answer was lost; compare Item.RVN): Item is the
	// row, Sent that write's send time.
	Landed bool
	Item   resourcelock.Item
	Sent   time.Time
	// Lost: the row is someone else's, was released by someone else, or
	// is missing (Missing). Item is the row found.
	Lost    bool
	Missing bool
	// Err, when neither: the write did not land (the row still carries
	// cur's RVN) or nothing could be learned. The lease is still held
	// until its validity runs out.
	Err error
}

// Write writes rec over cur, conditioned on this holder's owner and cur's
// RVN, and settles the answer.
func (h *Holder) Write(ctx context.Context, cur resourcelock.Item, rec resourcelock.Record) Written {
	expect := resourcelock.Precondition{RVN: cur.RVN, Owner: h.w.cfg.Owner}
	port := h.w.port
	ans := h.w.write(ctx, rec, cur.RVN, func(c context.Context) (resourcelock.Item, error) { return port.Update(c, expect, rec) })
	return h.written(ans, cur)
}

// Settle reads the row after a write the caller sent by other means (a
// conditional delete) failed with writeErr, and says what it found: Lost
// with Missing when the row is gone, Landed when it carries a write of
// this holder other than cur's.
func (h *Holder) Settle(ctx context.Context, cur resourcelock.Item, writeErr error) Written {
	var ans answer
	if it, ok := resourcelock.CurrentItem(writeErr); ok {
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

func (h *Holder) written(ans answer, cur resourcelock.Item) Written {
	switch {
	case ans.landed:
		return Written{Landed: true, Item: ans.item, Sent: ans.sent}
	case ans.err != nil:
		return Written{Err: ans.err}
	case !ans.missing && ans.item.RVN == cur.RVN && ans.item.HolderIdentity == h.w.cfg.Owner && !ans.item.Released:
		return Written{Err: fmt.Errorf("the write did not land (the row still carries %s): %w", cur.RVN, ans.cause)}
	default:
		return Written{Lost: true, Item: ans.item, Missing: ans.missing}
	}
}
