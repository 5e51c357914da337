package rvnlease

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// maxJoins bounds the joins of one wait in a burst: a waiter whose entry
// vanished (an AWS Java client's acquire rewrites the whole row, queue
// included; a takeover took it out while this process was paused) joins
// again, and after this many joins once a lease at most (a waiter without
// a place for good could be passed over for ever).
const maxJoins = 3

// queued is a waiter's place in the row's queue.
type queued struct {
	lease     keylease.Port
	me        rows.Waiter
	period    time.Duration // the caller's poll period: the head's
	joins     int
	lastJoin  time.Time // when the last join was sent
	place     int       // index of me in the last row seen; -1 when not in it
	prevPlace int       // place before the last row seen
	seenAt    time.Time // when the last row was seen
	last      rows.Item // the last row seen (zero when missing)
	// The pace of the queue: the place and time of the last read that
	// saw it move (zero until the first move after joining, whose wait
	// includes the rest of a hold already under way), and the shortest
	// time per place measured between two such reads since (zero until
	// measured). The shortest, not the mean: a waiter that reads too
	// early costs a read, one that reads too late holds up the hand-over
	// to it.
	movedPlace int
	movedAt    time.Time
	pace       time.Duration
	// headSince is when this waiter last became the queue's head (zero
	// while it is not): a head that has been one for about a stint reads
	// faster, since the hand-over to it is due (headWait).
	headSince time.Time
}

// Queue makes the acquirer fair when its lease has a queue
// (keylease.Port): on finding the lease held by another, it joins
// the row's queue (one write), waits reading at a pace set by its place
// (the head every period, the n-th about when n hand-overs will have
// passed), confirms a hand-over to it at once, and leaves the queue when
// it gives up (LeaveQueue) or acquires otherwise. lease is the lease this
// acquirer will hold, written into a hand-over to it; period is the head's
// poll period. Call it before the first Round. It reports whether the
// acquirer is now fair.
func (a *Acquirer) Queue(lease, period time.Duration) bool {
	a.q = &queued{
		lease:     a.w.port,
		me:        rows.Waiter{Ticket: uuid.NewString(), Identity: a.w.cfg.Identity, Lease: lease},
		period:    period,
		place:     -1,
		prevPlace: -1,
	}
	return true
}

// Position returns the acquirer's index in the row's queue as last seen, and
// -1 when it is not queued.
func (a *Acquirer) Position() int {
	if a.q == nil {
		return -1
	}
	return a.q.place
}

// see notes the row an answer showed, for the queue.
func (q *queued) see(it rows.Item, missing bool, at time.Time) {
	q.seenAt = at
	q.last = rows.Item{}
	if !missing {
		q.last = it
	}
	q.place = -1
	if !missing {
		q.place = record.Place(it, q.me.Ticket)
	}
	prev := q.prevPlace
	q.prevPlace = q.place
	switch {
	case q.place != 0:
		q.headSince = time.Time{}
	case prev != 0:
		q.headSince = at
	}
	switch {
	case q.place < 0:
	case prev < 0 || q.place > prev:
		// Joined (again): the pace is measured from the first move on.
		q.movedAt = time.Time{}
	case q.place == prev:
	case q.movedAt.IsZero():
		q.movedPlace, q.movedAt = q.place, at
	default:
		if per := at.Sub(q.movedAt) / time.Duration(q.movedPlace-q.place); q.pace <= 0 || per < q.pace {
			q.pace = per
		}
		q.movedPlace, q.movedAt = q.place, at
	}
}

// Handed reports whether the watched row is a hand-over to this fair
// acquirer's identity (or, for a Successor, this acquirer's), not yet
// confirmed: a row naming it, whose RVN it did not write, with a ticket in
// HandedTo: this wait's ticket, or one that is no wait of this identity's
// under way (Config.Waits: an earlier wait's, whose place the same
// confirmation serves). A hand-over to another wait of this identity's
// under way (one client may wait for a key several times at once: shared
// holds, an upgrade beside a queued writer) is that wait's. A confirmation
// that failed is sent again a poll later: like a lease that may be taken
// over, a reason for the caller to keep trying past its budget while the
// failures last.
func (a *Acquirer) Handed() bool {
	if a.q != nil && a.Obs.HandedTo != a.q.me.Ticket && a.w.cfg.Waits.Live(a.Obs.HandedTo) {
		return false // to another wait of this identity's, under way
	}
	return (a.q != nil || a.Successor) && a.Obs.Known && !a.Obs.Free() && a.Obs.HandedTo != "" && a.Obs.Holder == a.w.cfg.Identity
}

