package resourcelock

import (
	"errors"

	"github.com/dynalease/dynalease"
)

// The errors callers of a store branch on.
var (
	// ErrNotFound is returned by Get when the store holds no record at the key.
	ErrNotFound = errors.New("resourcelock: record not found")

	// ErrConflict is returned by a write whose precondition did not hold: the
	// record was not in the expected state, so nothing was written by that
	// request. A store whose client retries requests on its own (the AWS SDK
	// does) may report ErrConflict although an earlier attempt of the same call
	// landed; see the package documentation.
	ErrConflict = errors.New("resourcelock: precondition failed")

	// ErrPermanent is matched by a store's errors that waiting cannot fix: the
	// store is missing, the request is malformed for it, the caller may not
	// send it (dynamodbstore: a missing table, a key schema other than the
	// table's, access denied, credentials not recognised, a global table with
	// eventual consistency), or a stored row cannot be read as a record (an
	// attribute missing, of the wrong type or malformed; the error's text
	// says "invalid record" and names it). See Permanent.
	ErrPermanent = errors.New("resourcelock: waiting cannot fix this")

	// ErrThrottled is matched by a store's errors that refuse a request for
	// capacity: waiting fixes them. It is for metrics (RequestOutcome).
	ErrThrottled = errors.New("resourcelock: throttled")

	// ErrContention is matched by the error of a write that concurrent writes
	// to the same rows kept refusing (a DynamoDB transaction cancelled for
	// conflicts, after the store's own retries): nothing was applied, and
	// waiting fixes it.
	ErrContention = errors.New("resourcelock: cancelled by concurrent writes")

	// ErrGuardLost is returned by a guarded write (one a store conditions on
	// an acquisition: the row's holder identity and acquisition ID, such as
	// dynamodbstore's Guard) when the row no longer shows that acquisition:
	// another holder has it, it was released or deleted, or a new acquisition
	// replaced it. Nothing of the write was applied.
	ErrGuardLost = errors.New("resourcelock: guarded write refused: the lock is not held by this acquisition")
)

// Permanent reports whether err is one that waiting cannot fix: a store
// error matching ErrPermanent (each store classifies its own, and a row
// that is not a lease this package can read), or a refusal before any
// request (dynalease.ErrInvalid). Throttling, server errors, timeouts,
// refused connections and failed conditions are not permanent. The
// election and lock packages stop at once on a permanent error and return
// it; they retry the others.
func Permanent(err error) bool {
	return err != nil && (errors.Is(err, ErrPermanent) || errors.Is(err, dynalease.ErrInvalid))
}
