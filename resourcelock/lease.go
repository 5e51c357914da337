package resourcelock

import (
	"context"
	"fmt"

	"github.com/dynalease/dynalease"
)

// Lease is the one lease at a key of a Store, seen by one holder: the
// client-go-shaped Interface over any Store. It adds only the key, the
// holder's identity and the options its writes carry; each method is one
// call of the store's, with the store's semantics for that key. NewLease
// makes one over any Store (dynamodbstore.NewLease over a DynamoDB table).
// It has every capability of a lease: Fencer (through Store.Fence),
// Queuer, Remover and Optioner.
//
// A Lease is small (a pointer and a key): the store, identity and options
// are kept once and shared by every lease made from one with At.
type Lease struct {
	*binding
	key Key
}

// binding is what the leases of one store, holder and options share.
type binding struct {
	store    Store
	identity string
	opts     WriteOptions
}

var (
	_ Interface = (*Lease)(nil)
	_ Fencer    = (*Lease)(nil)
	_ Queuer    = (*Lease)(nil)
	_ Remover   = (*Lease)(nil)
	_ Optioner  = (*Lease)(nil)
)

// NewLease returns the lease at key of store, written as identity. It
// checks the key's and the identity's limits and sends no request.
func NewLease(store Store, key Key, identity string) (*Lease, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", dynalease.ErrInvalid)
	}
	if err := key.Check(); err != nil {
		return nil, err
	}
	if err := checkIdentity(identity); err != nil {
		return nil, err
	}
	return &Lease{binding: &binding{store: store, identity: identity}, key: key}, nil
}

// With returns the lease writing o with every Create and Update (its
// Dequeue aside: UpdateDequeue sets it).
func (l *Lease) With(o WriteOptions) Interface {
	return &Lease{binding: &binding{store: l.store, identity: l.identity, opts: o}, key: l.key}
}

// At returns the same lease (store, identity, options) at key, sharing
// them. It does not check key (NewLease does): a caller that made key from
// checked parts passes it as it is.
func (l *Lease) At(key Key) Lease { return Lease{binding: l.binding, key: key} }

// Identity returns the holder identity this lease writes.
func (l *Lease) Identity() string { return l.identity }

// Describe returns the store's description and the key, such as
// "dynamodb:TABLE/NAME" or "memory/NAME".
func (l *Lease) Describe() string { return l.store.Describe() + "/" + l.key.String() }

// Key returns the lease's key in its store.
func (l *Lease) Key() Key { return l.key }

// Store returns the store the lease is kept in.
func (l *Lease) Store() Store { return l.store }

// Get reads the row; see Store.Get.
func (l *Lease) Get(ctx context.Context) (Item, error) { return l.store.Get(ctx, l.key) }

// Create writes rec when the record is missing or free (Item.Free); see
// Interface.Create.
func (l *Lease) Create(ctx context.Context, rec Record) (Item, error) {
	rec, err := fillHolder(l.identity, rec, false)
	if err != nil {
		return Item{}, err
	}
	return l.store.Create(ctx, l.key, rec, l.opts)
}

// Update writes rec when the record satisfies expect; see
// Interface.Update.
func (l *Lease) Update(ctx context.Context, expect Precondition, rec Record) (Item, error) {
	return l.UpdateDequeue(ctx, expect, rec, nil)
}

// UpdateDequeue is Update conditioned on the queue by d, taking the
// entries it names out (see WriteOptions.Dequeue).
func (l *Lease) UpdateDequeue(ctx context.Context, expect Precondition, rec Record, d *Dequeue) (Item, error) {
	rec, err := fillHolder(l.identity, rec, expect.HolderIdentity == l.identity)
	if err != nil {
		return Item{}, err
	}
	o := l.opts
	o.Dequeue = d
	return l.store.Update(ctx, l.key, expect, rec, o)
}

// Join queues w; see Store.Join.
func (l *Lease) Join(ctx context.Context, w Waiter) (Item, error) { return l.store.Join(ctx, l.key, w) }

// Leave takes the entry ticket at index out of the queue; see
// Store.Leave.
func (l *Lease) Leave(ctx context.Context, ticket string, index int) (Item, error) {
	return l.store.Leave(ctx, l.key, ticket, index)
}

// Remove deletes the row when it satisfies expect; see Store.Remove.
func (l *Lease) Remove(ctx context.Context, expect Precondition) error {
	return l.store.Remove(ctx, l.key, expect)
}

// Fence gives the record a new fencing generation; see Store.Fence.
func (l *Lease) Fence(ctx context.Context, acquisitionID string) (Item, error) {
	return l.store.Fence(ctx, l.key, l.identity, acquisitionID)
}

// CanFence reports whether Fence can work (see Store.CanFence).
// election.New refuses Fencing on a lease that cannot fence.
func (l *Lease) CanFence() bool { return l.store.CanFence() }
