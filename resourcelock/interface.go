package resourcelock

import (
	"context"
	"errors"
)

// Interface is the storage contract behind a single named lease.
//
// Implementations must make each method a single atomic step against the
// store: Create and Update either apply completely or not at all, and Get
// reflects every write that completed before it was called (a strongly
// consistent read). Implementations must be safe for concurrent use.
type Interface interface {
	// Get returns the current record. It returns an error wrapping
	// ErrNotFound when there is none.
	Get(ctx context.Context) (Record, error)

	// Create writes rec when there is no record or the record is marked
	// released, in one request. It counts a new acquisition: the stored
	// LeaderTransitions is one more than the previous record's (or 1 when
	// there was none), whatever rec holds. It returns the record as stored,
	// or an error wrapping ErrConflict when a record exists and is not
	// released. rec.HolderIdentity must be empty or equal Identity(); an
	// empty one is filled in.
	Create(ctx context.Context, rec Record) (Record, error)

	// Update writes rec when the current record satisfies expect: it
	// carries expect.RVN and, when expect.HolderIdentity is set, names it
	// as holder and is not marked released. An update with
	// expect.HolderIdentity empty is a takeover and counts a new
	// acquisition like Create; one with it set is the
	// holder's own write (a renewal or a release) and leaves
	// LeaderTransitions unchanged. It returns the record as stored, or an
	// error wrapping ErrConflict when the precondition does not hold or
	// there is no record. rec.HolderIdentity must be empty or equal
	// Identity().
	Update(ctx context.Context, expect Precondition, rec Record) (Record, error)

	// Identity returns the holder identity this lock writes into records.
	Identity() string

	// Describe returns a short human-readable name of the lock, for logs.
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

// Fencer is implemented by leases that can be given fencing tokens; see
// Store.Fence. Fence gives the record, held by this lock's identity under
// acquisitionID, a new fencing generation; CanFence reports whether it can
// (see Store.CanFence).
type Fencer interface {
	Fence(ctx context.Context, acquisitionID string) (Record, error)
	CanFence() bool
}

// ErrGuardLost is returned by a guarded write (one a store conditions on
// an acquisition: the row's holder identity and acquisition ID, such as
// dynamodbstore's Guard) when the row no longer shows that acquisition:
// another holder has it, it was released or deleted, or a new acquisition
// replaced it. Nothing of the write was applied.
var ErrGuardLost = errors.New("resourcelock: guarded write refused: the lock is not held by this acquisition")
