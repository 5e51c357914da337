package lock

import (
	"errors"
	"fmt"
)

// ErrLocked is returned by TryAcquire, and by Acquire with FailIfLocked,
// when someone else holds the lock; and by Acquire when the lock was still
// held at the end of its wait.
var ErrLocked = errors.New("lock: held by another owner")

// ErrNotHeld is returned by Release and Heartbeat on a lock that this
// client no longer holds because it was released. A lock lost to someone
// else returns its *LostError instead.
var ErrNotHeld = errors.New("lock: not held")

// ErrLost is matched by every *LostError.
var ErrLost = errors.New("lock: lost")

// ErrReleased is what Lock.Err returns after the lock's own Release.
var ErrReleased = errors.New("lock: released by its holder")

// ErrClosed is returned by the methods of a closed Client.
var ErrClosed = errors.New("lock: client closed")

// ErrInvalidOption is matched by every error a bad option or key causes;
// such errors are returned before any request is sent.
var ErrInvalidOption = errors.New("lock: invalid option")

// LostReason says how a lock was lost.
type LostReason int

const (
	// Expired: no heartbeat was confirmed before the lock's validity ran
	// out. Cause tells why the heartbeats failed, typically because
	// DynamoDB could not be reached. The row may still name this owner.
	Expired LostReason = iota + 1
	// Stolen: the row was found written by another owner.
	Stolen
	// ReleasedElsewhere: the row was found marked released by a write
	// this lock did not make.
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

// LostError describes a lost lock. Only Expired can be caused by an outage
// of DynamoDB; Stolen, ReleasedElsewhere and Deleted were verified by a
// read.
type LostError struct {
	Key    string
	Reason LostReason
	// Holder is the owner the row named when it was found Stolen or
	// ReleasedElsewhere (the owner that released it).
	Holder string
	// Cause is the last error of a heartbeat, when there was one.
	Cause error
}

func (e *LostError) Error() string {
	msg := fmt.Sprintf("lock %q lost: %s", e.Key, e.Reason)
	if e.Holder != "" {
		msg += fmt.Sprintf(" by %q", e.Holder)
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

// OptionError names the option or argument that failed validation. It
// matches ErrInvalidOption, and also resourcelock.ErrInvalidArgument when
// resourcelock refused the value (Err).
type OptionError struct {
	// Option names the option (WithLeaseDuration, …) or argument (key,
	// store) that is invalid.
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
