package dynamodbstore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynalease/dynalease/resourcelock"
)

// errTableNotFound is the cause of a request's error for a missing table:
// permanent, with the SDK's *types.ResourceNotFoundException beside it for
// a caller that branches on the table's absence.
var errTableNotFound = fmt.Errorf("dynamodbstore: table not found (%w)", resourcelock.ErrPermanent)

// errTableMismatch is the cause of CreateTable's refusal of a table of
// that name with a key schema, or a TTL attribute, other than the one
// asked for: permanent.
var errTableMismatch = fmt.Errorf("dynamodbstore: table exists with a different configuration (%w)", resourcelock.ErrPermanent)

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
// resourcelock.ErrPermanent (and the SDK's ResourceNotFoundException), another error that
// waiting cannot fix resourcelock.ErrPermanent, throttling
// resourcelock.ErrThrottled. The SDK's error stays a cause.
func wrapTableError(table, what string, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("%s: table %q: %w: %w", what, table, errTableNotFound, err)
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
