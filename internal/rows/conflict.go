package rows

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dynalease/dynalease/resourcelock"
)

// Conflict returns the error of a write whose condition did not hold: it
// matches resourcelock.ErrConflict, names what (the store, key and operation) and wraps
// cause, the store's own error, when there is one. current is the row as
// the failed condition found it, when the store has it (dynamodbstore asks
// for it with every conditional write, and the memory store gives it too);
// CurrentItem returns it. Give nil when the row was missing or the store
// returned none: a caller that needs the row then reads it.
func Conflict(what string, current *Item, cause error) error {
	return &conflictError{what: what, current: current, err: cause}
}

// CurrentItem returns the row that a failed conditional write found, when
// err is a Conflict that carries one. It says nothing about what happens to
// the row afterwards.
func CurrentItem(err error) (Item, bool) {
	var ce *conflictError
	if !errors.As(err, &ce) || ce.current == nil {
		return Item{}, false
	}
	it := *ce.current
	it.Attributes, it.Numbers = maps.Clone(it.Attributes), maps.Clone(it.Numbers)
	it.Queue, it.Data = slices.Clone(it.Queue), slices.Clone(it.Data)
	it.Readers = slices.Clone(it.Readers)
	it.Candidates = slices.Clone(it.Candidates)
	return it, true
}

type conflictError struct {
	what    string
	current *Item
	err     error
}

func (e *conflictError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("%s: %v", e.what, resourcelock.ErrConflict)
	}
	return fmt.Sprintf("%s: %v (%v)", e.what, resourcelock.ErrConflict, e.err)
}

func (e *conflictError) Is(target error) bool { return target == resourcelock.ErrConflict }

func (e *conflictError) Unwrap() error { return e.err }