// Offered reports whether the watched row is this acquirer's to take now,
// by a write conditioned on its RVN: a hand-over to it (Handed), a row
// released with waiters queued (Observation.Queued) whose queue it heads,
// or the row of its own release within its stint (Observation.StintStart),
// which it takes back. Like a hand-over, an offer gives nothing until the
// write lands; the head and the releaser may both try, and at most one
// write conditioned on the RVN lands.
func (a *Acquirer) Offered() bool {
	if !a.Obs.Known || !a.Obs.Queued {
		return a.Handed()
	}
	return a.ownRelease() || a.heads()
}

// heads reports whether this fair acquirer heads the queue of the last
// row seen: its entry is first, or the first entry is a stale one of its
// identity (no wait of its under way: an earlier wait's whose Leave
// failed, or a restart's), which its takeover takes out with its own.
func (a *Acquirer) heads() bool {
	q := a.q
	if q == nil {
		return false
	}
	if q.place == 0 {
		return true
	}
	if len(q.last.Queue) == 0 {
		return false
	}
	head := q.last.Queue[0]
	return head.Identity == a.w.cfg.Identity && !a.w.cfg.Waits.Live(head.Ticket)
}

// ownRelease reports whether the watched row is this identity's release
// within its stint, with waiters queued, and the stint is still on (by
// this acquirer's Stint). A release whose stint has passed is the queue's
// head's to take; its releaser waits.
func (a *Acquirer) ownRelease() bool {
	o := a.Obs
	if !o.Known || !o.Queued || o.Holder != a.w.cfg.Identity || o.StintStart.IsZero() {
		return false
	}
	return a.Stint > 0 && a.w.cfg.Clock.Since(o.StintStart) < a.Stint
}

// wantsToJoin reports whether the acquirer should join the queue now: it
// is fair, the row is held by another, it is not in the queue and has
// joins left (see maxJoins).
func (a *Acquirer) wantsToJoin() bool {
	q := a.q
	if q == nil || !a.Obs.Known || a.Obs.Free() || a.Offered() || q.place >= 0 {
		return false
	}
	// After maxJoins, once a lease: a waiter whose entry keeps vanishing
	// (a Java client's whole-row writes, takeovers while this process was
	// paused) gets a place back within a lease, at one write a lease.
	return q.joins < maxJoins || a.w.cfg.Clock.Since(q.lastJoin) >= q.me.Lease
}

// join appends this acquirer to the row's queue and notes the row the
// answer shows. A failure is logged and costs the place only: the waiter
// keeps polling, and joins again on a later round.
func (a *Acquirer) join(ctx context.Context) {
	a.observe(a.sendJoin(ctx))
}

// readOrJoin is a round's read of a row watched held by another: a waiter
// that wants to join the queue joins instead, since the join's answer
// carries the row as a read's does (the row as it stands, or the row that
// refused the join: released since, or missing).
func (a *Acquirer) readOrJoin(ctx context.Context) answer {
	if !a.wantsToJoin() {
		return a.w.read(ctx)
	}
	ans := a.sendJoin(ctx)
	if ans.err != nil {
		return a.w.read(ctx)
	}
	return ans
}

// errNothingToJoin is sendJoin's answer when the lease has no queue to
// join now.
var errNothingToJoin = errors.New("no queue to join")

// sendJoin sends the join and settles its answer like a read's: the row
// it shows, or the error that taught nothing.
func (a *Acquirer) sendJoin(ctx context.Context) answer {
	cfg, q := a.w.cfg, a.q
	if !q.lease.Joinable(q.me) {
		// Nothing to queue on (a set's first key is free): nothing is
		// sent, it does not count, and the caller reads.
		return answer{err: errNothingToJoin}
	}
	q.joins++
	q.lastJoin = cfg.Clock.Now()
	rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
	start := cfg.Clock.Now()
	it, err := q.lease.Join(rctx, q.me)
	cancel()
	cfg.observe("join", start, err)
	returned := cfg.Clock.Now()
	switch cur, ok := rows.CurrentItem(err); {
	case err == nil:
		cfg.Log.V(1).Info("joined the queue", "place", record.Place(it, q.me.Ticket), "holder", it.HolderIdentity)
		return a.w.settle(it, false, returned)
	case ok:
		return a.w.settle(cur, false, returned)
	case errors.Is(err, resourcelock.ErrNotFound):
		return a.w.settle(rows.Item{}, true, returned)
	case resourcelock.Permanent(err):
		// Waiting cannot fix it (say, a row too large for one more
		// entry); the waiter polls without a place, and says so.
		cfg.Log.Info("joining the queue failed; waiting without a place", "error", err.Error())
		return answer{err: err}
	default:
		cfg.Log.V(1).Info("joining the queue failed; waiting without a place", "error", err.Error())
		return answer{err: err}
	}
}

