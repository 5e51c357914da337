package rvnlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Found is what one round of an Acquirer found.
type Found int

const (
	// Unknown: the requests failed; nothing was learned. Result.Err tells
	// why.
	Unknown Found = iota
	// Ours: a write of this acquirer is confirmed in the row, with
	// validity left. Result.Item and Result.Sent describe it.
	Ours
	// Others: the row is someone else's, released or missing; Acquirer.Obs
	// holds what was seen.
	Others
)

// Result is the outcome of one round.
type Result struct {
	Found Found
	// Item is the row as confirmed (Ours).
	Item rows.Item
	// Sent is the local time just before the confirmed write was sent
	// (Ours): the lease's validity counts from it.
	Sent time.Time
	// StintStart is when the winner's stint began (Ours): Sent, or for a row
	// of its own release within its stint taken back, that stint's
	// start (see Hold.ReleaseQueued).
	StintStart time.Time
	// Err is the failure of the round, one that waiting may fix: always
	// set for Unknown (nothing was learned), and set for Others when a
	// write of the round failed for a reason other than its condition
	// (throttled, timed out) although the read that settled it told what
	// the row holds. A failed condition is contention, not a failure.
	Err error
}

// Acquirer runs the acquiring side of the protocol for one lease. It is
// not safe for concurrent use: one loop drives it.
//
// Each Round makes one attempt:
//  1. A row of ours confirmed only after its validity had passed (a write
//     whose answer was lost), or written by an earlier acquirer that this
//     one resumed: renew it with this acquirer's record, conditioned on
//     identity and RVN. With Admit set, a row an earlier acquirer wrote is
//     released instead (through Plain) and won in a later round under
//     this acquirer's rule, since its numbers are that acquirer's.
//  2. No row seen yet, or the row missing or free: create it.
//  3. The row is offered to this acquirer (Offered: a hand-over to it, a
//     kept row whose queue it heads, its own release within its stint),
//     or the watched RVN has stayed unchanged for the holder's lease,
//     counted from when an answer first returned it: take over with a
//     write conditioned on that RVN.
//  4. Otherwise read the row.
//
// A write of step 3 or a read of step 4 that finds the row missing or
// free (a stale offer, a holder that released or deleted the row since
// it was watched) creates it in the same round.
//
// A row that names this acquirer.s identity but carries an RVN it did not
// write is waited out like any other.
type Acquirer struct {
	w         writer
	newRecord func(cur rows.Item) resourcelock.Record
	// Obs is what this acquirer has watched of another holder.s row. A
	// caller may seed it from an earlier acquirer of the same key, and
	// keep it for a later one.
	Obs   Observation
	late  rows.Item // ours, confirmed after its validity passed
	tried string    // the RVN of the last takeover sent
	q     *queued   // the place in the row's queue; nil unless fair (Queue)
	fed   *answer   // the row as a caller's read showed it (Feed), for the next round
	// OnlyIfExists makes a missing row an error (the acquirer takes only
	// existing, released rows), not a free lease.
	OnlyIfExists bool
	// Stint is how long holders keep the lease, taking it back after
	// their own releases, before a release hands it to the queue's head
	// (see Place.Stint): this acquirer takes back a row of its own
	// release within it, and, heading a queue, reads faster when the
	// hand-over is due. Zero for none.
	Stint time.Duration
	// Admit, when set, is asked about each row a round finds held by
	// others or refusing its write (none when missing); an error ends the
	// round with it: the kind's own rule that waiting cannot satisfy (see
	// Place.Admit).
	Admit func(it rows.Item, missing bool) error
	// Successor makes an acquirer that waits in no queue take a hand-over
	// to its identity as an offer (see Handed): an election's candidate,
	// to whom a leader hands the lease by name (Place.Successor).
	Successor bool
	// Plain, when set, is the lease without what a win writes besides its
	// record (rows.WriteOptions.Numbers and Below): the releases
	// of rows this acquirer never hands out (a fence that failed, a row an
	// earlier acquirer left, Abandon) write through it, so that they leave
	// the row's numbers as the write that took it set them. The lease
	// itself when nil.
	Plain keylease.Port
}

// NewAcquirer returns an acquirer of lease. newRecord
// returns the record of each write, with a fresh RVN; cur is the row of
// ours being renewed, or the zero Item for a create or a takeover. cfg may
// be shared, and must not change.
func NewAcquirer(cfg *Config, lease keylease.Port, newRecord func(cur rows.Item) resourcelock.Record) *Acquirer {
	return &Acquirer{w: writer{cfg: cfg, port: lease}, newRecord: newRecord}
}

