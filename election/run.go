package election

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/clockutil"
	rvnlease "github.com/dynalease/dynalease/internal/lease"
	"github.com/dynalease/dynalease/resourcelock"
)

// run is the state of one Run. Only the Run's goroutine touches it.
//
// Invariants:
//   - mine is the RVN of the last write of this Run known to have landed,
//     and mineSent the local time just before that write was sent; "" before
//     any. Only an RVN this Run wrote proves that it holds the record.
//   - pending holds every RVN this Run has tried to write since mine was
//     last confirmed, with the local time just before each was sent. A write
//     whose outcome is unknown may still land later; finding one of these in
//     the record proves that write landed, no earlier than its send time.
//   - obs is the latest record of another holder (or its absence); see
//     rvnlease.Observation for when its wait restarts.
type run struct {
	e        *Elector
	mine     string
	mineSent time.Time
	rec      resourcelock.Record // the record as last confirmed written by this Run
	pending  rvnlease.Attempts
	obs      rvnlease.Observation
	acquired time.Time // wall-clock time of this Run's acquisition, informational
}

// outcome classifies what a write or a read told the Run.
type outcome int

const (
	outcomeUnknown outcome = iota // request failed; nothing learned
	outcomeOurs                   // a write of ours is confirmed in the record
	outcomeStale                  // the record still carries mine: the write did not land
	outcomeOthers                 // the record is someone else's, released, or missing
)

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

// write sends one write of rec and classifies the answer, resolving every
// failure by reading the record back. It returns the send time of the
// confirmed write when the outcome is outcomeOurs.
func (r *run) write(ctx context.Context, rec resourcelock.Record, send func(context.Context) (resourcelock.Record, error)) (outcome, time.Time) {
	sent := r.e.clk.Now()
	r.pending.Add(rec.RVN, sent)
	rctx, cancel := clockutil.WithTimeout(ctx, r.e.clk, r.e.cfg.RequestTimeout)
	stored, err := send(rctx)
	cancel()
	if err == nil {
		r.confirm(stored, sent)
		return outcomeOurs, sent
	}
	// A conditional failure may be the SDK's retry of an attempt that had
	// landed; any other failure may have landed too. Only a read tells.
	r.e.log.V(1).Info("write failed; reading the record to resolve it", "rvn", rec.RVN, "error", err.Error())
	return r.read(ctx)
}

// confirm records that the write of rec, sent at sent, landed.
func (r *run) confirm(rec resourcelock.Record, sent time.Time) {
	r.mine, r.mineSent, r.rec = rec.RVN, sent, rec
	r.pending.Clear()
}

// read gets the record and classifies it. When it carries an RVN this Run
// tried to write, that write is confirmed with its send time.
func (r *run) read(ctx context.Context) (outcome, time.Time) {
	rctx, cancel := clockutil.WithTimeout(ctx, r.e.clk, r.e.cfg.RequestTimeout)
	rec, err := r.e.cfg.Lock.Get(rctx)
	cancel()
	returned := r.e.clk.Now()
	switch {
	case errors.Is(err, resourcelock.ErrNotFound):
		r.observe(resourcelock.Record{}, true, returned)
		return outcomeOthers, time.Time{}
	case err != nil:
		if ctx.Err() == nil {
			r.e.log.Error(err, "reading the lease record failed")
		} else {
			r.e.log.V(1).Info("reading the lease record abandoned", "error", err.Error())
		}
		return outcomeUnknown, time.Time{}
	}
	if sent, ok := r.pending.Sent(rec.RVN); ok {
		r.confirm(rec, sent)
		r.e.log.V(1).Info("a write whose answer was lost had landed", "rvn", rec.RVN)
		return outcomeOurs, sent
	}
	if rec.RVN == r.mine && r.mine != "" && !rec.Released {
		return outcomeStale, time.Time{}
	}
	r.observe(rec, false, returned)
	return outcomeOthers, time.Time{}
}

// observe records a record of someone else (or its absence) read at
// returned. This Run no longer holds the record.
func (r *run) observe(rec resourcelock.Record, missing bool, returned time.Time) {
	r.mine = ""
	r.obs.Observe(rec, missing, returned)
	if r.obs.Free() {
		r.e.setLeader("")
	} else {
		r.e.setLeader(rec.HolderIdentity)
	}
}
