package rvnlease

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
)

// settle keeps the failure of a poll that did not win (one that waiting
// may fix; a failed condition is contention, not a failure) and, for a
// wait that may not wait, ends it: Try gives up with the failure unless
// a place is held and not to be taken over now (then with a *HeldError
// naming it), and with a *HeldError when every place is held or was
// taken meanwhile. Otherwise it sets the budget from the holders seen.
func (s *waiting) settle(failure error, now time.Time) error {
	s.note(failure)
	switch {
	case failure == nil:
		s.lastErr, s.failingSince = nil, time.Time{}
	case s.lastErr == nil:
		s.lastErr, s.failingSince = failure, now
	default:
		s.lastErr = failure
	}
	held := s.allHeld()
	switch {
	case s.Try && failure != nil && !s.heldNotDue(now):
		return failure
	case s.Try && held:
		return &HeldError{Holder: s.holder(), Last: failure}
	case s.Try:
		return &HeldError{Last: failure}
	case held:
		s.extendDeadline()
	case s.deadline.IsZero() && s.lastErr != nil:
		// No answer has named a holder yet: the budget a holder with
		// the caller's own lease would get.
		s.deadline = s.start.Add(timing.Add(s.Budget.OwnLease, s.Budget.Extra))
	}
	return nil
}

// allHeld reports whether every place is held by another, as last seen.
func (s *waiting) allHeld() bool {
	for _, a := range s.at {
		if !a.Obs.Known || a.Obs.Free() {
			return false
		}
	}
	return true
}

// heldNotDue reports whether some place is held and not to be taken over
// now.
func (s *waiting) heldNotDue(now time.Time) bool {
	for _, a := range s.at {
		if a.Obs.Known && !a.Obs.Free() && !a.Obs.Expired(now) {
			return true
		}
	}
	return false
}

// holder returns the holder of the first place, as last seen.
func (s *waiting) holder() string { return s.at[0].Obs.Holder }

// extendDeadline sets the budget when the wait finds every place held: the
// longest of the holders' leases, counted from when the wait first found
// them held (from when the holder's RVN was first seen, but not before the
// wait started), plus Extra (and, behind a queue's head, the yield to the
// head). Renewals by the holders do not extend it; a later holder with a
// longer lease does, from the same starting point. It starts again from
// the new holder's first sight when a place changes hands (another holder,
// or the same one acquiring it again within its stint), with
// Budget.Restart or for a fair waiter with a place in the queue: while the
// queue moves, it keeps its place. (A fair waiter without a place, say a
// set whose first key is free while another is held, counts as an unfair
// one: holders changing elsewhere are no progress of its own.)
func (s *waiting) extendDeadline() {
	longest := time.Duration(0)
	for i, a := range s.at {
		holder := a.Obs.Holder
		// Changed hands: another holder, or the same one acquiring
		// again (a stint's taking back, Acquirer.Offered).
		changed := (s.at[i].holder != "" && s.at[i].holder != holder) ||
			(s.at[i].acquisitions != 0 && s.at[i].acquisitions != a.Obs.Acquisitions)
		s.at[i].acquisitions = a.Obs.Acquisitions
		restart := s.Budget.Restart || (a.Fair() && a.Position() >= 0)
		if s.budgetFrom.IsZero() || (changed && restart) {
			s.budgetFrom = a.Obs.SeenAt
			if s.budgetFrom.Before(s.start) {
				s.budgetFrom = s.start
			}
		}
		s.at[i].holder = holder
		longest = max(longest, timing.Add(a.Obs.Lease, a.Yield()))
	}
	if d := s.budgetFrom.Add(timing.Add(longest, s.Budget.Extra)); d.After(s.deadline) {
		s.deadline = d
	}
}

// next returns how long to sleep before the next poll, or, once the budget
// has run out, the error that ends the wait. A lease that may be taken
// over now is taken over whatever the budget (the budget ends at the
// holder's expiry by default, and a poll that straddles it must not give
// up on a lease it may take): the next poll comes at once.
func (s *waiting) next(now time.Time) (time.Duration, error) {
	due := s.due()
	until := s.deadline
	if graceEnd := s.graceEnd(now); graceEnd.After(until) {
		until = graceEnd
	}
	if s.Budget.Forever {
		until = time.Time{}
	}
	if !until.IsZero() && !now.Before(until) && !due {
		if err := s.giveUp(now); err != nil {
			return 0, err
		}
	}
	// Wake at the end of the budget; once it has passed (a place was seen
	// free), at the next poll.
	wait := s.wake(now)
	if until.After(now) && !due {
		wait = min(wait, until.Sub(now))
	}
	return wait, nil
}

// due reports whether a place's lease may be taken over (or confirmed)
// now and no takeover of its RVN has been tried yet.
func (s *waiting) due() bool {
	for _, a := range s.at {
		if a.TakeoverDue() && !a.skipped {
			return true
		}
	}
	return false
}