// Round makes one attempt. It returns an error, and no Result, for a
// failure that waiting cannot fix (see resourcelock.Permanent), and for a
// missing row when OnlyIfExists.
func (a *Acquirer) Round(ctx context.Context) (Result, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		ans := a.attempt(ctx)
		if ans.err != nil {
			if resourcelock.Permanent(ans.err) {
				return Result{}, ans.err
			}
			return Result{Found: Unknown, Err: ans.err}, nil
		}
		if ans.landed {
			if res, settled := a.landed(ctx, ans); settled {
				return res, nil
			}
			continue
		}
		if ans.missing && a.OnlyIfExists {
			return Result{}, fmt.Errorf("%w: the row does not exist and only an existing one may be taken", resourcelock.ErrNotFound)
		}
		if a.Admit != nil && ans.err == nil {
			if err := a.Admit(ans.item, ans.missing); err != nil {
				return Result{}, err
			}
		}
		return Result{Found: Others, Err: ans.failure()}, nil
	}
}

// landed settles a round whose write (or an earlier one of this identity)
// is found in the row: the round's Result, and true; or false when the
// row must be written again first (a row confirmed after its validity, or
// left by an earlier acquirer), which the next attempt of the round does.
// An Ours result counts its validity from the confirmed write's send.
func (a *Acquirer) landed(ctx context.Context, ans answer) (Result, bool) {
	if ans.earlier && a.Admit != nil {
		// A write of an earlier acquirer holds the row, with
		// that acquirer's numbers (however long ago it was
		// sent): release it, and win the row under this one's
		// rule (Admit, Below) in a later round. Never renew it
		// with this one's numbers, which its rule did not admit.
		if err := a.releaseOwn(ctx, ans.item); err != nil {
			// Still the earlier acquirer's: found again, it is
			// released again, not waited out as a stranger's.
			a.w.attempts.addInherited(ans.item.RVN, ans.sent)
			return Result{Found: Unknown, Err: fmt.Errorf("releasing a row an earlier acquirer of this identity left: %w", err)}, true
		}
		a.late, a.Obs = rows.Item{}, Observation{Pace: a.Obs.Pace}
		return Result{}, false
	}
	if !a.w.cfg.Clock.Now().Before(ans.sent.Add(a.w.cfg.Validity)) {
		// Confirmed after its validity passed: renew at once
		// rather than hand out a lease that is already over. (An
		// answer that slow took a whole validity: no busy loop.)
		a.late = ans.item
		return Result{}, false
	}
	if ans.earlier {
		// A write of an earlier, abandoned acquirer (its answer
		// lost) holds the row: ours, but with that call's record.
		// Write this one's over it before handing it out.
		a.late = ans.item
		return Result{}, false
	}
	a.late = rows.Item{}
	stint := ans.sent
	if o := a.Obs; a.tried == o.RVN && o.Known && o.Holder == a.w.cfg.Identity && !o.StintStart.IsZero() {
		// Its own release kept for its stint, taken back: the stint
		// goes on from where it began, however late the answer came (a
		// take-back sent within the stint and answered after it must
		// not begin a new one).
		stint = o.StintStart
	}
	a.Obs = Observation{Pace: a.Obs.Pace}
	it := ans.item
	if a.q != nil {
		// Acquired other than by a hand-over (a free row, a
		// takeover): the entry left behind would be handed the
		// lease later, and cost the others a lease of delay.
		// The hold is the write's: only the queue is taken from
		// the row as left (a set's is a fold, partly of older
		// reads).
		it.Queue = a.leave(ctx, it).Queue
	}
	return Result{Found: Ours, Item: it, Sent: ans.sent, StintStart: stint}, true
}

