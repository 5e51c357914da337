package readlease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// ErrEntryGone is the refusal of an upgrade's write on a row that no longer
// holds the upgrading reader's entry: the reader's hold is lost (a writer
// took the row, or its entry was taken over), and an upgrade is no longer
// without a release; waiting cannot fix it.
var ErrEntryGone = fmt.Errorf("%w: the upgrading reader's entry is gone from the row", resourcelock.ErrPermanent)

// Upgrade is a reader's way to the writer of its key without releasing:
// the key's lease (the writer's), folded so that a row held by readers
// whose only entry is this reader's is free to it, and taken by a write
// conditioned on that row's RVN. Any other row is as the key's lease sees
// it: the upgrade waits, in the key's queue, for the other readers, as a
// writer does, and takes a row of silent readers over after their lease.
//
// The other readers are timed apart from the upgrading reader's own
// writes: a row of readers with the reader's entry and others shows the
// kernel an RVN of the other entries alone (othersRVN: their tickets and
// RVNs, and the row's lease), which the reader's heartbeats do not
// change. So the upgrade takes a row over once the other entries have
// stayed unchanged for the row's lease on this clock, however often the
// reader renews meanwhile; its takeover is conditioned on the row's RVN as
// last seen with those entries (and sent again, once, on the row a refusal
// shows when only the reader's own write came between).
//
// Safety: the write that makes this reader the writer lands only on the
// row as read, holding no entry but its own: every other reader released
// (removed its own entry, after its last act as a reader) or was taken
// over after its lease, and no writer holds a row held by readers. A
// takeover lands only on a row whose other entries carry the RVNs the
// upgrade watched unchanged for the row's lease (at least each entry's),
// counted from when an answer first showed them: each of those readers
// wrote its entry last before that answer, and its hold, counted from
// that write's send, ended before the takeover, by the argument of any
// takeover. The reader's own hold lasts until its caller ends it, after
// the write.
type Upgrade struct {
	port keylease.Port // the key's lease, as the writer writes it
	*upgrading
}

var _ keylease.Port = (*Upgrade)(nil)

// upgrading is what an Upgrade's views (With) share.
type upgrading struct {
	r     *Reader
	mu    sync.Mutex
	last  rows.Item           // the row last seen, unfolded
	wrote map[string]struct{} // the RVNs of the records it sent
}

// sending notes the RVN of a record the upgrade is about to send.
func (u *Upgrade) sending(rec resourcelock.Record) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.wrote == nil {
		u.wrote = map[string]struct{}{}
	}
	u.wrote[rec.RVN] = struct{}{}
}

// Wrote reports whether rvn is the RVN of a record the upgrade sent: a row
// carrying it was written by the upgrade (a takeover, or a release of
// one that the kernel abandons).
func (u *Upgrade) Wrote(rvn string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.wrote[rvn]
	return ok
}

// NewUpgrade returns the upgrade of r over port, the key's lease.
func NewUpgrade(port keylease.Port, r *Reader) *Upgrade {
	return &Upgrade{port: port, upgrading: &upgrading{r: r}}
}

// holds reports whether it is a row of readers with the upgrading
// reader's entry.
func (u *Upgrade) holds(it rows.Item) bool {
	return it.HeldByReaders() && record.ReaderPlace(it, u.r.ticket) >= 0
}

// alone reports whether it is a row of readers whose only entry is the
// upgrading reader's.
func (u *Upgrade) alone(it rows.Item) bool {
	return it.HeldByReaders() && len(it.Readers) == 1 && it.Readers[0].Ticket == u.r.ticket
}

// fold notes the row it and returns it as the upgrade sees it: free when
// the reader's entry is its only one; with the RVN of the other entries
// (othersRVN) when it has others too.
func (u *Upgrade) fold(it rows.Item) rows.Item {
	u.mu.Lock()
	u.last = it
	u.mu.Unlock()
	switch {
	case u.alone(it):
		it.Released, it.Queue, it.Readers = true, nil, nil
	case u.holds(it):
		it.RVN = u.othersRVN(it)
	}
	return it
}

