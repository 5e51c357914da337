package resourcelock

import (
	"context"
)

// Interface is one lease of a store seen by one holder, in the shape of
// client-go's resource lock: what an election.Elector campaigns and leads
// through when given one (election.Config.Lease) instead of a Store, for
// storage other than dynalease's stores. Over a Store the elector makes
// its own lease, with everything it can use besides (fencing, guarded
// writes); an Interface serves an elector without fencing.
//
// Implementations must make each method a single atomic step against the
// store: Create and Update either apply completely or not at all, and Get
// reflects every write that completed before it was called (a strongly
// consistent read). Implementations must be safe for concurrent use.
type Interface interface {
	// Get returns the current record. It returns an error wrapping
	// ErrNotFound when there is none.
	Get(ctx context.Context) (Record, error)

	// Create writes rec when there is no record or the record is
	// marked released, in one request.
	// It counts a new acquisition: the stored Acquisitions is one more
	// than the previous record's (or 1 when there was none), whatever
	// rec holds. It returns the
	// record as stored, or an error wrapping ErrConflict when a record
	// exists and is not released.
	// rec.HolderIdentity must be empty or equal Identity(); an empty one
	// is filled in.
	Create(ctx context.Context, rec Record) (Record, error)

	// Update writes rec when the current record satisfies expect: it
	// carries expect.RVN and, when expect.HolderIdentity is set, names it
	// as holder and is not marked released. An update with
	// expect.HolderIdentity empty is a takeover and counts a new
	// acquisition like Create; one with it set is the
	// holder's own write (a renewal or a release) and leaves
	// Acquisitions unchanged. It returns the record as
	// stored, or an error wrapping ErrConflict when the precondition
	// does not hold or there is no record. rec.HolderIdentity must be empty or equal
	// Identity(), unless rec hands the lease over (HandedTo).
	Update(ctx context.Context, expect Precondition, rec Record) (Record, error)

	// Identity returns the holder identity this lease writes into records.
	Identity() string

	// Describe returns a short human-readable name of the lease, for logs.
	Describe() string
}

// Holding names one acquisition of a lease: each of its rows must still
// name HolderIdentity, carry AcquisitionID and not be released. A guarded
// write lands only while that acquisition holds the lease.
type Holding struct {
	// Keys are the lease's rows: its key, or a set's members; none for
	// an elector's Lease of another kind than dynalease's stores'.
	Keys           []Key
	HolderIdentity string
	AcquisitionID  string
}

// Guarded is a guarded write: writes of the caller's own that a store
// commits, all or nothing, only while the holding h still holds. It
// returns an error matching ErrGuardLost, with nothing applied, when h no
// longer holds; the store's other errors otherwise. lock.Lock.Guard and
// election.Elector.Guard call it with their holding; dynamodbstore's
// Store.Writes makes one of DynamoDB items. A guarded
// write may also be composed by hand, as etcd's Mutex.IsOwner composes
// with a transaction: h names the condition to check.
type Guarded func(ctx context.Context, h Holding) error
