// Package readlease is one shared hold of a key's row, a reader, as a
// keylease.Port: the kernel acquires, holds, renews and releases it with
// the same wait loop and hold as any lease, and the reader's writes are
// the store's changes of the row's readers (rows.Store.Share).
//
// # How the row folds for a reader
//
// Get reads the row and folds it into the Item this reader sees:
//   - A row held by readers that has this reader's entry: the reader's own
//     lease, named by its identity, carrying the entry's RVN and lease and
//     the row's fencing token, with no queue. Its holder's writes (a
//     renewal, a release) are conditioned on the entry's RVN.
//   - A row held by readers with room for another entry and no writer
//     queued ahead of this reader's wait (or ahead of every entry, when it
//     has none): free (released, no queue), so that the kernel joins at
//     once, removing the reader's own queue entry in the join.
//   - Any other row as it is: held by a writer, by readers behind which a
//     writer waits, or released with waiters queued. The reader waits for
//     it like any waiter: it queues (its entry marked a reader's), is
//     handed the row in its turn, or takes it over (ShareTake,
//     conditioned on the row's RVN, taking out the entries ahead of it,
//     which did not take the row) once that RVN has stayed unchanged for
//     the row's lease on this client's clock: the rule for any takeover.
//
// Every answer also times the other readers' entries on this reader's
// clock, from the first answer that showed each RVN; the reader's next
// write drops those unchanged for their lease (Share.Drop), conditioned
// on their RVNs.
//
// # Why that is safe
//
// A reader never excludes another reader, so the only claims to check are
// between readers and a writer. Every change of the readers gives the row
// a fresh RVN, and the row's lease is at least every entry's (see
// rows.Share). A writer takes a row of readers only by a write
// conditioned on a row RVN it watched unchanged for that lease, so after
// the last write of every entry's holder by at least that entry's lease:
// each reader's hold, counted from the send of its last confirmed write,
// has ended by then on its own clock, as a lock's does. A reader joins
// only a row held by readers (or missing, free, unchanged for its lease,
// or handed to its wait by a writer's release, which ended that writer's
// hold), in the write that adds its entry, so never while a writer holds;
// and no reader joins ahead of a queued writer, so the readers that hold
// finish and the writer's wait is bounded (see package lock). An entry
// dropped by another reader's write was unchanged for its lease on that
// reader's clock: its holder's hold had ended, as before any takeover.
//
// # What is not kept
//
// A reader writes no data and no attributes and cannot delete the row.
// Its fencing token is the row's: a begin and a take count an
// acquisition (the readers' token is above every earlier writer's), a
// join does not (a joining reader shares the readers' token).
package readlease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Reader is one read hold of a key's row (see the package doc).
type Reader struct {
	*state
	opts keylease.Options // what its writes carry (With): the TTL
}

var _ keylease.Port = (*Reader)(nil)

// state is what a Reader's views (With) share: the key, the ticket of
// this hold and the row last seen.
type state struct {
	store    rows.Store
	key      resourcelock.Key
	identity string
	ticket   string
	clk      timing.Clock

	mu      sync.Mutex
	last    rows.Item // the row as last seen, unfolded
	missing bool      // the last look found no row
	seen    bool      // a row (or its absence) was seen
	guess   Hint      // what the first join guesses, before any look
	// upgradeable: this reader is its row's one upgradeable reader
	// (rows.Share.Upgradeable); set before the first write.
	upgradeable bool
	// waiter is the ticket of this hold's wait in the row's queue (Join),
	// "" before it joins.
	waiter string
	// others times the other readers' entries of the row (while readers
	// hold it), by ticket, as a waiter times a holder's RVN: from the
	// first answer that showed each RVN, on this reader's clock.
	others map[string]watched
}

// watched is another reader's entry as this reader times it.
type watched struct {
	rvn   string
	since time.Time // when an answer first showed rvn
	lease time.Duration
}

// SetUpgradeable makes this reader the row's one upgradeable reader: its
// join waits while the row has another. Call it before the first write.
func (r *Reader) SetUpgradeable() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.upgradeable = true
}

// IsUpgradeable reports whether SetUpgradeable was called.
func (r *Reader) IsUpgradeable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.upgradeable
}

