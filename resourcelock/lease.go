package resourcelock

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lease is the one lease at a key of a Store, seen by one holder: the
// client-go-shaped Interface that election.New takes, over any Store. It
// adds only the key and the holder's identity; each method is one call of
// the store's, with the store's semantics for that key. NewDynamoDB and
// MemoryStore.Lock return one; NewLease makes one over any other Store.
//
// It also implements Fencer (through Store.Fence) and LeaseGuarder (when
// the store implements Guarder, as DynamoDBStore does; otherwise Guard
// returns an error matching ErrInvalidArgument).
type Lease struct {
	store    Store
	key      Key
	identity string
}

// DynamoDB is the name the lease over a DynamoDB table has always had in
// this package; it is a Lease.
type DynamoDB = Lease

// Memory is the name the lease over a MemoryStore has always had in this
// package; it is a Lease.
type Memory = Lease

var (
	_ Interface    = (*Lease)(nil)
	_ Fencer       = (*Lease)(nil)
	_ LeaseGuarder = (*Lease)(nil)
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

// CanFence reports whether Fence can work: false for a DynamoDB table
// without a fence table (DynamoDBConfig.FenceTable). election.New refuses
// Fencing on a lease that cannot fence.
func (l *Lease) CanFence() bool {
	if f, ok := l.store.(interface{ CanFence() bool }); ok {
		return f.CanFence()
	}
	return true
}

// Guard commits items with a check that the lease is still held as h
// says; see Guarder.
func (l *Lease) Guard(ctx context.Context, h Holding, items []types.TransactWriteItem) error {
	g, ok := l.store.(Guarder)
	if !ok {
		return fmt.Errorf("%w: %s cannot run guarded writes", ErrInvalidArgument, l.Describe())
	}
	return g.Guard(ctx, l.key, h, items)
}
