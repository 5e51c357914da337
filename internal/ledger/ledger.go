// Package ledger is the bridge between package lock and package schedule,
// and nothing else: a scheduled job keeps a ledger of integers on its
// lock's row, written by the write that takes the lock
// (rows.WriteOptions.Numbers) and admitted only while the row's
// integers are below the bounds the job gives (WriteOptions.Below), in the
// same request. Package lock offers the options that do it here, for
// package schedule alone, rather than in its own API.
package ledger

import (
	"errors"
	"time"
)

// ErrNotBelow is matched by the error of an acquisition that found one of
// the row's integers at or above its bound (or holding something else than
// an integer): waiting cannot lower it.
var ErrNotBelow = errors.New("lock: the row's integer attribute is not below the bound")

// Options are package lock's options that write a ledger, and what a
// scheduler reads of a lock client and of a row; A is lock.AcquireOption,
// R lock.ReleaseOption, I lock.Info and C *lock.Client.
type Options[A, R, I, C any] struct {
	// Take returns the option of an Acquire (or TryAcquire) of one key
	// whose taking write sets numbers and is admitted only while each
	// integer below names is missing or below its bound; an Acquire that
	// finds one at or above it gives up with ErrNotBelow. Such an
	// acquisition does not join the row's queue: a hand-over to it could
	// only be refused by its bound.
	Take func(numbers, below map[string]int64) A
	// Close returns the option of a Release that sets numbers on the row
	// it keeps.
	Close func(numbers map[string]int64) R
	// Numbers returns the integer attributes of a row as read (the
	// ledger), nil when it has none.
	Numbers func(I) map[string]int64
	// Refused returns the integer attributes of the row that refused an
	// acquisition with ErrNotBelow, as that acquisition found it, and
	// whether err carries them: the ledger as a read at that moment would
	// have shown it.
	Refused func(err error) (map[string]int64, bool)
	// Timing returns a client's lease, refresh period and TTL slack (zero
	// when its writes set no TTL), defaults filled in.
	Timing func(C) Timing
}

// Timing is what a scheduler needs of a lock client's configuration.
type Timing struct {
	Lease, Refresh, TTL time.Duration
}

var registered any

// Register is called by package lock, in its init, with its options.
func Register[A, R, I, C any](o Options[A, R, I, C]) { registered = o }

// Lock returns the options package lock registered.
func Lock[A, R, I, C any]() Options[A, R, I, C] { return registered.(Options[A, R, I, C]) }
