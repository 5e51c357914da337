package resourcelock

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/dynalease/dynalease"
)

// Key names one lease in a Store: the partition key value and, in a table
// with a sort key, the sort key value.
type Key struct {
	Partition string
	Sort      string
}

// String returns "PARTITION" or "PARTITION/SORT".
func (k Key) String() string {
	if k.Sort == "" {
		return k.Partition
	}
	return k.Partition + "/" + k.Sort
}

// Item is one stored lease with everything else its row holds.
type Item struct {
	Key Key
	Record
	// Attributes are the row's application attributes: those written with
	// WriteOptions.Attributes, by this or another client, and any other a
	// store's rows carry besides its key, record and TTL. Their values are
	// the store's own (dynamodbstore: types.AttributeValue).
	Attributes map[string]any
	// Numbers are the row's integer attributes: those written with
	// WriteOptions.Numbers, and any other attribute a store keeps as an
	// integer besides its key, record and TTL (dynamodbstore: every N
	// attribute whose value fits an int64, which Attributes holds too).
	Numbers map[string]int64
	// Expires is the row's TTL (whole seconds), zero when it has none.
	Expires time.Time
	// Queue is the row's waiters, oldest first (see Store.Join); nil when
	// it has none. Writes of a record leave it as it is unless they carry
	// WriteOptions.Dequeue.
	Queue []Waiter
}

// WriteOptions are the parts of a write that go beyond the Record.
type WriteOptions struct {
	// Attributes are set on the row along with the record. Names must not
	// be empty, values not nil, and each store refuses the names and value
	// types it cannot store (dynamodbstore: its key, record and TTL
	// attribute names, and values other than types.AttributeValue).
	// Attributes the row already has and this write does not name are left
	// as they are.
	Attributes map[string]any
	// KeepData leaves the row's data as it is instead of writing
	// rec.Data; a row created by the write then has no data.
	KeepData bool
	// OnlyIfExists makes Create admit only an existing, released row, not
	// a missing one.
	OnlyIfExists bool
	// Expires sets the row's TTL (rounded up to whole seconds); the zero
	// time removes it.
	Expires time.Time
	// TTL, when positive and Expires is zero, sets Expires to the write's
	// wall-clock time plus TTL (PrepareWrite does), so that a lease can
	// carry it for all its writes.
	TTL time.Duration
	// KeepTTL leaves the row's TTL as it is, instead of Expires or TTL.
	KeepTTL bool
	// Dequeue, when not nil, conditions the write on the row's queue
	// and removes the entries it names (see Dequeue).
	Dequeue *Dequeue
	// Numbers are integer attributes set on the row along with the
	// record, under the names Attributes may use; a name may not be in
	// both. Numbers the row already has and this write does not name are
	// left as they are.
	Numbers map[string]int64
	// Below conditions a write that takes the row (a Create, or an
	// Update whose Precondition names no HolderIdentity) on the row's
	// integer attributes: each named attribute must be missing, or an
	// integer below its bound. A row where one holds anything else
	// refuses the write. A missing row has none, so Below always holds on
	// it. A holder's own Update ignores Below (it held when the holder
	// took the row). Writes of many rows refuse Below.
	//
	// With Numbers in the same write it makes a monotonic ledger on the
	// lease's own row, advanced only by the write that takes the lease
	// (the scheduled jobs of package schedule keep their slots so).
	Below map[string]int64
}

