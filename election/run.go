package election

import (
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// run is the state of one Run. Only the Run's goroutine touches it, except
// that during a term its renewals own cur and sent (see renewal).
//
// Invariants: cur is the record as last confirmed written by this Run and
// sent the local time just before that write was sent (zero before the
// first); only an RVN this Run wrote proves that it holds the record. The
// kernel (its wait loop while campaigning, the hold while leading) keeps
// the RVNs in doubt and what was observed of other holders. sent is the
// renewals' own (when the next is due); the term's validity counts from the
// hold's send time, which the kernel moves with each confirmed renewal.
type run struct {
	e        *Elector
	hold     rvnlease.Hold // the kernel's hold of the record; the term's validity lives in it
	cur      rows.Item
	sent     time.Time
	acquired time.Time // wall-clock time of this Run's acquisition, informational
}

func newRun(e *Elector) *run {
	return &run{e: e, hold: e.k.Hold(e.lease)}
}

// newRecord returns a record for a write of this Run with a fresh RVN.
func (r *run) newRecord(released bool) resourcelock.Record {
	now := r.e.clk.Now()
	if r.acquired.IsZero() {
		r.acquired = now
	}
	return resourcelock.Record{
		HolderIdentity: r.e.identity,
		RVN:            uuid.NewString(),
		LeaseDuration:  r.e.cfg.LeaseDuration,
		Released:       released,
		AcquireTime:    r.acquired,
		RenewTime:      now,
	}
}

// confirm records that the write of it, sent at sent, landed.
func (r *run) confirm(it rows.Item, sent time.Time) {
	r.cur, r.sent = it, sent
}