// othersPrefix begins every RVN othersRVN makes: no RVN a write stores
// (a UUID) begins so.
const othersPrefix = "readers-besides-upgrader:"

// othersRVN returns the RVN under which the upgrade watches a row of
// readers that holds the reader's entry and others: a digest of the other
// entries (ticket and RVN) and the row's lease, which changes with every
// write of another reader and with no write of the upgrading reader's.
func (u *Upgrade) othersRVN(it rows.Item) string {
	h := sha256.New()
	for _, e := range it.Readers {
		if e.Ticket != u.r.ticket {
			h.Write([]byte(e.Ticket))
			h.Write([]byte{0})
			h.Write([]byte(e.RVN))
			h.Write([]byte{0})
		}
	}
	h.Write([]byte(it.LeaseDuration.String()))
	return othersPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// realRVN returns the row's RVN for a takeover conditioned on rvn, an RVN
// the upgrade showed: rvn itself, or, for othersRVN's, the RVN of the row
// last seen with those other entries; ok is false when the row last seen
// no longer has them.
func (u *Upgrade) realRVN(rvn string) (real string, ok bool) {
	if !strings.HasPrefix(rvn, othersPrefix) {
		return rvn, true
	}
	u.mu.Lock()
	last := u.last
	u.mu.Unlock()
	if !u.holds(last) || u.othersRVN(last) != rvn {
		return "", false
	}
	return last.RVN, true
}

// folded returns the answer of a write through the key's lease, its row
// or its refusal's folded.
func (u *Upgrade) folded(it rows.Item, err error) (rows.Item, error) {
	if err == nil {
		if u.holds(it) {
			return u.fold(it), nil
		}
		u.mu.Lock()
		u.last = it
		u.mu.Unlock()
		return it, nil
	}
	cur, ok := rows.CurrentItem(err)
	if !ok {
		return it, err
	}
	f := u.fold(cur)
	return rows.Item{}, rows.Conflict(u.Describe()+": upgrade", &f, errors.New(err.Error()))
}

// Get reads the row and folds it.
func (u *Upgrade) Get(ctx context.Context) (rows.Item, error) {
	it, err := u.port.Get(ctx)
	if err != nil {
		return rows.Item{}, err
	}
	return u.fold(it), nil
}

// Create takes the row last seen with the reader's entry alone, by a write
// conditioned on its RVN (a takeover, which counts an acquisition and
// drops the entry). A row without the entry (missing, free, another's) is
// refused with ErrEntryGone, without a request: taking it would not be an
// upgrade.
//
// A refusal that shows the reader's entry alone (a row not seen yet, or
// the reader's own heartbeat between the read and the write) is followed
// at once by the write on the row it shows, once.
func (u *Upgrade) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	u.mu.Lock()
	last := u.last
	u.mu.Unlock()
	if !u.alone(last) && u.seen(last) {
		return rows.Item{}, ErrEntryGone
	}
	for try := 0; ; try++ {
		var it rows.Item
		var err error
		u.sending(rec)
		if u.alone(last) {
			it, err = u.port.Update(ctx, resourcelock.Precondition{RVN: last.RVN}, rec)
		} else {
			it, err = u.port.Create(ctx, rec) // not seen yet: refused unless the row is free
		}
		cur, ok := rows.CurrentItem(err)
		if err == nil && !u.alone(last) {
			// A free row created before this upgrade saw any: the reader's
			// entry was gone. Refused; the kernel releases the row it
			// wrote, as any write in doubt of a wait that gives up.
			return rows.Item{}, ErrEntryGone
		}
		if err == nil || try > 0 || !ok || !u.alone(cur) {
			return u.folded(it, err)
		}
		last = cur
	}
}

// seen reports whether it is a row the upgrade has read (its zero value
// before the first look).
func (u *Upgrade) seen(it rows.Item) bool { return it.RVN != "" }