// Hint is what an earlier hold of the key saw of its row, for the first
// join of a later one (Guess): whether readers held it, and its lease. A
// wrong hint costs a request, never a wrong write.
type Hint struct {
	Readers bool
	Lease   time.Duration
}

// Guess makes the first join, before this hold has seen the row, guess it
// as h says.
func (r *Reader) Guess(h Hint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.guess = h
}

// Hint returns what this hold saw of the row last, for a later hold's
// Guess.
func (r *Reader) Hint() Hint {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen {
		return r.guess
	}
	return Hint{Readers: !r.missing && r.last.HeldByReaders(), Lease: r.last.LeaseDuration}
}

// New returns a read hold of the row at key of store, written as
// identity, with a fresh ticket, timing the other readers' entries on
// clk. It checks the key and the identity and sends no request.
func New(store rows.Store, key resourcelock.Key, identity string, clk timing.Clock) (*Reader, error) {
	if err := keylease.Check(store, key, identity); err != nil {
		return nil, err
	}
	return &Reader{state: &state{store: store, key: key, identity: identity, ticket: uuid.NewString(), clk: clk}}, nil
}

// With returns the hold writing o's TTL with every write.
func (r *Reader) With(o keylease.Options) keylease.Port { return r.WithOptions(o) }

// WithOptions is With, returning the Reader itself.
func (r *Reader) WithOptions(o keylease.Options) *Reader { return &Reader{state: r.state, opts: o} }

// Identity returns the holder identity the reader writes.
func (r *Reader) Identity() string { return r.identity }

// Ticket names this hold: its entry's key in the row's readers.
func (r *Reader) Ticket() string { return r.ticket }

// Describe returns the store's description and the key.
func (r *Reader) Describe() string { return r.store.Describe() + "/" + r.key.String() }

// Key returns the key of the row.
func (r *Reader) Key() resourcelock.Key { return r.key }

// Get reads the row and folds it (see the package doc).
func (r *Reader) Get(ctx context.Context) (rows.Item, error) {
	it, err := r.store.Get(ctx, r.key)
	if errors.Is(err, resourcelock.ErrNotFound) {
		r.mu.Lock()
		r.last, r.missing, r.seen = rows.Item{}, true, true
		r.mu.Unlock()
	}
	if err != nil {
		return rows.Item{}, err
	}
	return r.fold(it), nil
}

// fold notes the row it as the last seen and returns it as this reader
// sees it.
func (r *Reader) fold(it rows.Item) rows.Item {
	now := r.clk.Now()
	r.mu.Lock()
	r.last, r.missing, r.seen = it, false, true
	r.watchLocked(it, now)
	r.mu.Unlock()
	i := record.ReaderPlace(it, r.ticket)
	switch {
	case it.HeldByReaders() && i >= 0:
		e := it.Readers[i]
		own := it
		own.HolderIdentity, own.RVN, own.LeaseDuration = r.identity, e.RVN, e.Lease
		own.AcquisitionID, own.HandedTo = r.ticket, ""
		own.Queue, own.Readers = nil, nil
		return own
	case r.joins(it):
		it.Released, it.Readers, it.Queue = true, nil, nil
		return it
	}
	return it
}

// watchLocked notes the other readers' entries of the row it, shown by an
// answer that returned at now: an entry is timed from the first answer
// that showed its RVN, and forgotten once an answer shows the row without
// it (or not held by readers).
func (r *Reader) watchLocked(it rows.Item, now time.Time) {
	if !it.HeldByReaders() {
		r.others = nil
		return
	}
	next := make(map[string]watched, len(it.Readers))
	for _, e := range it.Readers {
		if e.Ticket == r.ticket {
			continue
		}
		w, ok := r.others[e.Ticket]
		if !ok || w.rvn != e.RVN {
			w = watched{rvn: e.RVN, since: now}
		}
		w.lease = e.Lease
		next[e.Ticket] = w
	}
	r.others = next
}

