package resourcelock

import (
	"errors"
	"fmt"
)

// ConflictError is the error of a write whose condition did not hold. It
// matches ErrConflict.
//
// Current is the row as the failed condition found it, when the store
// returned it: dynamodbstore.Store asks for it with every conditional write
// (ReturnValuesOnConditionCheckFailure ALL_OLD), and MemoryStore gives it
// too. Current is nil when the row was missing, when the store returned no
// item, or when the item returned could not be decoded; a caller that needs
// the row then reads it. Current says nothing about what happens to the row
// afterwards.
type ConflictError struct {
	// What names the store, key and operation, for the message.
	What string
	// Current is the row the condition was checked against, or nil.
	Current *Item
	// Err is the store's own error, when there is one.
	Err error
}

func (e *ConflictError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: %v", e.What, ErrConflict)
	}
	return fmt.Sprintf("%s: %v (%v)", e.What, ErrConflict, e.Err)
}

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the store's own error.
func (e *ConflictError) Unwrap() error { return e.Err }

// CurrentItem returns the row that a failed conditional write found, when
// err is a ConflictError that carries one.
func CurrentItem(err error) (Item, bool) {
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current == nil {
		return Item{}, false
	}
	return cloneItem(*ce.Current), true
}
