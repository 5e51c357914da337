package resourcelock

import (
	"errors"

	"github.com/aws/smithy-go"
)

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

// Permanent reports whether err is one that waiting cannot fix: a missing
// table (ErrTableNotFound), a row that is not a lease this package can read
// (ErrInvalidRecord), an argument that can never be written
// (ErrInvalidArgument), or a DynamoDB error refusing the request itself (a
// key schema other than the table's, access denied, credentials not
// recognised or not given). Throttling, server errors, timeouts, refused
// connections and failed conditions are not permanent. The election and
// lock packages stop at once on a permanent error and return it; they
// retry the others.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTableNotFound) || errors.Is(err, ErrInvalidRecord) || errors.Is(err, ErrInvalidArgument) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return permanentCodes[api.ErrorCode()]
	}
	return false
}