func (a *Acquirer) attempt(ctx context.Context) answer {
	port, identity := a.w.port, a.w.cfg.Identity
	now := a.w.cfg.Clock.Now()
	fed := a.fed
	a.fed = nil
	if fed != nil && fed.landed {
		return *fed
	}
	switch {
	case a.late.RVN != "":
		cur := a.late
		rec := a.newRecord(cur)
		expect := resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: identity}
		ans := a.w.write(ctx, rec, cur.RVN, func(c context.Context) (rows.Item, error) { return port.Update(c, expect, rec) })
		if !ans.landed && ans.err == nil {
			a.late = rows.Item{}
			if !ans.missing && ans.item.RVN == cur.RVN && !ans.item.Released {
				// Still our row at the old RVN: the renewal did not land.
				// Renew it again next round.
				a.late = ans.item
				return answer{err: fmt.Errorf("renewal of a row confirmed late did not land: %w", ans.cause)}
			}
			a.observe(ans)
		}
		return ans
	case !a.Obs.Known || a.Obs.Free():
		return a.queued(ctx, a.create(ctx))
	case a.Offered():
		// Retried every round (a poll apart once tried: TakeoverDue).
		a.w.cfg.Log.V(1).Info("the lease is offered to this waiter; taking it", "rvn", a.Obs.RVN, "released", a.Obs.Released)
		// An offer that was stale (a kept row seen before, since freed or
		// deleted) is refused, and the free row taken in this round.
		return a.orCreate(ctx, a.takeover(ctx))
	case a.expired(now) && !a.staleForTakeover(now):
		a.w.cfg.Log.V(1).Info("lease unchanged for its duration; taking over", "rvn", a.Obs.RVN, "holder", a.Obs.Holder)
		// A holder that released (a new RVN) or deleted the row since it
		// was watched makes the takeover fail: the free row is taken in
		// this round, not reported as taken meanwhile.
		return a.orCreate(ctx, a.takeover(ctx))
	default:
		var ans answer
		if fed != nil {
			ans = *fed
		} else {
			ans = a.readOrJoin(ctx)
		}
		a.observe(ans)
		// Released or deleted since the last look: taken in this round
		// rather than the next.
		return a.orCreate(ctx, ans)
	}
}

// orCreate finishes a round with its write's or read's answer (ans,
// already observed): one that did not land and found the row free
// (missing, unless OnlyIfExists, or released with nobody queued) is
// followed by a create in the same round; any other answer goes on to
// queued.
//
// A row that the acquirer's rule (Admit) refuses ends the round as it is:
// no write would be admitted on it, so none is sent, and Round returns the
// rule's error.
func (a *Acquirer) orCreate(ctx context.Context, ans answer) answer {
	if !ans.landed && ans.err == nil && a.Obs.Free() && !(ans.missing && a.OnlyIfExists) && a.admits(ans) {
		return a.queued(ctx, a.create(ctx))
	}
	return a.queued(ctx, ans)
}

// admits reports whether the acquirer's rule (Admit) admits the row an
// answer that did not land found: true without a rule.
func (a *Acquirer) admits(ans answer) bool {
	return a.Admit == nil || a.Admit(ans.item, ans.missing) == nil
}

// Feed gives the acquirer the row it (none when missing) as a read of the
// caller's returned it at returned, in place of its own read: a
// semaphore's slots are read in one request. The row is settled against
// the writes in doubt and watched as a round's read would; the next Round
// acts on it without reading.
func (a *Acquirer) Feed(it rows.Item, missing bool, returned time.Time) {
	ans := a.w.settle(it, missing, returned)
	// A write of ours found landed is written again with this acquirer's
	// record before it is handed out, as a resumed one is: the caller's
	// read may not carry the whole row (a semaphore's GetMany has no data).
	ans.earlier = ans.earlier || ans.landed
	a.observe(ans)
	a.fed = &ans
}

// Ready reports whether a round would write now on the row last fed or
// seen: a write of ours found landed, a free row, a lease that may be
// taken over, or a hand-over to confirm.
func (a *Acquirer) Ready() bool {
	if a.fed != nil && a.fed.landed {
		return true
	}
	return !a.Obs.Known || a.Obs.Free() || a.expired(a.w.cfg.Clock.Now()) || a.Offered()
}

// takeover writes this acquirer's record over the watched row, conditioned
// on its RVN alone: the takeover of a lease unchanged for its duration, or
// the confirmation of a hand-over to this acquirer.
func (a *Acquirer) takeover(ctx context.Context) answer {
	port := a.w.port
	a.tried = a.Obs.RVN
	rec := a.newRecord(rows.Item{})
	expect := resourcelock.Precondition{RVN: a.Obs.RVN}
	send := func(c context.Context) (rows.Item, error) { return port.Update(c, expect, rec) }
	dequeued := a.q != nil && a.q.place >= 0 && a.q.place < len(a.q.last.Queue)
	if dequeued && !a.mayDequeueAhead() {
		// Live waiters ahead that this write must not take out: they keep
		// their places; this one's entry leaves after the win (landed).
		dequeued = false
	}
	if dequeued {
		// In the queue of the row that carries the RVN taken over: the
		// waiter's entry leaves in the same write, with the entries ahead
		// of it, conditioned on their tickets (see mayDequeueAhead).
		d := &rows.Dequeue{}
		for _, w := range a.q.last.Queue[:a.q.place+1] {
			d.Tickets = append(d.Tickets, w.Ticket)
		}
		send = func(c context.Context) (rows.Item, error) { return a.q.lease.UpdateDequeue(c, expect, rec, d) }
	}
	ans := a.w.write(ctx, rec, expect.RVN, send)
	a.observe(ans)
	if dequeued && !ans.landed && ans.err == nil && !ans.missing && ans.item.RVN == expect.RVN && errors.Is(ans.cause, resourcelock.ErrConflict) {
		// Refused on the queue alone (it moved since the waiter read
		// it): the takeover is still due, with the queue as now seen.
		a.tried = ""
	}
	return ans
}