// refusesTakeover reports whether expect is a takeover (an Update
// expecting no holder) of a row last seen without the reader's entry:
// refused like such a Create.
func (u *Upgrade) refusesTakeover(expect resourcelock.Precondition) bool {
	if expect.HolderIdentity != "" {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last.RVN == expect.RVN && !u.holds(u.last)
}

// Update writes through the key's lease; a takeover of a row without the
// reader's entry is refused with ErrEntryGone (see Create).
func (u *Upgrade) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	return u.UpdateDequeue(ctx, expect, rec, nil)
}

// UpdateDequeue writes through the key's lease, refusing as Update does.
// A takeover of a row watched under othersRVN is conditioned on the row's
// RVN as last seen with those other entries, and sent again, once, on the
// row its refusal shows when that row still has them (the reader's own
// heartbeat came between the read and the write).
func (u *Upgrade) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	if u.refusesTakeover(expect) {
		return rows.Item{}, ErrEntryGone
	}
	watched := expect.RVN
	for try := 0; ; try++ {
		real, ok := u.realRVN(watched)
		if !ok {
			// The row changed since the kernel watched it: refused as a
			// write on it would be, with the row last seen.
			u.mu.Lock()
			last := u.last
			u.mu.Unlock()
			f := u.fold(last)
			return rows.Item{}, rows.Conflict(u.Describe()+": upgrade", &f, errors.New("the other readers changed since they were watched"))
		}
		expect.RVN = real
		u.sending(rec)
		var it rows.Item
		var err error
		if d == nil {
			it, err = u.port.Update(ctx, expect, rec)
		} else {
			it, err = u.port.UpdateDequeue(ctx, expect, rec, d)
		}
		if err == nil || try > 0 || real == watched || !errors.Is(err, resourcelock.ErrConflict) {
			return u.folded(it, err)
		}
		// Refused: a row that still has the other entries as watched
		// (only the reader's own write came between) is taken at once.
		cur, found := rows.CurrentItem(err)
		if !found {
			if cur, err = u.port.Get(ctx); err != nil {
				return rows.Item{}, err
			}
		}
		if u.fold(cur).RVN != watched {
			return u.folded(it, rows.Conflict(u.Describe()+": upgrade", &cur, errors.New("the other readers changed since they were watched")))
		}
	}
}

// Join queues through the key's lease.
func (u *Upgrade) Join(ctx context.Context, w rows.Waiter) (rows.Item, error) {
	return u.folded(u.port.Join(ctx, w))
}

// Leave leaves the queue through the key's lease.
func (u *Upgrade) Leave(ctx context.Context, ticket string, index int) (rows.Item, error) {
	return u.folded(u.port.Leave(ctx, ticket, index))
}

// Joinable reports true: the upgrade waits in the key's queue.
func (u *Upgrade) Joinable(w rows.Waiter) bool { return u.port.Joinable(w) }

// Remove deletes through the key's lease.
func (u *Upgrade) Remove(ctx context.Context, expect resourcelock.Precondition) error {
	return u.port.Remove(ctx, expect)
}

// Fence fences through the key's lease.
func (u *Upgrade) Fence(ctx context.Context, acquisitionID string) (rows.Item, error) {
	return u.port.Fence(ctx, acquisitionID)
}

// CanFence reports whether the key's lease can fence.
func (u *Upgrade) CanFence() bool { return u.port.CanFence() }

// With returns the upgrade writing o, sharing what it saw.
func (u *Upgrade) With(o keylease.Options) keylease.Port {
	return &Upgrade{port: u.port.With(o), upgrading: u.upgrading}
}

// Identity returns the holder identity the upgrade writes.
func (u *Upgrade) Identity() string { return u.port.Identity() }

// Describe names the key's lease.
func (u *Upgrade) Describe() string { return fmt.Sprintf("%s (upgrade)", u.port.Describe()) }
