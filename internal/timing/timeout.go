package timing

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// WithTimeout returns a copy of parent that is cancelled when d has passed
// on c, when parent is done, or when the returned cancel function is called.
//
// On the real clock this is context.WithTimeout, so the result also carries
// a Deadline that network code can see. On any other clock the context is
// cancelled by a timer on that clock and carries no Deadline: a fake clock's
// time has no relation to the wall clock. Either way, once the timeout fires
// context.Cause of the result matches context.DeadlineExceeded under
// errors.Is. (Err itself is
// context.DeadlineExceeded on the real clock and context.Canceled on others,
// so callers that need to tell a timeout apart test the cause.)
func WithTimeout(parent context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, real := c.(clock.RealClock); real {
		return context.WithTimeoutCause(parent, d, timeoutError{})
	}
	ctx, cancel := context.WithCancelCause(parent)
	t := c.AfterFunc(d, func() { cancel(timeoutError{}) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// timeoutError is the cause of a timed-out context: it matches
// context.DeadlineExceeded.
type timeoutError struct{}

func (timeoutError) Error() string { return "timing: timeout" }

func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// KeepDeadline returns a context that is not cancelled when parent is, but
// that ends at parent's deadline, if it has one. A release is still sent
// when the caller's context was cancelled (at shutdown, say), yet a call
// documented to return by its context's deadline does. Call cancel when
// done.
func KeepDeadline(parent context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(parent)
	if d, ok := parent.Deadline(); ok {
		return context.WithDeadline(detached, d)
	}
	// Nothing ends it, so nothing is to be released either.
	return detached, func() {}
}