// mayDequeueAhead reports whether a takeover by this acquirer may take
// the entries ahead of its own out of the queue of the row last seen, with
// its own: none is a wait of this identity's under way (Config.Waits,
// certainly alive), and, for an offer (a hand-over to an earlier wait of
// this identity's, a kept row whose head is one), each is a stale one of
// this identity's. After a lease that ran out, the others' entries ahead
// are most likely dead (they read more often and did not take it over).
func (a *Acquirer) mayDequeueAhead() bool {
	q, identity := a.q, a.w.cfg.Identity
	offered := a.Offered()
	for _, w := range q.last.Queue[:q.place] {
		own := w.Identity == identity
		if own && a.w.cfg.Waits.Live(w.Ticket) || offered && !own {
			return false
		}
	}
	return true
}

// queued finishes a round of a fair acquirer whose answer showed another's
// row: a hand-over to it found by that answer is confirmed at once, and a
// waiter not in the queue joins it. Other answers pass through.
func (a *Acquirer) queued(ctx context.Context, ans answer) answer {
	if a.q == nil || ans.landed || ans.err != nil || !a.admits(ans) {
		return ans // a row the rule refuses is not waited for
	}
	if a.Offered() && a.Obs.RVN != a.tried {
		a.w.cfg.Log.V(1).Info("the lease is offered to this waiter; taking it", "rvn", a.Obs.RVN, "released", a.Obs.Released)
		return a.takeover(ctx)
	}
	if a.wantsToJoin() {
		a.join(ctx)
	}
	return ans
}

func (a *Acquirer) create(ctx context.Context) answer {
	rec := a.newRecord(rows.Item{})
	port := a.w.port
	ans := a.w.write(ctx, rec, "", func(c context.Context) (rows.Item, error) { return port.Create(c, rec) })
	a.observe(ans)
	return ans
}

// observe notes the row an answer showed, when it is not ours.
func (a *Acquirer) observe(ans answer) {
	if ans.landed || ans.err != nil {
		return
	}
	a.observeItem(ans.item, ans.missing, ans.returned)
}

// observeItem notes the row it (none when missing), another's, seen in an
// answer that returned at returned.
func (a *Acquirer) observeItem(it rows.Item, missing bool, returned time.Time) {
	a.Obs.Observe(it, missing, returned)
	if a.q != nil {
		a.q.see(it, missing, returned)
	}
}

// errFencedLate is Fence's answer when the fence landed after the win's
// validity passed: the acquirer renews the row at its next Round.
var errFencedLate = errors.New("fenced after the win's validity passed")

// Fence gives the row of a round that came back Ours a fencing generation
// when it needs one (rows.NeedsFence), and returns the
// result with the fenced row. If fencing fails the row is released at once
// (a write conditioned on this identity and its RVN, best effort, within one
// request timeout even when ctx has ended), so that nobody waits a lease
// for a lock that was never handed out, and the fence's error is returned:
// what to do then (give up, or try again after a poll) is the caller's.
func (a *Acquirer) Fence(ctx context.Context, res Result) (Result, error) {
	cfg := a.w.cfg
	if !rows.NeedsFence(res.Item.Record) {
		return res, nil
	}
	fencer := a.w.port
	rctx, cancel := timing.WithTimeout(ctx, cfg.Clock, cfg.RequestTimeout)
	start := cfg.Clock.Now()
	fenced, err := fencer.Fence(rctx, res.Item.AcquisitionID)
	cancel()
	cfg.observe("fence", start, err)
	if err == nil && !cfg.Clock.Now().Before(res.Sent.Add(cfg.Validity)) {
		// Fenced, but the win's validity passed meanwhile (the fence's
		// answer came late): the next Round renews the row at once.
		a.late = fenced
		return Result{}, errFencedLate
	}
	if err == nil {
		res.Item = fenced
		return res, nil
	}
	rctx, cancel = timing.WithTimeout(context.WithoutCancel(ctx), cfg.Clock, cfg.RequestTimeout)
	rerr := a.releaseOwn(rctx, res.Item)
	cancel()
	if rerr != nil {
		// It may still be ours, or the release may land yet (its answer
		// was lost): a later round that finds the acquiring write's RVN
		// writes over it before taking it (as a write of an earlier
		// acquirer's: conditioned on that RVN, so that of the two in
		// flight, the release and the renewal, one lands at most), and an
		// acquirer that gives up releases it (Abandon). Taking it as it
		// stands would let the release free the row under the new hold
		// (found by the simulator).
		a.w.attempts.addInherited(res.Item.RVN, res.Sent)
		cfg.Log.Info("releasing a row whose fencing failed did not succeed", "error", rerr.Error())
	}
	return Result{}, fmt.Errorf("acquired but could not be given a fencing token: %w", err)
}

