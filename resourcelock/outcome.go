package resourcelock

import (
	"context"
	"errors"

	"github.com/aws/smithy-go"

	"github.com/dynalease/dynalease/metrics"
)

// throttlingCodes are DynamoDB's answers to a request over the table's or
// the account's capacity.
var throttlingCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// RequestOutcome classifies the error of one store call for metrics: nil
// is OK, a failed condition ConditionFailed, throttling Throttled, a
// deadline (the request timeout's or the caller's) Timeout, anything else
// Error.
func RequestOutcome(err error) metrics.Outcome {
	if err == nil {
		return metrics.OK
	}
	if errors.Is(err, ErrConflict) {
		return metrics.ConditionFailed
	}
	var api smithy.APIError
	if errors.As(err, &api) && throttlingCodes[api.ErrorCode()] {
		return metrics.Throttled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return metrics.Timeout
	}
	return metrics.Error
}

// GuardOutcome classifies the error of a guarded write for metrics:
// "committed", "lock_lost" (ErrGuardLost), "condition_failed" (one of the
// caller's own conditions, an *ItemConditionError), "conflict" (gave up
// after transaction conflicts, ErrTransactionConflict) or "error".
func GuardOutcome(err error) string {
	var ice *ItemConditionError
	switch {
	case err == nil:
		return "committed"
	case errors.Is(err, ErrGuardLost):
		return "lock_lost"
	case errors.As(err, &ice):
		return "condition_failed"
	case errors.Is(err, ErrTransactionConflict):
		return "conflict"
	default:
		return "error"
	}
}
