package resourcelock

import (
	"context"
	"fmt"
)

// Lease is the one lease at a key of a Store, seen by one holder: the
// client-go-shaped Interface that election.New takes, over any Store. It
// adds only the key and the holder's identity; each method is one call of
// the store's, with the store's semantics for that key. NewLease makes one
// over any Store (dynamodbstore.NewLease over a DynamoDB table). It also
// implements Fencer, through Store.Fence.
type Lease struct {
	store    Store
	key      Key
	identity string
}

var (
	_ Interface = (*Lease)(nil)
	_ Fencer    = (*Lease)(nil)
)

// NewLease returns the lease at key of store, written as identity. It
// checks the key's and the identity's limits and sends no request.
func NewLease(store Store, key Key, identity string) (*Lease, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", ErrInvalidArgument)
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := checkIdentity(identity); err != nil {
		return nil, err
	}
	return &Lease{store: store, key: key, identity: identity}, nil
}

// Identity returns the holder identity this lease writes.
func (l *Lease) Identity() string { return l.identity }

// Describe returns the store's description and the key, such as
// "dynamodb:TABLE/NAME" or "memory/NAME".
func (l *Lease) Describe() string { return l.store.Describe() + "/" + l.key.String() }

// Key returns the lease's key in its store.
func (l *Lease) Key() Key { return l.key }

// Get reads the record; see Store.Get.
func (l *Lease) Get(ctx context.Context) (Record, error) {
	it, err := l.store.Get(ctx, l.key)
	return it.Record, err
}

// Create writes rec when the record is missing or released; see
// Interface.Create.
func (l *Lease) Create(ctx context.Context, rec Record) (Record, error) {
	rec, err := fillHolder(l.identity, rec)
	if err != nil {
		return Record{}, err
	}
	it, err := l.store.Create(ctx, l.key, rec, WriteOptions{})
	return it.Record, err
}

// Update writes rec when the record satisfies expect; see
// Interface.Update.
func (l *Lease) Update(ctx context.Context, expect Precondition, rec Record) (Record, error) {
	rec, err := fillHolder(l.identity, rec)
	if err != nil {
		return Record{}, err
	}
	it, err := l.store.Update(ctx, l.key, expect, rec, WriteOptions{})
	return it.Record, err
}

// Fence gives the record a new fencing generation; see Store.Fence.
func (l *Lease) Fence(ctx context.Context, acquisitionID string) (Record, error) {
	it, err := l.store.Fence(ctx, l.key, l.identity, acquisitionID)
	return it.Record, err
}

// CanFence reports whether Fence can work (see Store.CanFence).
// election.New refuses Fencing on a lease that cannot fence.
func (l *Lease) CanFence() bool { return l.store.CanFence() }

// Store returns the store the lease is kept in.
func (l *Lease) Store() Store { return l.store }