// silent returns the entries of other readers of the row last seen whose
// RVN this reader has timed unchanged for the entry's lease at now: their
// holds have ended, by the argument of any takeover, and a write of this
// reader's drops them (rows.Share.Drop), the row's upgradeable
// reader's first (which an upgradeable reader leaves to others: its
// changes expect no other). It reports whether the first is the
// upgradeable reader's.
func (r *Reader) silent(now time.Time) (drop []rows.Reader, upgrader bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.HeldByReaders() {
		return nil, false
	}
	for _, e := range r.last.Readers {
		w, ok := r.others[e.Ticket]
		if !ok || w.rvn != e.RVN || now.Sub(w.since) < w.lease {
			continue
		}
		if e.Ticket != r.last.Upgrader {
			drop = append(drop, e)
			continue
		}
		if r.upgradeable {
			continue // its change expects no other upgradeable reader
		}
		drop, upgrader = append([]rows.Reader{e}, drop...), true
	}
	return drop, upgrader
}

// joins reports whether this reader may join the row it now: held by
// readers, with room for another entry (and, for an upgradeable reader,
// no other upgradeable one), and no writer queued ahead of this reader's
// wait (ahead of every entry, when it has none).
func (r *Reader) joins(it rows.Item) bool {
	if !it.HeldByReaders() || len(it.Readers) == 0 || len(it.Readers) >= rows.MaxReaders || (r.IsUpgradeable() && it.Upgrader != "") {
		return false
	}
	_, ok := record.ReadersAhead(it.Queue, r.waiterTicket())
	return ok
}

// waiterTicket returns the ticket of this hold's wait in the queue, ""
// before it joined one.
func (r *Reader) waiterTicket() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiter
}

// joinCondition sets w's condition on the queue of the row it, which the
// reader may join (joins): the readers queued ahead of its wait, whose
// entry the join removes, or of none when it is not queued there.
func (r *Reader) joinCondition(w *rows.Share, it rows.Item) {
	waiter := r.waiterTicket()
	ahead, _ := record.ReadersAhead(it.Queue, waiter)
	w.Ahead, w.Waiter = ahead, ""
	if waiter != "" && record.Place(it, waiter) == ahead {
		w.Waiter = waiter
	}
}

// refusal returns the error of a change the store refused: a Conflict
// carrying the row folded, when the store's carried one.
func (r *Reader) refusal(op string, err error) error {
	cur, ok := rows.CurrentItem(err)
	if !ok {
		return err
	}
	it := r.fold(cur)
	return rows.Conflict(fmt.Sprintf("%s: %s", r.Describe(), op), &it, errors.New(err.Error()))
}

// send writes w and returns the row as this reader sees it.
func (r *Reader) send(ctx context.Context, op string, w rows.Share) (rows.Item, error) {
	it, err := r.store.Share(ctx, r.key, w)
	if err != nil {
		return rows.Item{}, r.refusal(op, err)
	}
	return r.fold(it), nil
}

// share returns the change op of this reader's entry, written with rec
// (its RVN and lease) at the wall-clock time now, over a row whose lease
// is seen. The row gets the entry's new RVN as its own: fresh (the
// kernel's), and the kernel tells its writes by it, a release's too,
// whose entry is gone.
//
// With a TTL, the row's is set from the row's lease after the write, not
// the reader's own (which may be shorter than another reader's): the TTL
// plus how much longer the row's lease is. A change that keeps the row's
// lease then expects the lease it saw (SeenLease), so that it never cuts
// a longer one short.
func (r *Reader) share(op rows.ShareOp, rec resourcelock.Record, now time.Time, seen time.Duration) rows.Share {
	t := rec.RenewTime
	if t.IsZero() {
		t = now
	}
	w := rows.Share{
		Op:          op,
		Reader:      rows.Reader{Ticket: r.ticket, Identity: r.identity, Lease: rec.LeaseDuration, RVN: rec.RVN},
		RVN:         rec.RVN, // the row's too: a write whose answer was lost is found by it
		Time:        t,
		Expires:     r.opts.At(now).Expires,
		Upgradeable: r.IsUpgradeable() && op != rows.ShareRenew,
	}
	rowLease := rec.LeaseDuration // a begin's, a take's
	switch op {
	case rows.ShareJoin:
		w.SeenLease, rowLease = seen, max(seen, rec.LeaseDuration)
	case rows.ShareRenew, rows.ShareLeave, rows.ShareEnd:
		if r.opts.TTL > 0 {
			w.SeenLease = seen
		}
		rowLease = seen
	}
	if r.opts.TTL > 0 && w.Expires.After(now) {
		w.Expires = w.Expires.Add(max(rowLease-rec.LeaseDuration, 0))
	}
	if op != rows.ShareBegin && op != rows.ShareTake {
		w.Drop, w.DropsUpgrader = r.silent(r.clk.Now())
	}
	return w
}

