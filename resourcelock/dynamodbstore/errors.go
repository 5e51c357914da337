package dynamodbstore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynalease/dynalease/resourcelock"
)

// ErrTableNotFound is matched by the error of a request to a table that
// does not exist; the error's text names the table. It is permanent (the
// error matches resourcelock.ErrPermanent too).
var ErrTableNotFound = fmt.Errorf("dynamodbstore: table not found (%w)", resourcelock.ErrPermanent)

// ErrTableMismatch is returned by CreateTable when a table of that name
// exists with a key schema, or a TTL attribute, other than the one asked
// for.
var ErrTableMismatch = errors.New("dynamodbstore: table exists with a different configuration")

// permanentCodes are DynamoDB error codes that no retry can change: the
// request is malformed for this table (a key schema other than the one
// configured), the caller may not send it, or its credentials are not
// recognised.
var permanentCodes = map[string]bool{
	"ValidationException":                 true,
	"AccessDeniedException":               true,
	"UnrecognizedClientException":         true,
	"InvalidSignatureException":           false, // also "signature expired": a skewed clock, fixed by NTP or the SDK's skew correction
	"IncompleteSignatureException":        true,
	"MissingAuthenticationTokenException": true,
	"InvalidClientTokenId":                true,
	"ExpiredTokenException":               false, // refreshed credentials may fix it
	"ResourceNotFoundException":           true,
}

// throttlingCodes are DynamoDB's answers to a request over the table's or
// the account's capacity.
var throttlingCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// wrapTableError describes an error of a request (what) to table and
// classifies it for the generic contract: a missing table matches
// ErrTableNotFound and resourcelock.ErrPermanent, another error that
// waiting cannot fix resourcelock.ErrPermanent, throttling
// resourcelock.ErrThrottled. The SDK's error stays a cause.
func wrapTableError(table, what string, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("%s: table %q: %w: %w", what, table, ErrTableNotFound, err)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch {
		case permanentCodes[api.ErrorCode()]:
			return fmt.Errorf("%s: %w (%w)", what, err, resourcelock.ErrPermanent)
		case throttlingCodes[api.ErrorCode()]:
			return fmt.Errorf("%s: %w (%w)", what, err, resourcelock.ErrThrottled)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ConfigError names the field of Config or LeaseConfig that failed
// validation. It matches resourcelock.ErrInvalidArgument.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s %s", resourcelock.ErrInvalidArgument, e.Field, e.Reason)
}

// Is makes every ConfigError match resourcelock.ErrInvalidArgument.
func (e *ConfigError) Is(target error) bool { return target == resourcelock.ErrInvalidArgument }
