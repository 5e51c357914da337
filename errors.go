package dynalease

import (
	"errors"
	"fmt"
)

// The errors every package returns.
var (
	// ErrLost is matched by every *LostError: a hold (a lock, a term of
	// leadership) that ended without its holder asking.
	ErrLost = errors.New("dynalease: lost")

	// ErrInvalid is matched by every refusal the library makes before sending
	// any request: a bad configuration field, option or argument (a key over
	// DynamoDB's limits, data over MaxDataBytes, an attribute a table keeps
	// for itself), or a call its receiver cannot take (an Elector already
	// running, a set of keys on a store that writes one row at a time).
	// Waiting cannot fix it. An *InvalidError names what was refused.
	ErrInvalid = errors.New("dynalease: invalid")
)

// InvalidError names what a refusal before any request refused: Field is
// the configuration field (LeaseDuration, Table, …), the per-call option
// (WithAttributes, …) or the argument (key, …). It matches ErrInvalid, and
// what Err matches.
type InvalidError struct {
	Field  string
	Reason string
	// Err is the refusal of another layer, when that layer refused the
	// value (the store, say, refusing a key for its table).
	Err error
}

func (e *InvalidError) Error() string {
	if e.Reason == "" && e.Err != nil {
		return fmt.Sprintf("%v %s: %v", ErrInvalid, e.Field, e.Err)
	}
	return fmt.Sprintf("%v %s: %s", ErrInvalid, e.Field, e.Reason)
}

// Is makes every InvalidError match ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the other layer's refusal, if any.
func (e *InvalidError) Unwrap() error { return e.Err }