// lastLease returns the row's lease as last seen.
func (r *Reader) lastLease() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last.LeaseDuration
}

// Create joins the row as a reader: it begins a read hold on a row last
// seen missing or free, and joins one last seen held by readers (or not
// seen yet). A guess the row refuses, because it is in the other state,
// is followed at once by the other write, once.
func (r *Reader) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	if rec.HolderIdentity != "" && rec.HolderIdentity != r.identity {
		return rows.Item{}, fmt.Errorf("%w: record names holder %q but this reader's identity is %q", dynalease.ErrInvalid, rec.HolderIdentity, r.identity)
	}
	r.mu.Lock()
	last, missing := r.last, !r.seen || r.missing
	if !r.seen && r.guess.Readers {
		// Not seen yet: an earlier hold saw readers.
		last.HolderIdentity, last.LeaseDuration, missing = rows.ReadersHolder, r.guess.Lease, false
	}
	r.mu.Unlock()
	for try := 0; ; try++ {
		var w rows.Share
		if missing || !last.HeldByReaders() {
			w = r.share(rows.ShareBegin, rec, time.Now(), 0)
		} else {
			w = r.share(rows.ShareJoin, rec, time.Now(), last.LeaseDuration)
			r.joinCondition(&w, last)
		}
		it, err := r.store.Share(ctx, r.key, w)
		switch {
		case err == nil:
			return r.fold(it), nil
		case try > 0:
		case errors.Is(err, resourcelock.ErrNotFound):
			// Deleted since it was seen: begin on the missing row.
			missing = true
			continue
		case errors.Is(err, resourcelock.ErrConflict):
			// Refused on a row that takes the other write (or a join
			// with the lease now seen): send that. A refusal that
			// carries no row is read.
			cur, ok := rows.CurrentItem(err)
			if !ok {
				if cur, err = r.store.Get(ctx, r.key); errors.Is(err, resourcelock.ErrNotFound) {
					missing = true
					continue
				} else if err != nil {
					return rows.Item{}, err
				}
			}
			if cur.Free() || r.joins(cur) {
				last, missing = cur, false
				continue
			}
			it := r.fold(cur)
			return rows.Item{}, rows.Conflict(r.Describe()+": join", &it, errors.New("the row is held"))
		}
		if errors.Is(err, resourcelock.ErrNotFound) {
			return rows.Item{}, err
		}
		return rows.Item{}, r.refusal("join", err)
	}
}

// Update writes this reader's entry when the row satisfies expect: its
// holder's renewal (a new entry RVN) or release (the entry removed),
// conditioned on the entry's RVN; or, with no holder expected, a takeover
// of the row at its RVN (ShareTake), taking out the queue's head seen
// with that RVN.
func (r *Reader) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	now := time.Now()
	if expect.HolderIdentity == "" {
		w := r.share(rows.ShareTake, rec, now, 0)
		w.Expect = expect.RVN
		r.mu.Lock()
		if r.waiter == "" && r.last.RVN == expect.RVN && r.last.HandedTo == "" && len(r.last.Queue) > 0 {
			// A reader that waits unqueued (an unfair client's) takes
			// out the head only: it read more often than this reader
			// and did not take the row (most likely dead). The writers
			// behind keep their places, and hold new readers back. (A
			// queued reader's takeover names the entries it takes out:
			// UpdateDequeue; a hand-over's confirmation takes none.)
			w.Dequeue = []string{r.last.Queue[0].Ticket}
		}
		r.mu.Unlock()
		return r.send(ctx, "take", w)
	}
	if expect.HolderIdentity != r.identity {
		return rows.Item{}, fmt.Errorf("%w: a reader's own write expects its identity %q, not %q", dynalease.ErrInvalid, r.identity, expect.HolderIdentity)
	}
	if r.handedToMe(expect.RVN) {
		return r.decline(ctx, expect, rec, nil)
	}
	if !rec.Released {
		return r.renew(ctx, expect.RVN, rec, now)
	}
	return r.leave(ctx, expect.RVN, rec, now)
}