// Yield is how much later than the watched lease's expiry a queued waiter
// behind the head takes it over: a poll period and its jitter, so that the
// head, which may have first seen the RVN up to a poll later, comes first
// (a takeover takes the entries ahead of the taker out of the queue).
// Waiting longer than the lease is always safe. It is zero for an unfair
// acquirer and the queue's head, and for the second in the queue of a row
// kept for a stint: the head takes such a row at its next poll, so one
// still kept after a lease has a dead head. A caller's wait budget adds
// it.
func (a *Acquirer) Yield() time.Duration {
	if a.q == nil || a.q.place == 0 || (a.q.place == 1 && a.Obs.Queued) {
		return 0
	}
	return a.q.period * 6 / 5
}

// Fair reports whether the acquirer waits in the row's queue (Queue).
func (a *Acquirer) Fair() bool { return a.q != nil }

// expired reports whether the watched lease may be taken over by this
// acquirer at local time now (see Yield).
func (a *Acquirer) expired(now time.Time) bool {
	return a.Obs.Expired(now.Add(-a.Yield()))
}

// watchesExpiry reports whether the acquirer wakes when the watched lease
// may be taken over: unless it is fair and has at least two waiters ahead
// of it, who read more often and take a dead holder over first.
func (a *Acquirer) watchesExpiry() bool {
	return a.q == nil || a.q.place <= 1
}

// maxLeaves bounds the requests of one Leave: each retry follows a queue
// that moved under it.
const maxLeaves = 3

// leave takes this acquirer's entry out of the queue of it, the last row
// seen, best effort: the entry moves when others leave or are handed the
// lease, so a refused Leave is tried again at the entry's new index. It
// returns the row as left, or it unchanged when the entry was not there
// or could not be removed (it then costs the others at most one lease of
// delay, when a hand-over to it goes unconfirmed).
func (a *Acquirer) leave(ctx context.Context, it rows.Item) rows.Item {
	cfg, q := a.w.cfg, a.q
	for range maxLeaves {
		i := record.Place(it, q.me.Ticket)
		if i < 0 {
			if it.HandedTo != "" && it.HolderIdentity == cfg.Identity && !it.Released {
				a.decline(ctx, it)
			}
			break
		}
		rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
		start := cfg.Clock.Now()
		got, err := q.lease.Leave(rctx, q.me.Ticket, i)
		cancel()
		cfg.observe("leave", start, err)
		if err == nil {
			if record.Place(got, q.me.Ticket) >= 0 {
				// A duplicate entry (a Join that landed twice): leave it too.
				it = got
				continue
			}
			q.place = -1
			return got
		}
		if !errors.Is(err, resourcelock.ErrConflict) {
			cfg.Log.V(1).Info("leaving the queue failed; the entry stays", "error", err.Error())
			break
		}
		cur, ok := rows.CurrentItem(err)
		if !ok {
			// A store whose refusals carry no row: read it.
			// (A plain read: it must not settle the writes in doubt,
			// which Abandon may still have to release.)
			rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
			start := cfg.Clock.Now()
			got, err := a.w.port.Get(rctx)
			cancel()
			cfg.observe("get", start, err)
			if err != nil {
				break
			}
			cur = got
		}
		it = cur
	}
	return it
}

