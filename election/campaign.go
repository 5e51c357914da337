package election

import (
	"context"
	"time"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/resourcelock"
)

// campaign runs the candidate loop until this Run holds the record with
// validity left, and returns when that validity ends; or until ctx is done.
//
// Each round makes one attempt and then waits a jittered RetryPeriod, or
// less when the observed lease may be taken over sooner:
//  1. No record seen yet, or the record is missing or released: create it.
//  2. The observed RVN has stayed unchanged for the holder's lease, counted
//     from when a read first returned it: take over with a write
//     conditioned on that RVN.
//  3. Otherwise read the record, noting when a new RVN first appears; if it
//     turns out missing or released, create it at once.
//
// A record naming this candidate's identity but carrying an RVN this Run
// did not write is waited out like any other.
func (r *run) campaign(ctx context.Context) (time.Time, error) {
	e := r.e
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		out, sent, onlyRead := r.attempt(ctx)
		if out == outcomeOurs {
			validUntil := sent.Add(e.cfg.termValidity())
			if !e.clk.Now().Before(validUntil) {
				// A write confirmed only after its validity passed (its
				// answer was lost): the record is ours, renew it at once.
				continue
			}
			if r.fence(ctx) {
				e.setLeader(e.identity)
				return validUntil, nil
			}
			// Holding the record without a token: renew it after a poll's
			// wait and try again. (Not the wake-at-expiry below: the last
			// observation may be the lease just taken over.)
			if err := e.sleep(ctx, clockutil.Jittered(e.cfg.RetryPeriod)); err != nil {
				return time.Time{}, err
			}
			continue
		}
		wait := clockutil.Jittered(e.cfg.RetryPeriod)
		if r.obs.Known && !r.obs.Free() {
			d := r.obs.Expiry().Sub(e.clk.Now())
			if d <= 0 && onlyRead {
				// The lease expired while this round's read was under way:
				// take over now. (After a failed write — a takeover, or a
				// renewal of a late-confirmed record — wait as usual, so a
				// failing store is not hammered.)
				continue
			}
			if d > 0 && d < wait {
				wait = d // wake when the watched lease may be taken over
			}
		}
		if err := e.sleep(ctx, wait); err != nil {
			return time.Time{}, err
		}
	}
}

// attempt makes the one request (and, on failure, the resolving read) of a
// campaign round. onlyRead reports that the round was a plain read, which
// may be followed at once by a takeover if the lease expired meanwhile.
func (r *run) attempt(ctx context.Context) (out outcome, sent time.Time, onlyRead bool) {
	e := r.e
	switch {
	case r.mine != "":
		out, sent = r.renew(ctx)
	case !r.obs.Known || r.obs.Free():
		out, sent = r.create(ctx)
	case r.obs.Expired(e.clk.Now()):
		e.log.V(1).Info("lease unchanged for its duration; taking over", "rvn", r.obs.RVN, "holder", r.obs.Holder)
		rec := r.newRecord(false)
		expect := resourcelock.Precondition{RVN: r.obs.RVN}
		out, sent = r.write(ctx, rec, func(c context.Context) (resourcelock.Record, error) {
			return e.cfg.Lock.Update(c, expect, rec)
		})
	default:
		out, sent = r.read(ctx)
		onlyRead = true
		if out == outcomeOthers && r.obs.Free() {
			// Released or deleted since the last look: take it in this
			// round rather than the next.
			out, sent = r.create(ctx)
			onlyRead = false
		}
	}
	return out, sent, onlyRead
}

// create writes a record conditioned on there being none, or a released
// one.
func (r *run) create(ctx context.Context) (outcome, time.Time) {
	rec := r.newRecord(false)
	return r.write(ctx, rec, func(c context.Context) (resourcelock.Record, error) {
		return r.e.cfg.Lock.Create(c, rec)
	})
}

// renew writes a fresh RVN over the one this Run holds, conditioned on
// owner and RVN.
func (r *run) renew(ctx context.Context) (outcome, time.Time) {
	rec := r.newRecord(false)
	return r.writeAsHolder(ctx, rec)
}

// writeAsHolder writes rec conditioned on this Run's identity and RVN.
func (r *run) writeAsHolder(ctx context.Context, rec resourcelock.Record) (outcome, time.Time) {
	expect := resourcelock.Precondition{RVN: r.mine, Owner: r.e.identity}
	return r.write(ctx, rec, func(c context.Context) (resourcelock.Record, error) {
		return r.e.cfg.Lock.Update(c, expect, rec)
	})
}

// fence gives a freshly acquired record a fencing generation when the
// elector uses fencing and the record needs one. It reports whether the
// record may be led with.
func (r *run) fence(ctx context.Context) bool {
	e := r.e
	if !e.cfg.Fencing || !r.rec.NeedsFence() {
		return true
	}
	fencer := e.cfg.Lock.(resourcelock.Fencer) // checked by New
	rctx, cancel := clockutil.WithTimeout(ctx, e.clk, e.cfg.RequestTimeout)
	rec, err := fencer.Fence(rctx, r.rec.AcquisitionID)
	cancel()
	if err != nil {
		e.log.Error(err, "could not give the acquired lease a fencing token")
		return false
	}
	r.rec = rec
	return true
}
