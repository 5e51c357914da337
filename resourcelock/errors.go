package resourcelock

import (
	"errors"
)

// ErrNotFound is returned by Get when the store holds no record at the key.
var ErrNotFound = errors.New("resourcelock: record not found")

// ErrConflict is returned by a write whose precondition did not hold: the
// record was not in the expected state, so nothing was written by that
// request. A store whose client retries requests on its own (the AWS SDK
// does) may report ErrConflict although an earlier attempt of the same call
// landed; see the package documentation.
var ErrConflict = errors.New("resourcelock: precondition failed")

// ErrInvalidRecord is returned when a stored item cannot be read as a
// record: a required attribute is missing, an attribute has the wrong type,
// or a value is malformed. The error's text names the attribute.
var ErrInvalidRecord = errors.New("resourcelock: invalid record")

// ErrInvalidArgument is returned, before any request is sent, for input that
// can never be written: an empty or over-long lock name, an empty identity or
// RVN, a non-positive lease or one over about 146 years, data over
// MaxDataBytes, a time outside the years 1 to 9999.
var ErrInvalidArgument = errors.New("resourcelock: invalid argument")

// ErrNoFencing is returned by Fence on a store configured without a place
// to keep fencing generations (see Store.CanFence).
var ErrNoFencing = errors.New("resourcelock: no fencing generations kept")

// ErrPermanent is matched by a store's errors that waiting cannot fix: the
// store is missing, the request is malformed for it, or the caller may not
// send it (dynamodbstore: a missing table, a key schema other than the
// table's, access denied, credentials not recognised). See Permanent.
var ErrPermanent = errors.New("resourcelock: waiting cannot fix this")

// ErrThrottled is matched by a store's errors that refuse a request for
// capacity: waiting fixes them. It is for metrics (RequestOutcome).
var ErrThrottled = errors.New("resourcelock: throttled")

// ErrContention is matched by the error of a write that concurrent writes
// to the same rows kept refusing (a DynamoDB transaction cancelled for
// conflicts, after the store's own retries): nothing was applied, and
// waiting fixes it.
var ErrContention = errors.New("resourcelock: cancelled by concurrent writes")

// ErrNotMany is returned when a lock on a set of keys is asked of a store
// that cannot write several rows in one request (see ManyStore).
var ErrNotMany = errors.New("resourcelock: the store cannot write several rows in one request")

// ErrNotQueued is the cause of a Set's Join that found no queue to join
// and sent nothing: its first member free, missing, handed to the joining
// waiter already, or carrying the Set's own write. The Conflict that
// carries it carries no row.
var ErrNotQueued = errors.New("resourcelock: no queue to join")
