package resourcelock

import (
	"context"
)

// Interface is the storage contract behind a single named lease: the one
// every kind of lock acquires, holds and releases through. A store bound
// to one key (Lease) is one; several rows folded into one lease (Set) are
// one too. What only some leases can do is an optional capability the
// caller finds on the value it holds: Fencer, Queuer, Remover, Optioner.
//
// Implementations must make each method a single atomic step against the
// store: Create and Update either apply completely or not at all, and Get
// reflects every write that completed before it was called (a strongly
// consistent read). Implementations must be safe for concurrent use.
type Interface interface {
	// Get returns the current row. It returns an error wrapping
	// ErrNotFound when there is none.
	Get(ctx context.Context) (Item, error)

	// Create writes rec when there is no record or the record is free
	// (marked released, with nobody queued: Item.Free), in one request.
	// It counts a new acquisition: the stored Acquisitions is one more
	// than the previous record's (or 1 when there was none), whatever rec
	// holds. It returns the row as stored, or an error wrapping
	// ErrConflict when a record exists and is not free. rec.HolderIdentity must be empty or equal Identity(); an
	// empty one is filled in.
	Create(ctx context.Context, rec Record) (Item, error)

	// Update writes rec when the current record satisfies expect: it
	// carries expect.RVN and, when expect.HolderIdentity is set, names it
	// as holder and is not marked released. An update with
	// expect.HolderIdentity empty is a takeover and counts a new
	// acquisition like Create; one with it set is the
	// holder's own write (a renewal or a release) and leaves
	// Acquisitions unchanged. It returns the row as stored, or an
	// error wrapping ErrConflict when the precondition does not hold or
	// there is no record. rec.HolderIdentity must be empty or equal
	// Identity(), unless rec hands the lease over (HandedTo).
	Update(ctx context.Context, expect Precondition, rec Record) (Item, error)

	// Identity returns the holder identity this lease writes into records.
	Identity() string

	// Describe returns a short human-readable name of the lease, for logs.
	Describe() string
}

// Precondition states what a write expects to find. It is passed to every
// Update explicitly; implementations never remember it between calls.
type Precondition struct {
	// RVN is the record version number the stored record must carry.
	RVN string
	// HolderIdentity, when set, is the holder identity the stored record must name.
	// The holder sets it on its own writes (renewal, release); a takeover of
	// a stale record leaves it empty, as the AWS Java lock client does.
	HolderIdentity string
}

// Fencer is a lease that can be given fencing tokens (see Store.Fence).
// Fence gives the record, held by this lease's identity under
// acquisitionID, a new fencing generation; CanFence reports whether it can
// (see Store.CanFence).
type Fencer interface {
	Fence(ctx context.Context, acquisitionID string) (Item, error)
	CanFence() bool
}

// Queuer is a lease with a queue of waiters (see Store.Join, Store.Leave
// and WriteOptions.Dequeue): Join and Leave as the store's for the lease's
// key, and UpdateDequeue, an Update whose write is also conditioned on the
// queue by d and takes the entries d names out.
type Queuer interface {
	Join(ctx context.Context, w Waiter) (Item, error)
	Leave(ctx context.Context, ticket string, index int) (Item, error)
	UpdateDequeue(ctx context.Context, expect Precondition, rec Record, d *Dequeue) (Item, error)
}

// Remover is a lease whose row its holder can delete: Remove deletes it
// when it satisfies expect, or returns an error wrapping ErrConflict.
type Remover interface {
	Remove(ctx context.Context, expect Precondition) error
}

// Optioner is a lease whose writes carry WriteOptions: With returns the
// same lease (sharing its state) writing o instead. A lock writes its
// acquisition's attributes and data choice through one, its holder's
// writes through another.
type Optioner interface {
	With(o WriteOptions) Interface
}

// Holding names one acquisition of a lease: each of its rows must still
// name HolderIdentity, carry AcquisitionID and not be released. A guarded
// write lands only while that acquisition holds the lease.
type Holding struct {
	// Keys are the lease's rows: its key, or a set's members. A lease
	// whose guarded writes know its key (dynamodbstore.Lease.Writes) may
	// be given none.
	Keys           []Key
	HolderIdentity string
	AcquisitionID  string
}

// Guarded is a guarded write: writes of the caller's own that a store
// commits, all or nothing, only while the holding h still holds. It
// returns an error matching ErrGuardLost, with nothing applied, when h no
// longer holds; the store's other errors otherwise. lock.Lock.Guard and
// election.Elector.Guard call it with their holding; dynamodbstore's
// Store.Writes and Lease.Writes make one of DynamoDB items. A guarded
// write may also be composed by hand, as etcd's Mutex.IsOwner composes
// with a transaction: h names the condition to check.
type Guarded func(ctx context.Context, h Holding) error
