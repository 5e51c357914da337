package rows

import (
	"fmt"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Seal is what dynalease's public store types embed, under an unexported
// name, to carry their rows: its one method is this package's, so no
// other package can give a value one, and it exposes nothing.
type Seal struct{ rows Store }

// NewSeal returns the Seal of rows.
func NewSeal(rows Store) Seal { return Seal{rows: rows} }

func (s Seal) sealedRows() Store { return s.rows }

// sealed is a value that carries rows: one embedding a Seal.
type sealed interface{ sealedRows() Store }

// Open returns the rows of store: one made by dynamodbstore.New or
// memorystore.New (or this package's Sealed). A nil store, or one made
// otherwise, is refused with an error matching dynalease.ErrInvalid that
// names field.
func Open(store resourcelock.Store, field string) (Store, error) {
	if s, ok := store.(sealed); ok && s.sealedRows() != nil {
		return s.sealedRows(), nil
	}
	if store == nil {
		return nil, fmt.Errorf("%w: %s is required", dynalease.ErrInvalid, field)
	}
	return nil, fmt.Errorf("%w: %s: %T is not a store made by dynamodbstore.New or memorystore.New (other storage serves an elector through resourcelock.Interface)", dynalease.ErrInvalid, field, store)
}

// Sealed returns rows as a resourcelock.Store, for the stores of tests
// (a fault-injecting store, the simulator's) that wrap or stand in for
// dynalease's own.
func Sealed(rows Store) resourcelock.Store { return sealedStore{NewSeal(rows)} }

type sealedStore struct{ Seal }

func (s sealedStore) Describe() string { return s.rows.Describe() }

// MustOpen is Open for a store known to be one of dynalease's (in tests):
// it panics on any other.
func MustOpen(store resourcelock.Store) Store {
	r, err := Open(store, "store")
	if err != nil {
		panic(err)
	}
	return r
}

// Raw is a store whose rows a test reads and writes without any
// condition, as another client, a corrupting bug or DynamoDB's TTL might:
// the memory store's.
type Raw interface {
	Item(key resourcelock.Key) (Item, bool)
	PutItem(it Item)
	DeleteItem(key resourcelock.Key)
}

// MustRaw returns the raw rows of a memory store (in tests); it panics on
// any other store.
func MustRaw(store resourcelock.Store) Raw { return MustOpen(store).(Raw) }