// maxLeaves bounds the writes of one release: each one after the first
// follows the other readers, who came or went since the row was seen.
const maxLeaves = 3

// leave removes this reader's entry at rvn: an end when it was the row's
// only entry as last seen, a leave otherwise, and again with the row
// found while the row refuses the guess only. A refusal that finds the
// row at this leave's own RVN is its earlier attempt, landed (the SDK
// sent it again): the release is done.
func (r *Reader) leave(ctx context.Context, rvn string, rec resourcelock.Record, now time.Time) (rows.Item, error) {
	r.mu.Lock()
	entries, seen := len(r.last.Readers), r.last.LeaseDuration
	r.mu.Unlock()
	for try := 1; ; try++ {
		w := r.share(rows.ShareLeave, rec, now, seen)
		if entries-len(w.Drop) <= 1 {
			// The last entry, with the silent ones dropped: the row is
			// released.
			w.Op = rows.ShareEnd
		}
		w.Expect = rvn
		it, err := r.store.Share(ctx, r.key, w)
		if err == nil {
			return r.fold(it), nil
		}
		if !errors.Is(err, resourcelock.ErrConflict) {
			return rows.Item{}, r.refusal("leave", err)
		}
		cur, ok := rows.CurrentItem(err)
		if !ok {
			// A refusal that carries no row: read it.
			var rerr error
			if cur, rerr = r.store.Get(ctx, r.key); rerr != nil {
				return rows.Item{}, err
			}
		}
		if cur.RVN == w.RVN {
			r.fold(cur)
			cur.HolderIdentity, cur.Released, cur.Queue, cur.Readers = r.identity, true, nil, nil
			return cur, nil
		}
		it = r.fold(cur) // and the others' entries as they stand
		if i := record.ReaderPlace(cur, r.ticket); try >= maxLeaves || !cur.HeldByReaders() || i < 0 || cur.Readers[i].RVN != rvn {
			return rows.Item{}, rows.Conflict(r.Describe()+": leave", &it, errors.New(err.Error()))
		}
		entries, seen = len(cur.Readers), cur.LeaseDuration
	}
}

// renew gives this reader's entry at rvn the RVN of rec, and again with
// the row's lease as found while the row refuses only the lease it
// expected (SeenLease: a longer reader joined since it was seen).
func (r *Reader) renew(ctx context.Context, rvn string, rec resourcelock.Record, now time.Time) (rows.Item, error) {
	seen := r.lastLease()
	for try := 1; ; try++ {
		w := r.share(rows.ShareRenew, rec, now, seen)
		w.Expect = rvn
		it, err := r.store.Share(ctx, r.key, w)
		if err == nil {
			return r.fold(it), nil
		}
		cur, ok := rows.CurrentItem(err)
		i := record.ReaderPlace(cur, r.ticket)
		leaseMoved := w.SeenLease != 0 && cur.LeaseDuration != seen
		if try >= maxLeaves || !ok || !cur.HeldByReaders() || i < 0 || cur.Readers[i].RVN != rvn || !(leaseMoved || len(w.Drop) > 0) {
			return rows.Item{}, r.refusal("renew", err)
		}
		// Still this reader's entry: refused for the lease it expected
		// (a longer reader joined) or an entry it dropped (renewed since,
		// or gone). Again, over the row as it stands.
		r.fold(cur)
		seen = cur.LeaseDuration
	}
}

func (r *Reader) cannot(what string) error {
	return fmt.Errorf("%w: a reader of %s cannot %s", dynalease.ErrInvalid, r.Describe(), what)
}

