package lock

import (
	"errors"
	"fmt"

	"github.com/dynalease/dynalease"
)

// ErrLocked is returned by TryAcquire, and by Acquire with WithFailIfLocked,
// when someone else holds the lock; and by Acquire when the lock was still
// held at the end of its wait.
var ErrLocked = errors.New("lock: held by another owner")

// ErrNotHeld is returned by Release and Heartbeat on a lock that this
// client no longer holds because it was released. A lock lost to someone
// else returns its *dynalease.LostError instead.
var ErrNotHeld = errors.New("lock: not held")

// ErrLost is matched by every *dynalease.LostError: the value of
// dynalease.ErrLost, for callers of this package.
var ErrLost = dynalease.ErrLost

// ErrReleased is what Lock.Err returns after the lock's own Release.
var ErrReleased = errors.New("lock: released by its holder")

// ErrClosed is returned by the methods of a closed Client.
var ErrClosed = errors.New("lock: client closed")

// ErrInvalidOption is matched by every error a bad Config field, option or
// key causes; such errors are returned before any request is sent.
var ErrInvalidOption = errors.New("lock: invalid option")

// OptionError names the option or argument that failed validation. It
// matches ErrInvalidOption, and also resourcelock.ErrInvalidArgument when
// resourcelock refused the value (Err).
type OptionError struct {
	// Option names the Config field (LeaseDuration, …), the per-call
	// option (WithAttributes, …) or the argument (key, …) that is invalid.
	Option string
	Reason string
	// Err is resourcelock's error when it found the value invalid.
	Err error
}

func (e *OptionError) Error() string {
	if e.Reason == "" && e.Err != nil {
		return fmt.Sprintf("%v: %s: %v", ErrInvalidOption, e.Option, e.Err)
	}
	return fmt.Sprintf("%v: %s: %s", ErrInvalidOption, e.Option, e.Reason)
}

// Is makes every OptionError match ErrInvalidOption.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// Unwrap returns resourcelock's error, if any.
func (e *OptionError) Unwrap() error { return e.Err }

// invalid returns an *OptionError for option.
func invalid(option, format string, args ...any) error {
	return &OptionError{Option: option, Reason: fmt.Sprintf(format, args...)}
}
