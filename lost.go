package dynalease

import (
	"fmt"
)

// LostReason says how a hold was lost.
type LostReason int

const (
	// Expired: no renewal was confirmed before the hold's validity ran
	// out. Cause tells why the renewals failed, typically because the
	// store could not be reached. The row may still name the holder.
	Expired LostReason = iota + 1
	// Stolen: the row was found written by another holder.
	Stolen
	// ReleasedElsewhere: the row was found marked released by a write the
	// holder did not make.
	ReleasedElsewhere
	// Deleted: the row was found missing.
	Deleted
)

func (r LostReason) String() string {
	switch r {
	case Expired:
		return "expired"
	case Stolen:
		return "stolen"
	case ReleasedElsewhere:
		return "released elsewhere"
	case Deleted:
		return "deleted"
	}
	return fmt.Sprintf("LostReason(%d)", int(r))
}

// LostError describes a lost hold, the same for a lock and for a term of
// leadership. Only Expired can be caused by an outage of the store.
// Stolen, ReleasedElsewhere and Deleted were seen in the row, except after
// a guarded write that the store refused (resourcelock.ErrGuardLost): the
// refusal itself proves the row shows another acquisition, and when the
// read that follows it fails the loss is Stolen with no Holder.
type LostError struct {
	// Lease names what was held: a lock's key, an election's lease.
	Lease  string
	Reason LostReason
	// HolderIdentity is the holder identity the row
	// named when it was found Stolen or ReleasedElsewhere (the one that
	// released it).
	HolderIdentity string
	// Cause is, for Expired, the failure of the last renewal since the
	// last confirmed one (nil when none failed: the renewals were not sent
	// in time, as after a pause). For a loss found by a write, it is the
	// store's verdict on the write's condition (resourcelock.ErrConflict),
	// or nil when the write's answer was lost and a read found the row
	// changed; after a refused guarded write, the refusal.
	Cause error
}

func (e *LostError) Error() string {
	msg := fmt.Sprintf("%q lost: %s", e.Lease, e.Reason)
	if e.HolderIdentity != "" {
		msg += fmt.Sprintf(" by %q", e.HolderIdentity)
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Is makes every LostError match ErrLost.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the cause.
func (e *LostError) Unwrap() error { return e.Cause }
