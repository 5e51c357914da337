package resourcelock

import (
	"errors"

	"github.com/dynalease/dynalease"
)

// Permanent reports whether err is one that waiting cannot fix: a store
// error matching ErrPermanent (each store classifies its own, and a row
// that is not a lease this package can read), or a refusal before any
// request (dynalease.ErrInvalid). Throttling, server errors, timeouts,
// refused connections and failed conditions are not permanent. The
// election and lock packages stop at once on a permanent error and return
// it; they retry the others.
func Permanent(err error) bool {
	return err != nil && (errors.Is(err, ErrPermanent) || errors.Is(err, dynalease.ErrInvalid))
}
