package metrics

import (
	"context"
	"errors"

	"github.com/dynalease/dynalease/resourcelock"
)

// RequestOutcome classifies the error of one store call: nil is OK, a
// failed condition ConditionFailed, throttling (resourcelock.ErrThrottled)
// Throttled, a deadline (the request timeout's or the caller's) Timeout,
// anything else Error.
func RequestOutcome(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, resourcelock.ErrConflict):
		return ConditionFailed
	case errors.Is(err, resourcelock.ErrThrottled):
		return Throttled
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	default:
		return Error
	}
}
