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

// ErrPermanent is matched by a store's errors that waiting cannot fix: the
// store is missing, the request is malformed for it, the caller may not
// send it (dynamodbstore: a missing table, a key schema other than the
// table's, access denied, credentials not recognised, a global table with
// eventual consistency), or a stored row cannot be read as a record (an
// attribute missing, of the wrong type or malformed; the error's text
// says "invalid record" and names it). See Permanent.
var ErrPermanent = errors.New("resourcelock: waiting cannot fix this")

// ErrThrottled is matched by a store's errors that refuse a request for
// capacity: waiting fixes them. It is for metrics (RequestOutcome).
var ErrThrottled = errors.New("resourcelock: throttled")

// ErrContention is matched by the error of a write that concurrent writes
// to the same rows kept refusing (a DynamoDB transaction cancelled for
// conflicts, after the store's own retries): nothing was applied, and
// waiting fixes it.
var ErrContention = errors.New("resourcelock: cancelled by concurrent writes")
