package rows

import (
	"context"
	"github.com/dynalease/dynalease/resourcelock"
	"time"
)

// Store is a table of leases, each named by a Key: the contract a store
// implements. Every method is required; a store that cannot do something
// (keep fencing generations, say) returns an error matching
// dynalease.ErrInvalid from the method, and says so from CanFence.
//
// Every write states what it expects to find, as an argument, and stores a
// caller-chosen fresh RVN; a write whose expectation does not hold fails
// with an error matching resourcelock.ErrConflict and changes nothing (see the package
// doc). Each method is one atomic step against the store (WriteMany and
// FenceMany too: all their rows or none), and a read reflects every write
// that completed before it began (strongly consistent). A Store has no
// identity of its own: every resourcelock.Record written names its holder. It must be
// safe for concurrent use. rowstest.RunStoreConformance checks a
// store against this contract.
type Store interface {
	// Get returns the row at key, or an error matching resourcelock.ErrNotFound.
	Get(ctx context.Context, key resourcelock.Key) (Item, error)
	// Create writes rec at key when the row is missing (unless
	// opts.OnlyIfExists) or free (Item.Free), in one request. It counts a
	// new acquisition: the stored Acquisitions is one more than the
	// previous record's (or 1 when there was none), and AcquisitionID is
	// rec's RVN, whatever rec holds. It returns the row as stored.
	Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts WriteOptions) (Item, error)
	// Update writes rec at key when the row carries expect.RVN and, when
	// expect.HolderIdentity is set, names it and is not released. One
	// without HolderIdentity is a takeover and counts a new acquisition
	// like Create; one with it is the holder's own write (a renewal, a
	// release) and keeps Acquisitions and AcquisitionID. A record naming
	// HandedTo clears AcquisitionID. It returns the row as stored.
	Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts WriteOptions) (Item, error)
	// Remove deletes the row at key when it satisfies expect, as Update's
	// condition does.
	Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error
	// Scan calls fn for every row, or every row of one partition when
	// partition is not empty, until fn returns an error, which Scan then
	// returns. A row that cannot be decoded is passed with its resourcelock.Key and an
	// error matching resourcelock.ErrPermanent ("invalid record"). The order is
	// unspecified; a row written during the scan may or may not be seen.
	Scan(ctx context.Context, partition string, fn func(Item, error) error) error
	// Join appends w to the queue of the row at key, in one request, when
	// the row exists, is not free (held, or released with waiters queued)
	// and its queue holds fewer than 50 waiters; otherwise it returns an
	// error matching resourcelock.ErrConflict carrying the row (resourcelock.ErrNotFound when there
	// is none). It returns the row as it stands after the append. A Join
	// whose answer was lost may have landed; sent again it appends a
	// second entry with the same ticket.
	Join(ctx context.Context, key resourcelock.Key, w Waiter) (Item, error)
	// Leave removes the queue entry at index when it carries ticket, in
	// one request; otherwise it returns an error matching resourcelock.ErrConflict
	// carrying the row (the entry moved, or is gone).
	Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (Item, error)
	// GetMany returns the rows at keys, read as one consistent snapshot,
	// by key; a missing row is absent from the map. It returns each row's
	// key and record without its data, and the queue of the first key
	// named only: no Data, Attributes or Expires, and no other queue, so
	// that a read of many rows stays small. keys must be distinct and at
	// most MaxMany.
	GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]Item, error)
	// WriteMany applies every write or none, each with the condition of
	// its Kind. When any condition fails it applies none and returns an
	// error matching resourcelock.ErrConflict that carries no row. A WriteMany whose
	// answer was lost may have landed, whole. Keys must be distinct and
	// at most MaxMany; a write's options may not carry OnlyIfExists or
	// Below.
	WriteMany(ctx context.Context, writes []Write) error
	// MaxMany returns the most rows one GetMany or WriteMany may name (100
	// on DynamoDB); FenceMany names at most half as many.
	MaxMany() int
	// Fence gives the row at key a new fencing generation, higher than
	// every generation the store gave key before, and restarts its counter
	// at 2, so that the row's fencing token is higher than every token
	// issued for key before. It is conditioned on the row still naming
	// holder and carrying acquisitionID (resourcelock.ErrConflict otherwise): a holder
	// calls it after an acquisition whose row has no token yet, before
	// using the token. It may send two requests.
	Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (Item, error)
	// FenceMany gives the rows at keys one new fencing generation, higher
	// than every generation the store gave any of them before, and
	// restarts their counters at 2, all or nothing: each row must name
	// holder and carry acquisitionID (resourcelock.ErrConflict otherwise). It returns
	// the generation.
	FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (int64, error)
	// Share writes one change of the readers of the row at key (see
	// ShareOp for each change and the row it requires), in one request,
	// and returns the row as stored; a row that does not satisfy the
	// change's condition refuses it with an error matching resourcelock.ErrConflict
	// carrying the row (resourcelock.ErrNotFound when there is none, for a change that
	// needs one). Create and Update, which write a holder's record, drop
	// the row's readers: a row held by one holder has none.
	Share(ctx context.Context, key resourcelock.Key, w Share) (Item, error)
	// Stand sets the entry of c.Ticket among the candidates of the row at
	// key to c (unless c.Ticket is empty), and removes the entries of the
	// tickets in drop, in one request; the row's record, RVN, queue and
	// readers stay as they are. It returns the row as stored; an error
	// matching resourcelock.ErrNotFound when there is no row; and one matching
	// resourcelock.ErrConflict, carrying the row, when c would be a new entry of a row
	// that has MaxCandidates already.
	Stand(ctx context.Context, key resourcelock.Key, c Candidate, drop []string) (Item, error)
	// CanFence reports whether Fence and FenceMany can give generations:
	// false for a store without a place to keep them, whose fences fail
	// with dynalease.ErrInvalid.
	CanFence() bool
	// Describe returns a short human-readable name of the store.
	Describe() string
}

// WriteOptions are the parts of a write that go beyond the resourcelock.Record.
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
	// KeepTTL leaves the row's TTL as it is, instead of Expires.
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
	// Update whose resourcelock.Precondition names no HolderIdentity) on the row's
	// integer attributes: each named attribute must be missing, or an
	// integer below its bound. A row where one holds anything else
	// refuses the write. A missing row has none, so Below always holds on
	// it. A holder's own Update ignores Below (it held when the holder
	// took the row). With Numbers in the same write it makes a monotonic
	// ledger on the lease's own row, advanced only by the write that
	// takes the lease.
	Below map[string]int64
}

// WriteKind is the condition and action of one row of a WriteMany.
type WriteKind int

const (
	// WriteCreate writes the record when the row is missing or released.
	// Unlike Store.Create it takes a released row whatever its queue: a
	// set of keys queues on its first key only, and is not ordered
	// against the waiters of its other keys.
	WriteCreate WriteKind = iota
	// WriteUpdate writes the record when the row satisfies Expect, as
	// Store.Update does.
	WriteUpdate
	// WriteRemove deletes the row when it satisfies Expect, as
	// Store.Remove does.
	WriteRemove
)

// Write is one row of a WriteMany.
type Write struct {
	Key    resourcelock.Key
	Kind   WriteKind
	Expect resourcelock.Precondition // WriteUpdate and WriteRemove
	Record resourcelock.Record       // WriteCreate and WriteUpdate
	// Options are those of Store.Create and Store.Update, without
	// OnlyIfExists and Below; a Dequeue is allowed on WriteCreate and
	// WriteUpdate.
	Options WriteOptions
}
