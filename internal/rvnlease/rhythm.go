package rvnlease

import (
	"time"

	"github.com/dynalease/dynalease/internal/timing"
)

// rhythm times a waiter's reads of a lease whose holder renews it every
// period, as the waiter assumes (an elector's candidates share their
// RetryPeriod, and a leader renews one RetryPeriod after its previous
// renewal began), so that a read comes soon after each renewal lands.
// The takeover timer starts at the waiter's first sighting of the RVN it
// takes over, so every millisecond between the holder's last renewal and
// that sighting is added to a failover; reads at random phases of the
// period add half a period on average.
//
// Safety does not depend on it: the rhythm only moves when the waiter
// reads, never when an RVN counts as first seen (Observation.SeenAt, the
// return of the read that showed it, which is never before the write
// landed). A wrong assumption (a holder renewing at another period, or
// stopped) costs reads and lag, bounded below, never a takeover sooner.
//
// How: every read that shows a new RVN brackets that write's landing
// between the send of the previous read (which still showed the old RVN)
// and its own return. The holder sends the next write a period after it
// sent this one (a timer never fires early), so it lands no earlier than
// about a period after the bracket's start (less the margin eps, for a
// write that took longer to land than the next), and the next read goes
// to the middle of the bracket moved a period on; if it still
// shows the old RVN, the landing is in the upper half and one more read
// at the top of the bracket sees it. Each renewal halves the bracket, to
// about a round trip; a bracket wider than sixteen times the top's margin
// is quartered instead (up to four reads), so that a rhythm is found
// within three or four renewals. A holder later than its bracket (its timers drift
// late) is looked for a few more times a twentieth of a period apart;
// after a quarter of a period without it the rhythm is lost, and the
// waiter reads at its ordinary period until the next new RVN brackets a
// landing again. Two losses, unless eight renewals found in rhythm came
// between them, turn the rhythm off for the wait: the holder does not
// renew at the assumed period.
//
// Besides, one read a period comes at a random time between a renewal and
// the next: a release at any moment is seen as soon as by a waiter that
// reads at random, and two waiters, whose rhythms are alike, do not see
// it only at the same moments.
//
// Reads: about two and a half per period once the bracket is narrow (up
// to five while it is quartered), never a wait longer than the ordinary
// poll (the caller takes the sooner of the two), and at most seven more
// (nine while quartered) for each renewal that does not come. A poll that
// failed counts as a read that saw nothing (failed), and the caller
// ignores the rhythm while its polls fail: a failing table is polled at
// the ordinary period.
type rhythm struct {
	clk    timing.Clock  // the source of the random read's time (nil: math/rand)
	period time.Duration // the holder's renewal period, as assumed
	eps    time.Duration // how long after a bracket's top its read is sent

	holder   string    // the holder of rvn
	rvn      string    // the RVN the last read showed; "" when none or not held
	lastSend time.Time // the send of the last read
	lo, hi   time.Time // rvn's write landed after lo and before hi; zero lo: no bracket
	between  time.Time // a read at a random time before the next write is due; zero for none
	misses   int       // reads since the next write was due that still showed rvn
	streak   int       // new RVNs found in rhythm since the last loss
	losses   int       // rhythms lost, until a streak of eight forgives them
	off      bool      // turned off: the holder does not renew at period
}

func newRhythm(period time.Duration, clk timing.Clock) *rhythm {
	return &rhythm{clk: clk, period: period, eps: max(time.Millisecond, period/100)}
}

// saw notes a read sent at send that returned at ret, showing the row's
// RVN and holder; held is false for a row free, missing, or of this
// waiter.
func (r *rhythm) saw(send, ret time.Time, rvn, holder string, held bool) {
	defer func() { r.lastSend = send }()
	if !r.between.IsZero() && !send.Before(r.between) {
		r.between = time.Time{}
	}
	if !held || rvn == "" {
		r.rvn, r.lo = "", time.Time{}
		return
	}
	if holder != r.holder {
		// Another holder renews at a period of its own: start afresh.
		r.holder, r.rvn, r.lo, r.streak, r.losses, r.off = holder, "", time.Time{}, 0, 0, false
	}
	switch {
	case rvn == r.rvn:
		if !r.lo.IsZero() && !send.Before(r.due()) {
			r.misses++
		}
		return
	case r.rvn != "" && !r.lastSend.IsZero():
		lo := r.lastSend
		if !r.lo.IsZero() && r.misses == 0 {
			// The write expected a period after the bracketed one: it
			// landed no earlier than a period after that one's start.
			lo = later(lo, r.due())
		}
		if !r.lo.IsZero() {
			// Found where the rhythm looked for it: eight such in a
			// row forgive a loss (a holder paused once).
			if r.streak++; r.streak >= 8 {
				r.losses = 0
			}
		}
		if lo.Before(ret) {
			r.lo, r.hi = lo, ret
			r.planBetween(ret)
		}
	}
	r.rvn, r.misses = rvn, 0
}

// planBetween places one read at a random time between ret and the next
// write's due time, away from both by an eighth of a period: a release,
// or a holder's write at another time, is seen as soon as a waiter
// reading at random times would see it, and the waiters of one lease,
// whose rhythms are alike, do not all read at the same moments.
func (r *rhythm) planBetween(ret time.Time) {
	r.between = time.Time{}
	from, to := ret.Add(r.period/8), r.due().Add(-r.period/8)
	if span := to.Sub(from); span > 0 {
		r.between = from.Add(timing.Between(r.clk, span))
	}
}

// failed notes a read sent at send that failed: it showed nothing, but it
// was made (a read due at the random time is not made again, and one
// after the next write was due counts as a miss, so the rhythm moves on).
func (r *rhythm) failed(send time.Time) {
	if !r.between.IsZero() && !send.Before(r.between) {
		r.between = time.Time{}
	}
	if !r.lo.IsZero() && !send.Before(r.due()) {
		r.misses++
	}
}

// due returns the earliest landing of the write after the bracketed one
// (a period after the bracket's start, less eps for the difference of two
// writes' times to land).
func (r *rhythm) due() time.Time { return r.lo.Add(r.period - r.eps) }

// next returns when the next read should be sent, and false when the
// rhythm has nothing to say (the ordinary period applies). The time is
// never at or before the last read's send: on a clock that does not move
// while a request is under way (a fake clock over a memory store), a read
// due at its own instant would be sent again at once, forever.
func (r *rhythm) next(now time.Time) (time.Time, bool) {
	t, ok := r.plan(now)
	if ok && !r.lastSend.IsZero() && !t.After(r.lastSend) {
		t = r.lastSend.Add(r.eps)
	}
	return t, ok
}

// plan is next, before it is kept after the last read's send.
func (r *rhythm) plan(now time.Time) (time.Time, bool) {
	if r.off || r.lo.IsZero() {
		return time.Time{}, false
	}
	w := r.hi.Sub(r.lo)
	due := r.due()
	parts := 2
	if w > 16*r.eps {
		parts = 4 // a wide bracket: quarter it, for a rhythm within a few renewals
	}
	switch {
	case r.misses == 0 && !r.between.IsZero():
		return r.between, true
	case r.misses < parts-1:
		return due.Add(w * time.Duration(r.misses+1) / time.Duration(parts)), true
	case r.misses == parts-1:
		return due.Add(w + r.eps), true
	case now.Before(due.Add(w + r.period/4)):
		return now.Add(max(r.period/20, r.eps)), true
	}
	// Lost: the holder stopped, or renews at another period.
	r.lo, r.streak = time.Time{}, 0
	if r.losses++; r.losses >= 2 {
		r.off = true
	}
	return time.Time{}, false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