// decline passes on a hand-over to this acquirer that it will not confirm
// (it gives up): the row it, handed to it, is handed to the next waiter,
// or marked released, by a release conditioned on the handed RVN and this
// identity, best effort. Nobody held the row meanwhile (a hand-over gives
// nothing), so this only spares the others the wait of a lease; the row's
// data, attributes and TTL stay as the releaser left them (the release
// goes through the lease With KeepData and KeepTTL: see
// keylease.Port.With).
func (a *Acquirer) decline(ctx context.Context, it rows.Item) {
	cfg := a.w.cfg
	lease := a.w.port
	lease = lease.With(keylease.Options{WriteOptions: rows.WriteOptions{KeepData: true, KeepTTL: true}})
	next := func(cur rows.Item) resourcelock.Record {
		rec := a.newRecord(cur)
		rec.Released = true
		return rec
	}
	w := NewHold(cfg, lease).ReleaseQueued(ctx, it, next, false)
	cfg.Log.V(1).Info("declined a hand-over on giving up", "landed", w.Landed)
}

// LeaveQueue takes an acquirer that gives up out of the row's queue, best
// effort (see leave), and declines a hand-over to it, within one request
// timeout even when ctx has ended. A successor (Place.Successor), which
// has no queue, declines a hand-over to it that it last saw. It does
// nothing for an acquirer that is neither queued nor handed the row.
func (a *Acquirer) LeaveQueue(ctx context.Context) {
	cfg := a.w.cfg
	if a.q == nil {
		if a.Successor && a.Handed() {
			ctx, cancel := timing.WithTimeout(context.WithoutCancel(ctx), cfg.Clock, cfg.RequestTimeout)
			defer cancel()
			o := a.Obs
			a.decline(ctx, rows.Item{Record: resourcelock.Record{
				RVN: o.RVN, HolderIdentity: o.Holder, HandedTo: o.HandedTo, LeaseDuration: o.Lease}})
		}
		return
	}
	if a.q.place < 0 && !(a.q.last.HandedTo != "" && a.q.last.HolderIdentity == cfg.Identity && !a.q.last.Released) {
		return
	}
	ctx, cancel := timing.WithTimeout(context.WithoutCancel(ctx), cfg.Clock, cfg.RequestTimeout)
	defer cancel()
	a.leave(ctx, a.q.last)
}

// queueWait returns how long a queued waiter waits before its next read:
// the head's, headWait; behind the head, two thirds of the time the places
// ahead of it but one take at the pace seen (so that it reads at the
// head's pace before its turn comes), at least period and at most the
// lease it watches (a waiter that slept longer, measured, too often slept
// past its turn and held the queue up for a lease); period when the pace
// is not known yet, or the waiter is not queued.
func (a *Acquirer) queueWait(period time.Duration) time.Duration {
	q := a.q
	if q == nil || q.place < 0 {
		return period
	}
	if q.place == 0 {
		return a.headWait(period)
	}
	per := q.pace
	if per > 0 {
		a.Obs.Pace = per
	} else if per = a.Obs.Pace; per <= 0 {
		return period
	}
	limit := a.Obs.Lease
	if limit <= 0 || per > limit/time.Duration(q.place) {
		return max(limit, period) // also keeps the product from overflowing
	}
	// Two thirds of the expected time: a waiter that overslept would
	// hold up the hand-over to it, and slow the queue it paces itself by.
	return max(per*time.Duration(q.place-1)*2/3, period)
}

// headWait returns how long the queue's head waits before its next read:
// period, and a quarter of it while the hand-over to it is due: from the
// holders' stint less one and a half periods to the stint plus one and a
// half after it saw itself become the head. The hand-over comes at the
// first release after the holder's stint, which began when the holder
// first saw waiters queued: at its own acquisition when the head was
// queued by then (a confirmed hand-over names the next waiter at once),
// up to a hold after the head joined otherwise. A holder that keeps the
// lease longer (a long hold, a longer stint) costs the head at most three
// periods of faster reads, never safety.
func (a *Acquirer) headWait(period time.Duration) time.Duration {
	q, stint := a.q, a.Stint
	if !q.headSince.IsZero() && q.last.HeldByReaders() && q.seenAt.Sub(q.headSince) < 2*period {
		// Behind readers, who no longer admit others: the last of them
		// leaves about when its hold ends, which no row tells. The first
		// two periods at the head are read four times as often, so that
		// short reads hand over promptly; long ones cost eight reads.
		return max(period/4, time.Millisecond)
	}
	if stint <= 0 || q.headSince.IsZero() {
		return period
	}
	if head := q.seenAt.Sub(q.headSince); head < stint-period*3/2 || head > stint+period*3/2 {
		return period
	}
	return max(period/4, time.Millisecond)
}

