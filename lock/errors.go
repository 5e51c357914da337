package lock

import (
	"errors"
	"fmt"

	"github.com/dynalease/dynalease"
)

// The errors callers of a lock client branch on.
var (
	// ErrLocked is returned by TryAcquire, TryAcquireSet and
	// TryAcquirePermit when someone else holds the lock, and by Acquire and
	// its kin when the lock was still held at the end of their wait.
	ErrLocked = errors.New("lock: held by another holder")

	// ErrNotHeld is what Lock.Err returns after the lock's own Release, and
	// what Release, Heartbeat and Guard return for a lock released before. A
	// lock lost to someone else returns its *dynalease.LostError instead.
	ErrNotHeld = errors.New("lock: not held (released by its holder)")

	// ErrClosed is returned by the methods of a closed Client. A lock that
	// the client's Close released ends with an error matching both
	// ErrClosed and ErrNotHeld.
	ErrClosed = errors.New("lock: client closed")
)

// errClosedRelease is how a lock that the client's Close released ends:
// released by its holder, which was closed.
var errClosedRelease = fmt.Errorf("%w: %w", ErrNotHeld, ErrClosed)

// invalid returns the error of a bad option, field or argument: a
// *dynalease.InvalidError, matching dynalease.ErrInvalid.
func invalid(option, format string, args ...any) error {
	return &dynalease.InvalidError{Field: option, Reason: fmt.Sprintf(format, args...)}
}

// refused returns the error of a value another layer refused (err): a
// *dynalease.InvalidError naming option.
func refused(option string, err error) error {
	return &dynalease.InvalidError{Field: option, Err: err}
}
