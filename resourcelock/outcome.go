package resourcelock

import (
	"context"
	"errors"

	"github.com/dynalease/dynalease/metrics"
)

// RequestOutcome classifies the error of one store call for metrics: nil
// is OK, a failed condition ConditionFailed, throttling (ErrThrottled)
// Throttled, a deadline (the request timeout's or the caller's) Timeout,
// anything else Error.
func RequestOutcome(err error) metrics.Outcome {
	switch {
	case err == nil:
		return metrics.OK
	case errors.Is(err, ErrConflict):
		return metrics.ConditionFailed
	case errors.Is(err, ErrThrottled):
		return metrics.Throttled
	case errors.Is(err, context.DeadlineExceeded):
		return metrics.Timeout
	default:
		return metrics.Error
	}
}