// TakeoverDue reports whether the watched lease may be taken over now (or
// was handed to this acquirer) and no takeover of its RVN has been tried
// yet. A lease that ran out while a
// read was under way (or while the process stalled after it) is taken over
// at once, whatever the caller's wait budget; only once per RVN, so a
// takeover that keeps failing waits a poll like any other round.
func (a *Acquirer) TakeoverDue() bool {
	return a.Obs.Known && !a.Obs.Free() && (a.expired(a.w.cfg.Clock.Now()) || a.Offered()) && a.Obs.RVN != a.tried
}

// Pending returns how many writes of this acquirer are in doubt, counting
// a row of ours confirmed late and not renewed yet.
func (a *Acquirer) Pending() int {
	n := a.w.attempts.Len()
	if a.late.RVN != "" {
		n++
	}
	return n
}

// InDoubt returns the writes of this acquirer still in doubt, for a later
// acquirer of the same lease and identity (Resume): a row carrying one of them
// is that identity.s, not a stranger's to wait out.
func (a *Acquirer) InDoubt() Attempts { return a.w.attempts.clone() }

// Resume continues the watch and the writes in doubt of an earlier
// acquirer of the same lease and identity. A row found carrying one of those
// writes is this identity.s, and is written over with this acquirer's record
// before a Round reports it Ours (released and won again, with Admit set:
// see Round).
func (a *Acquirer) Resume(obs Observation, inDoubt Attempts) {
	a.Obs = obs
	a.w.attempts = inDoubt.clone()
	a.w.attempts.inherit()
}

// Abandon is called when the caller gives up acquiring with writes in
// doubt: one may have landed after its answer was lost, leaving a row that
// names this identity and that nobody holds. Each is released, best effort,
// with a write conditioned on the identity and its RVN (a write that did not
// land makes the release fail harmlessly). The requests run under ctx
// without its cancellation, all within one request timeout. It returns how
// many rows it released.
func (a *Acquirer) Abandon(ctx context.Context) int {
	cfg := a.w.cfg
	ctx, cancel := timing.WithTimeout(context.WithoutCancel(ctx), cfg.Clock, cfg.RequestTimeout)
	defer cancel()
	released := 0
	if a.late.RVN != "" {
		// A row of ours confirmed after its validity, not renewed yet.
		if a.releaseOwn(ctx, a.late) == nil {
			a.late = rows.Item{}
			return 1
		}
	}
	for _, at := range a.w.attempts.list {
		if at.released {
			continue
		}
		if a.releaseOwn(ctx, rows.Item{Record: resourcelock.Record{RVN: at.rvn}}) == nil {
			cfg.Log.V(1).Info("released a row whose acquiring write had landed unseen", "rvn", at.rvn)
			released++
			break // at most one of them can be in the row
		}
	}
	return released
}

// releaseOwn marks the row cur released, with a write conditioned on this
// identity and cur's RVN, through Plain: a row this acquirer will not hand
// out (cur carries the row's record when known, its RVN alone otherwise).
func (a *Acquirer) releaseOwn(ctx context.Context, cur rows.Item) error {
	cfg := a.w.cfg
	port := a.Plain
	if port == nil {
		port = a.w.port
	}
	base := cur // the row's record, when known, carries its data over
	if cur.HolderIdentity == "" {
		base = rows.Item{}
	}
	rec := a.newRecord(base)
	rec.Released = true
	expect := resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: cfg.Identity}
	start := cfg.Clock.Now()
	_, err := port.Update(ctx, expect, rec)
	cfg.observe("update", start, err)
	return err
}
