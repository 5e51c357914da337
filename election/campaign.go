package election

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// campaign waits, in the kernel's one wait loop, until this Run holds the
// record, and returns the send time of the write that won it; or until
// ctx is done, or an error that waiting cannot fix ends it (a missing table, a record that cannot be decoded,
// access denied; see resourcelock.Permanent).
//
// A candidate never gives up: it polls every jittered RetryPeriod, or
// sooner when the observed lease may be taken over, and retries transient
// failures (a failed fencing request included) for as long as ctx allows;
// the last failure is kept for LastError. What it watched, and its writes
// in doubt, carry over to the next Run (the kernel's watches).
func (r *run) campaign(ctx context.Context) (time.Time, error) {
	e := r.e
	won, err := e.k.Acquire(ctx, rvnlease.Request{
		// A leader hands the lease to a candidate by name (Successor).
		Places: []rvnlease.Place{{Lease: e.lease, Successor: true,
			NewRecord: func(rows.Item) resourcelock.Record { return r.newRecord(false) }}},
		Period: e.cfg.RetryPeriod,
		// A leader renews one RetryPeriod after its previous renewal
		// began: a standby reads just after each renewal lands.
		Rhythm: e.cfg.RetryPeriod,
		Budget: rvnlease.Budget{Forever: true},
		Fence:  e.cfg.Fencing,
		OnPoll: e.polled,
		Loop:   "election",
	})
	switch {
	case err == nil:
		r.confirm(won.Item, won.Sent)
		e.setLeader(e.identity)
		return won.Sent, nil
	case ctx.Err() != nil:
		return time.Time{}, ctx.Err()
	}
	e.noteError(err)
	e.log.Error(err, "cannot campaign for the lease; waiting cannot fix this")
	return time.Time{}, fmt.Errorf("election: %w", err)
}

// polled reports one poll of the campaign: to the metrics, and the holder
// it saw (even if a later request of the poll failed) to OnNewLeader.
func (e *Elector) polled(p rvnlease.Poll) {
	e.cfg.Metrics.Round(roundOutcome(p), p.Took)
	if p.Err != nil || p.Won || !p.Known {
		return
	}
	if p.Free {
		e.setLeader("")
	} else {
		e.setLeader(p.Holder)
	}
}

// roundOutcome classifies a campaign round for the metrics.
func roundOutcome(p rvnlease.Poll) metrics.Outcome {
	switch {
	case p.Err != nil || p.RoundFailed:
		return metrics.Error
	case p.Won:
		return metrics.OK
	case p.Free:
		return metrics.OK // free, and another candidate was faster: not an error
	default:
		return metrics.Held
	}
}
