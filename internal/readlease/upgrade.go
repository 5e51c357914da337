package readlease

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
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
// Safety: the write that makes this reader the writer lands only on the
// row as read, holding no entry but its own: every other reader released
// (removed its own entry, after its last act as a reader) or was taken
// over after its lease, and no writer holds a row held by readers. The
// reader's own hold lasts until its caller ends it, after the write.
type Upgrade struct {
	port keylease.Port // the key's lease, as the writer writes it
	*upgrading
}

var _ keylease.Port = (*Upgrade)(nil)

// upgrading is what an Upgrade's views (With) share.
type upgrading struct {
	r    *Reader
	mu   sync.Mutex
	last resourcelock.Item // the row last seen, unfolded
}

// NewUpgrade returns the upgrade of r over port, the key's lease.
func NewUpgrade(port keylease.Port, r *Reader) *Upgrade {
	return &Upgrade{port: port, upgrading: &upgrading{r: r}}
}

// holds reports whether it is a row of readers with the upgrading
// reader's entry.
func (u *Upgrade) holds(it resourcelock.Item) bool {
	return it.HeldByReaders() && record.ReaderPlace(it, u.r.ticket) >= 0
}

// alone reports whether it is a row of readers whose only entry is the
// upgrading reader's.
func (u *Upgrade) alone(it resourcelock.Item) bool {
	return it.HeldByReaders() && len(it.Readers) == 1 && it.Readers[0].Ticket == u.r.ticket
}

// fold notes the row it and returns it as the upgrade sees it: free when
// the reader's entry is its only one.
func (u *Upgrade) fold(it resourcelock.Item) resourcelock.Item {
	u.mu.Lock()
	u.last = it
	u.mu.Unlock()
	if u.alone(it) {
		it.Released, it.Queue, it.Readers = true, nil, nil
	}
	return it
}

// folded returns the answer of a write through the key's lease, its row
// or its refusal's folded.
func (u *Upgrade) folded(it resourcelock.Item, err error) (resourcelock.Item, error) {
	if err == nil {
		return it, nil
	}
	cur, ok := resourcelock.CurrentItem(err)
	if !ok {
		return it, err
	}
	f := u.fold(cur)
	return resourcelock.Item{}, resourcelock.Conflict(u.Describe()+": upgrade", &f, errors.New(err.Error()))
}

// Get reads the row and folds it.
func (u *Upgrade) Get(ctx context.Context) (resourcelock.Item, error) {
	it, err := u.port.Get(ctx)
	if err != nil {
		return resourcelock.Item{}, err
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
func (u *Upgrade) Create(ctx context.Context, rec resourcelock.Record) (resourcelock.Item, error) {
	u.mu.Lock()
	last := u.last
	u.mu.Unlock()
	if !u.alone(last) && u.seen(last) {
		return resourcelock.Item{}, ErrEntryGone
	}
	for try := 0; ; try++ {
		var it resourcelock.Item
		var err error
		if u.alone(last) {
			it, err = u.port.Update(ctx, resourcelock.Precondition{RVN: last.RVN}, rec)
		} else {
			it, err = u.port.Create(ctx, rec) // not seen yet: refused unless the row is free
		}
		cur, ok := resourcelock.CurrentItem(err)
		if err == nil && !u.alone(last) {
			// A free row created before this upgrade saw any: the reader's
			// entry was gone. Refused; the kernel releases the row it
			// wrote, as any write in doubt of a wait that gives up.
			return resourcelock.Item{}, ErrEntryGone
		}
		if err == nil || try > 0 || !ok || !u.alone(cur) {
			return u.folded(it, err)
		}
		last = cur
	}
}

// seen reports whether it is a row the upgrade has read (its zero value
// before the first look).
func (u *Upgrade) seen(it resourcelock.Item) bool { return it.RVN != "" }

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
func (u *Upgrade) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (resourcelock.Item, error) {
	if u.refusesTakeover(expect) {
		return resourcelock.Item{}, ErrEntryGone
	}
	return u.folded(u.port.Update(ctx, expect, rec))
}

// UpdateDequeue writes through the key's lease, refusing as Update does.
func (u *Upgrade) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *resourcelock.Dequeue) (resourcelock.Item, error) {
	if u.refusesTakeover(expect) {
		return resourcelock.Item{}, ErrEntryGone
	}
	return u.folded(u.port.UpdateDequeue(ctx, expect, rec, d))
}

// Join queues through the key's lease.
func (u *Upgrade) Join(ctx context.Context, w resourcelock.Waiter) (resourcelock.Item, error) {
	return u.folded(u.port.Join(ctx, w))
}

// Leave leaves the queue through the key's lease.
func (u *Upgrade) Leave(ctx context.Context, ticket string, index int) (resourcelock.Item, error) {
	return u.folded(u.port.Leave(ctx, ticket, index))
}

// Joinable reports true: the upgrade waits in the key's queue.
func (u *Upgrade) Joinable(w resourcelock.Waiter) bool { return u.port.Joinable(w) }

// Remove deletes through the key's lease.
func (u *Upgrade) Remove(ctx context.Context, expect resourcelock.Precondition) error {
	return u.port.Remove(ctx, expect)
}

// Fence fences through the key's lease.
func (u *Upgrade) Fence(ctx context.Context, acquisitionID string) (resourcelock.Item, error) {
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