// wake returns how long to sleep before the next poll: zero when a
// place's lease may be taken over now, else a jittered period (a queued
// waiter's pace, for a fair wait), shortened to wake when a watched lease
// may be taken over (for a queued waiter behind the head, after the yield
// to it; not at all two places back, whose waiters take a dead holder
// over first).
func (s *waiting) wake(now time.Time) time.Duration {
	if s.due() {
		return 0
	}
	wait := timing.Jittered(s.Engine.Clock, s.at[0].queueWait(s.Period))
	if s.rh != nil && s.lastErr == nil { // a failing table: the ordinary period, never the rhythm's
		if t, ok := s.rh.next(now); ok {
			wait = max(0, min(wait, t.Sub(now)))
		}
	}
	for _, a := range s.at {
		if a.Obs.Known && !a.Obs.Free() && a.watchesExpiry() {
			if d := a.Obs.Expiry().Add(a.Yield()).Sub(now); d > 0 && d < wait {
				wait = d
			}
		}
	}
	return wait
}

// graceEnd returns how long a failing write may still be retried: when a
// watched lease has run out (it may be taken over) or was handed to this
// waiter, but the last poll failed for a reason waiting may fix (a
// takeover throttled, timed out), the budget no longer measures a live
// holder but a failing table, and the wait keeps trying, a poll apart,
// until the failures have lasted as long as the budget a wait gets when no
// answer comes at all. The zero time otherwise.
func (s *waiting) graceEnd(now time.Time) time.Time {
	if s.lastErr == nil {
		return time.Time{}
	}
	if s.fenceFailed {
		return s.failingSince.Add(timing.Add(s.Budget.OwnLease, s.Budget.Extra))
	}
	for _, a := range s.at {
		if a.Obs.Expired(now) || a.Offered() {
			return s.failingSince.Add(timing.Add(s.Budget.OwnLease, s.Budget.Extra))
		}
	}
	return time.Time{}
}

// giveUp returns the error of a wait whose budget has run out: the places
// still held (with the last failure, if the polls since failed), a
// takeover or a confirmation that kept failing, or the last failure when
// the polls learned nothing. It returns nil when a place was last seen
// free and the last poll failed nothing: the next poll takes it.
func (s *waiting) giveUp(now time.Time) error {
	held := s.allHeld()
	if s.fenceFailed && s.lastErr != nil {
		return fmt.Errorf("taking the lock kept failing for %v: %w", now.Sub(s.failingSince), s.lastErr)
	}
	if held && s.lastErr != nil {
		for _, a := range s.at {
			switch {
			case a.Offered():
				return fmt.Errorf("it was offered to this client but taking it kept failing for %v: %w", now.Sub(s.failingSince), s.lastErr)
			case a.Obs.Expired(now):
				return fmt.Errorf("the lease of %q ran out but taking the lock over kept failing for %v: %w", a.Obs.Holder, now.Sub(s.failingSince), s.lastErr)
			}
		}
	}
	switch {
	case held:
		return &HeldError{Holder: s.holder(), Waited: now.Sub(s.start), Last: s.lastErr}
	case s.lastErr != nil:
		return fmt.Errorf("no answer from the lock table after %v: %w", now.Sub(s.start), s.lastErr)
	}
	return nil
}

// abandonOthers releases the writes in doubt of every place but won (see
// remember), now rather than when the wait returns, and forgets them.
func (s *waiting) abandonOthers(ctx context.Context, won int) {
	for i, a := range s.at {
		if i == won || a.Pending() == 0 {
			continue
		}
		if s.Places[i].Abandoning != nil {
			s.Places[i].Abandoning()
		}
		a.Abandon(ctx)
		a.w.attempts.Clear()
		a.late = rows.Item{}
	}
}

// remember keeps what the wait learned for later waits on its places: the
// watched rows, and writes still in doubt. A place it took keeps only the
// queue's pace. A wait that gives up leaves its queue (passing on a
// hand-over to it), and with writes in doubt first releases the row one
// of them may have left (an orphan naming this identity that nobody
// holds), within one request timeout; if that fails, a later wait
// recognises the row as this identity's.
func (s *waiting) remember(ctx context.Context, won int) {
	for _, a := range s.at {
		if a.q != nil {
			defer s.Engine.Waits.remove(a.q.me.Ticket) // after its queue is left
		}
	}
	for i, a := range s.at {
		k := s.Places[i].Key
		if i == won {
			if s.Watches == nil {
				continue
			}
			if pace := a.Obs.Pace; pace > 0 {
				// Only the queue's pace outlives an acquisition, for the
				// next wait on the key.
				s.Watches.Put(k, Observation{Pace: pace}, Attempts{})
			} else {
				s.Watches.Forget(k)
			}
			continue
		}
		a.LeaveQueue(ctx)
		if a.Pending() > 0 && s.Places[i].Abandoning != nil {
			s.Places[i].Abandoning()
		}
		if a.Pending() > 0 && a.Abandon(ctx) > 0 {
			if s.Watches != nil {
				s.Watches.Forget(k)
			}
			continue
		}
		if s.Watches != nil && (a.Obs.Known || a.Pending() > 0) {
			s.Watches.Put(k, a.Obs, a.InDoubt())
		}
	}
}