// staleForTakeover reports whether a waiter behind the queue's head, which
// reads rarely, should read before a takeover: its last read is more than
// two head's periods old, so the holder has likely renewed since and the
// takeover would be a wasted write. Safety does not depend on it.
func (a *Acquirer) staleForTakeover(now time.Time) bool {
	return a.q != nil && a.q.place > 0 && now.Sub(a.q.seenAt) > 2*a.q.period
}

// HandOver returns how a holder with identity releases the row cur when
// waiters are queued: the entries to take out of the queue (its own stale
// entries at the head: of its identity, and no wait of its under way, by
// waits; then the first other waiter, which may be another wait of this
// identity's) and that waiter, who
// is handed the lease. With nobody else waiting it returns no waiter and
// a Dequeue that expects the queue to hold only the entries it removes, so
// that a release never lands over a waiter who joined unseen.
func HandOver(cur rows.Item, identity string, waits *Waits) (*rows.Dequeue, *rows.Waiter) {
	d := &rows.Dequeue{}
	for _, w := range cur.Queue {
		d.Tickets = append(d.Tickets, w.Ticket)
		if w.Identity != identity || waits.Live(w.Ticket) {
			return d, &w
		}
	}
	d.All = true
	return d, nil
}

// ReleaseQueued releases the row cur fairly, by writes conditioned on this
// holder's identity and RVN: to
// the first other waiter in the row's queue (see HandOver), naming it
// holder with its lease and ticket, or, with nobody else queued, marked
// released. With keep (the holder's stint is on) and others queued in
// the row, it marks the row released and leaves their entries in the queue:
// a row the releaser may take back, and the queue's head take, by a write
// conditioned on its RVN (see Acquirer.Offered). next returns the
// record of the release (marked released, with a fresh RVN); the hand-over
// changes only who it names. When the write is refused because the queue
// moved (a waiter joined or left since cur was seen), or meets an earlier
// write of this holder that landed unseen, it is written again over the
// row found, up to maxRewrites writes, the last of them a plain release
// that ignores the queue; it returns the Written of the last.
// A write that failed otherwise (throttled, timed out) and did not land is
// not sent again: its Written says so.
//
// The releaser's hold ends before the call, as every release's: the
// hand-over gives the waiter nothing until its own write, conditioned on
// the handed RVN, lands.
func (h *Hold) ReleaseQueued(ctx context.Context, cur rows.Item, next func(cur rows.Item) resourcelock.Record, keep bool) Written {
	identity := h.w.cfg.Identity
	port := h.w.port
	var w Written
	for try := 1; try <= maxRewrites; try++ {
		d, head := HandOver(cur, identity, h.w.cfg.Waits)
		if head != nil && keep {
			// Kept for the stint: only this holder's own stale entries
			// leave the queue's head, so that the first other waiter
			// heads it. (With nobody else seen, the release expects
			// the queue to hold no other entry, as without a stint: a
			// row left kept for a stale entry of this client's would
			// make the others wait a lease.)
			d.Tickets, head = d.Tickets[:len(d.Tickets)-1], nil
			if len(d.Tickets) == 0 {
				d = nil
			}
		}
		if try == maxRewrites {
			// The queue kept moving: release without it, as an unfair
			// holder does, rather than leave the row to run out. The
			// queue's head takes it (Acquirer.Offered).
			d, head = nil, nil
		}
		rec := next(cur)
		if head != nil {
			rec.Released = false
			rec.HolderIdentity, rec.LeaseDuration, rec.HandedTo = head.Identity, head.Lease, head.Ticket
		}
		expect := resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: identity}
		w = h.written(h.w.write(ctx, rec, cur.RVN, func(c context.Context) (rows.Item, error) {
			return port.UpdateDequeue(c, expect, rec, d)
		}), cur)
		switch {
		case w.Landed && w.Item.RVN == rec.RVN:
			return w
		case w.Landed:
			h.w.cfg.Log.V(1).Info("an earlier write had landed; releasing over it", "rvn", w.Item.RVN)
		case w.Err != nil && w.Item.RVN == cur.RVN && errors.Is(w.Cause, resourcelock.ErrConflict):
			// Refused while still ours at cur's RVN: the queue moved
			// under the write.
		default:
			return w
		}
		cur = w.Item
	}
	return Written{Err: errors.New("the row kept showing earlier writes of this holder under the release"), Item: w.Item}
}