// UpdateDequeue is Update; a takeover (a hand-over to this reader's wait
// confirmed, a row kept for a stint whose queue it heads, a silent holder
// waited out) takes d's tickets out of the queue, which must begin with
// them. A reader's own writes ignore the queue (a release that would hand
// over to nobody expects no waiter; a reader's leaves any waiter in
// place): with them, d may name no ticket.
func (r *Reader) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	if expect.HolderIdentity == r.identity && r.handedToMe(expect.RVN) {
		return r.decline(ctx, expect, rec, d)
	}
	if d == nil || len(d.Tickets) == 0 {
		return r.Update(ctx, expect, rec)
	}
	if expect.HolderIdentity != "" || d.All {
		return rows.Item{}, r.cannot("take waiters out of the queue with its own write")
	}
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	w := r.share(rows.ShareTake, rec, time.Now(), 0)
	w.Expect, w.Dequeue = expect.RVN, d.Tickets
	return r.send(ctx, "take", w)
}

// decline passes on a hand-over to this reader's wait that it will not
// confirm (it gives up): the row is no readers' but a handed record,
// released or handed on by a record's write conditioned on this identity
// and the handed RVN, as a writer's wait declines one.
func (r *Reader) decline(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	opts := r.opts.WriteOptions
	opts.Dequeue = d
	it, err := r.store.Update(ctx, r.key, expect, rec, opts)
	if err != nil {
		return rows.Item{}, r.refusal("decline", err)
	}
	r.fold(it)
	return it, nil
}

// handedToMe reports whether the row last seen, at rvn, is a hand-over to
// this reader's identity not yet confirmed (not a row of readers).
func (r *Reader) handedToMe(rvn string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last.RVN == rvn && !r.last.HeldByReaders() && !r.last.Released && r.last.HandedTo != "" && r.last.HolderIdentity == r.identity
}

// Join appends this hold's wait to the row's queue, marked a reader's
// (rows.Waiter.Shared): readers queued ahead of every writer join
// a row of readers, and a writer's release sees the wait and hands the row
// over to it in its turn, as to any waiter.
func (r *Reader) Join(ctx context.Context, w rows.Waiter) (rows.Item, error) {
	w.Shared = true
	r.mu.Lock()
	r.waiter = w.Ticket
	last, seen := r.last, r.seen
	r.mu.Unlock()
	if seen && record.Place(last, w.Ticket) >= 0 {
		// Already queued (the kernel saw the row folded free, without
		// its queue): no second entry, the row as last seen.
		return r.fold(last), nil
	}
	it, err := r.store.Join(ctx, r.key, w)
	if err != nil {
		return rows.Item{}, r.refusal("queue", err)
	}
	return r.fold(it), nil
}

// Leave takes this hold's wait out of the queue.
func (r *Reader) Leave(ctx context.Context, ticket string, index int) (rows.Item, error) {
	it, err := r.store.Leave(ctx, r.key, ticket, index)
	if err != nil {
		return rows.Item{}, r.refusal("leave the queue", err)
	}
	return r.fold(it), nil
}

// Joinable reports true: a reader that waits queues.
func (r *Reader) Joinable(rows.Waiter) bool { return true }

// Remove refuses: the row is shared.
func (r *Reader) Remove(context.Context, resourcelock.Precondition) error {
	return r.cannot("delete the row")
}

// Fence returns the row as this reader last saw it, its token the hold of
// readers': without a request when the row has one, and otherwise (a hold
// begun on a missing row, or on a row whose counter ran out) after giving
// the hold a new fencing generation (Store.Fence, conditioned on the row
// still being that hold's: ReadersHolder and the hold's acquisition ID),
// so that its token is above every earlier one. Readers that joined the
// hold before it was fenced may then hold two tokens of one hold, both
// above every earlier writer's.
func (r *Reader) Fence(ctx context.Context, acquisitionID string) (rows.Item, error) {
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	if acquisitionID != r.ticket {
		return rows.Item{}, fmt.Errorf("%s: fence: %w: another acquisition", r.Describe(), resourcelock.ErrConflict)
	}
	if !rows.NeedsFence(last.Record) || !last.HeldByReaders() || last.AcquisitionID == "" {
		return r.fold(last), nil
	}
	it, err := r.store.Fence(ctx, r.key, rows.ReadersHolder, last.AcquisitionID)
	if err != nil {
		return rows.Item{}, r.refusal("fence", err)
	}
	return r.fold(it), nil
}

// CanFence reports whether the store keeps fencing generations.
func (r *Reader) CanFence() bool { return r.store.CanFence() }