// Store is a table of many leases, each named by a Key. Interface is one
// lease of a Store seen by one holder. A Store's methods have the semantics
// of Interface's (see there), per key; in addition Remove deletes a row
// conditioned like Update, and Scan reads every row. A Store has no
// identity of its own: every Record written must name its holder.
//
// Implementations must be safe for concurrent use.
type Store interface {
	// Get returns the item at key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key Key) (Item, error)
	// Create writes rec at key when the row is missing (unless
	// opts.OnlyIfExists) or free (Item.Free); see Interface.Create.
	Create(ctx context.Context, key Key, rec Record, opts WriteOptions) (Item, error)
	// Update writes rec at key when the row satisfies expect; see
	// Interface.Update.
	Update(ctx context.Context, key Key, expect Precondition, rec Record, opts WriteOptions) (Item, error)
	// Remove deletes the row at key when it satisfies expect, or returns
	// an error wrapping ErrConflict.
	Remove(ctx context.Context, key Key, expect Precondition) error
	// Scan calls fn for every row, or every row of one partition when
	// partition is not empty, until fn returns an error, which Scan then
	// returns. A row that cannot be decoded is passed with its Key and an
	// error matching ErrPermanent ("invalid record"). The order is unspecified; a row
	// written during the scan may or may not be seen.
	Scan(ctx context.Context, partition string, fn func(Item, error) error) error
	// Join appends w to the queue of the row at key, in one request, when
	// the row exists, is not free (Item.Free: held, or released with
	// waiters queued) and its queue holds fewer than
	// MaxQueueLength waiters; otherwise it returns an error wrapping
	// ErrConflict carrying the row (ErrNotFound when there is none). It
	// returns the row as it stands after the append. A Join whose answer
	// was lost may have landed; sent again it appends a second entry with
	// the same ticket, which Item.Place does not count.
	Join(ctx context.Context, key Key, w Waiter) (Item, error)
	// Leave removes the queue entry at index when it carries ticket, in
	// one request; otherwise it returns an error wrapping ErrConflict
	// carrying the row (the entry moved, or is gone).
	Leave(ctx context.Context, key Key, ticket string, index int) (Item, error)
	// Fence gives the row at key a new fencing generation, higher than
	// every generation the store gave key before, and restarts its counter
	// at 2, so that the row's fencing token is higher than every token
	// issued for key before. It is conditioned on the row still naming
	// holder and carrying acquisitionID: a holder calls it after an
	// acquisition whose Record.NeedsFence, before using the token. It
	// returns an error wrapping ErrConflict when the row was taken
	// meanwhile and dynalease.ErrInvalid when the store keeps no generations. It
	// may send two requests.
	Fence(ctx context.Context, key Key, holder, acquisitionID string) (Item, error)
	// CanFence reports whether Fence can give generations: false for a
	// store configured without a place to keep them (dynalease.ErrInvalid).
	CanFence() bool
	// Describe returns a short human-readable name of the store.
	Describe() string
}

// check reports whether the options can be written by any store (see
// PrepareWrite).
func (o WriteOptions) check() error {
	for name, v := range o.Attributes {
		if name == "" || v == nil {
			return fmt.Errorf("%w: attribute %q has an empty name or no value", dynalease.ErrInvalid, name)
		}
		if _, twice := o.Numbers[name]; twice {
			return fmt.Errorf("%w: attribute %q is both in Attributes and in Numbers", dynalease.ErrInvalid, name)
		}
	}
	for _, m := range []map[string]int64{o.Numbers, o.Below} {
		if _, ok := m[""]; ok {
			return fmt.Errorf("%w: an integer attribute has an empty name", dynalease.ErrInvalid)
		}
	}
	if err := checkDequeue(o.Dequeue); err != nil {
		return err
	}
	if !o.Expires.IsZero() {
		if y := o.Expires.Year(); y < 1970 || y > 9999 {
			return fmt.Errorf("%w: TTL %v is not a plausible epoch time", dynalease.ErrInvalid, o.Expires)
		}
	}
	return nil
}

// cloneItem returns a deep-enough copy of it for handing out.
func cloneItem(it Item) Item {
	it.Record = normalized(it.Record)
	if it.Attributes != nil {
		it.Attributes = maps.Clone(it.Attributes)
	}
	if it.Numbers != nil {
		it.Numbers = maps.Clone(it.Numbers)
	}
	if it.Queue != nil {
		it.Queue = slices.Clone(it.Queue)
	}
	return it
}

// expiresSeconds rounds a TTL up to whole seconds.
func expiresSeconds(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s.UTC()
}
