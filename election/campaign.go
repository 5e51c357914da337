package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// campaign runs the candidate loop until this Run holds the record with
// validity left, and returns when that validity ends; or until ctx is done,
// or an error that waiting cannot fix ends it (a missing table, a record
// that cannot be decoded, access denied; see resourcelock.Permanent).
//
// Each round is one round of the engine (see rvnlease.Acquirer), followed
// by a jittered RetryPeriod, or less when the observed lease may be taken
// over sooner. Transient failures are retried for as long as ctx allows;
// the last one is kept for LastError.
func (r *run) campaign(ctx context.Context) (time.Time, error) {
	e := r.e
	for {
		started := e.clk.Now()
		res, err := r.acq.Round(ctx)
		e.cfg.Metrics.Round(roundOutcome(res, err, r.acq.Obs), e.clk.Since(started))
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return time.Time{}, ctxErr
			}
			e.noteError(err)
			e.log.Error(err, "cannot campaign for the lease; waiting cannot fix this")
			return time.Time{}, fmt.Errorf("election: %w", err)
		}
		switch res.Outcome {
		case rvnlease.Ours:
			if e.cfg.Fencing {
				// A row that cannot be fenced is released by the engine,
				// so healthy candidates need not wait a lease for it.
				res, err = r.acq.Fence(ctx, res)
			}
			if err == nil {
				r.confirm(res.Item, res.Sent)
				e.noteError(nil)
				e.setLeader(e.identity)
				return res.Sent.Add(e.cfg.termValidity()), nil
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return time.Time{}, ctxErr
			}
			e.noteError(err)
			if resourcelock.Permanent(err) || errors.Is(err, resourcelock.ErrNoFencing) {
				e.log.Error(err, "cannot give the lease a fencing token; waiting cannot fix this")
				return time.Time{}, fmt.Errorf("election: %w", err)
			}
			// Try again after a poll's wait.
			e.log.Error(err, "could not give the acquired lease a fencing token; released it")
			if err := e.sleep(ctx, clockutil.Jittered(e.cfg.RetryPeriod)); err != nil {
				return time.Time{}, err
			}
			continue
		case rvnlease.Others:
			// A write that failed (throttled, timed out) is this round's
			// error even when the read that settled it succeeded: a
			// candidate that can read but not write cannot take over.
			e.noteError(res.Err)
		default:
			if ctx.Err() == nil {
				e.noteError(res.Err)
			}
		}
		if obs := r.acq.Obs; obs.Known {
			// What the round saw, even if a later request of the round
			// failed.
			if obs.Free() {
				e.setLeader("")
			} else {
				e.setLeader(obs.Holder)
			}
		}
		if err := e.sleep(ctx, r.acq.Wait(e.cfg.RetryPeriod)); err != nil {
			return time.Time{}, err
		}
	}
}

// carried is what one Run's campaign leaves to the next Run of the same
// Elector: the watched record, and the writes still in doubt, so that a
// record one of them left is recognised as this candidate's.
type carried struct {
	obs     rvnlease.Observation
	inDoubt rvnlease.Attempts
}

// giveUp ends a campaign that did not lead. A write still in doubt may
// have landed after its answer was lost, leaving a record that names this
// candidate and that nobody holds: it is released (best effort, within one
// request timeout). What is left is carried to the next Run.
func (r *run) giveUp(ctx context.Context) carried {
	if r.acq.Pending() > 0 && r.acq.Abandon(ctx) > 0 {
		r.e.log.Info("released a record that a write of this candidate had left unseen")
		return carried{}
	}
	return carried{obs: r.acq.Obs, inDoubt: r.acq.InDoubt()}
}

// roundOutcome classifies a campaign round for the metrics.
func roundOutcome(res rvnlease.Result, err error, obs rvnlease.Observation) metrics.Outcome {
	switch {
	case err != nil || res.Err != nil:
		return metrics.Error
	case res.Outcome == rvnlease.Ours:
		return metrics.OK
	case obs.Free():
		return metrics.OK // free, and another candidate was faster: not an error
	default:
		return metrics.Held
	}
}
