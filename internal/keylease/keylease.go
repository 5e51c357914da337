// Package keylease is the lease at one key of a store, seen by one holder
// (Lease), and the interface every lease the kernel writes through
// implements (Port): one key's, or a kind's fold of several rows into one
// lease (a lock's set of keys). The stores make their leases for election
// with it, and package lock its leases of one key.
package keylease

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Port is a lease as the kernel acquires, holds and releases it: the
// client-go-shaped resourcelock.Interface over rows, and everything else
// the kernel does with a lease. Every method is required; a lease that cannot do
// something (fence, queue, delete its row) says so with an error matching
// dynalease.ErrInvalid (and CanFence).
type Port interface {
	// Get, Create, Update, Identity and Describe are
	// resourcelock.Interface's, answering with the whole row.
	Get(ctx context.Context) (rows.Item, error)
	Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error)
	Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error)
	Identity() string
	Describe() string
	// UpdateDequeue is Update conditioned on the queue by d, taking the
	// entries it names out (see rows.WriteOptions.Dequeue).
	UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error)
	// Join and Leave are the store's, for the lease's queue.
	Join(ctx context.Context, w rows.Waiter) (rows.Item, error)
	Leave(ctx context.Context, ticket string, index int) (rows.Item, error)
	// Joinable makes w the waiter this lease waits as, and reports
	// whether it has a queue to join now (a set whose first key is free
	// while another is held has none).
	Joinable(w rows.Waiter) bool
	// Remove deletes the lease's row(s) when they satisfy expect.
	Remove(ctx context.Context, expect resourcelock.Precondition) error
	// Fence gives the lease's row(s), held by this lease's identity under
	// acquisitionID, a new fencing generation, and returns the row as
	// fenced; CanFence reports whether it can.
	Fence(ctx context.Context, acquisitionID string) (rows.Item, error)
	CanFence() bool
	// With returns the same lease writing o with every Create and Update
	// (a Dequeue aside: UpdateDequeue sets it).
	With(o Options) Port
}

// Options are what a lease's writes carry beside the record: the store's
// WriteOptions, and a TTL counted from each write's wall-clock time, which
// sets WriteOptions.Expires when it has none.
type Options struct {
	rows.WriteOptions
	TTL time.Duration
}

// At returns the write options of a write sent at the wall-clock time
// now.
func (o Options) At(now time.Time) rows.WriteOptions {
	w := o.WriteOptions
	if o.TTL > 0 && w.Expires.IsZero() && !w.KeepTTL {
		w.Expires = now.Add(o.TTL)
	}
	return w
}

// Lease is the one lease at a key of a Store, seen by one holder: a Port
// over any Store, adding only the key, the holder's identity and the
// options its writes carry; each method is one call of the store's, with
// the store's semantics for that key.
//
// A Lease is small (a pointer and a key): the store, identity and options
// are kept once and shared by every lease made from one with At.
type Lease struct {
	*binding
	key resourcelock.Key
}

// binding is what the leases of one store, holder and options share.
type binding struct {
	store    rows.Store
	identity string
	opts     Options
}

var _ Port = (*Lease)(nil)

// New returns the lease at key of store, written as identity. It checks
// the key's and the identity's limits (an error matching
// dynalease.ErrInvalid) and sends no request.
func New(store rows.Store, key resourcelock.Key, identity string) (*Lease, error) {
	if err := Check(store, key, identity); err != nil {
		return nil, err
	}
	return &Lease{binding: &binding{store: store, identity: identity}, key: key}, nil
}

// Check reports whether a lease at key of store, written as identity, can
// be made: a store, and the key's and the identity's limits (an error
// matching dynalease.ErrInvalid).
func Check(store rows.Store, key resourcelock.Key, identity string) error {
	if store == nil {
		return &dynalease.InvalidError{Field: "store", Reason: "is nil"}
	}
	if err := record.CheckKey(key); err != nil {
		return err
	}
	return record.CheckIdentity(identity)
}

// With returns the lease writing o with every Create and Update.
func (l *Lease) With(o Options) Port { return l.WithOptions(o) }

// WithOptions is With, returning the Lease itself.
func (l *Lease) WithOptions(o Options) *Lease {
	return &Lease{binding: &binding{store: l.store, identity: l.identity, opts: o}, key: l.key}
}

// At returns the same lease (store, identity, options) at key, sharing
// them. It does not check key (New does): a caller that made key from
// checked parts passes it as it is.
func (l *Lease) At(key resourcelock.Key) Lease { return Lease{binding: l.binding, key: key} }

// Identity returns the holder identity this lease writes.
func (l *Lease) Identity() string { return l.identity }

// Describe returns the store's description and the key, such as
// "dynamodb:TABLE/NAME" or "memory/NAME".
func (l *Lease) Describe() string { return l.store.Describe() + "/" + l.key.String() }

// Key returns the lease's key in its store.
func (l *Lease) Key() resourcelock.Key { return l.key }

// Store returns the store the lease is kept in.
func (l *Lease) Store() rows.Store { return l.store }

// Get reads the row; see rows.Store.Get.
func (l *Lease) Get(ctx context.Context) (rows.Item, error) {
	return l.store.Get(ctx, l.key)
}

// Create writes rec when the record is missing or free; see
// resourcelock.Interface.Create.
func (l *Lease) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	rec, err := FillHolder(l.identity, rec, false)
	if err != nil {
		return rows.Item{}, err
	}
	return l.store.Create(ctx, l.key, rec, l.opts.At(time.Now()))
}

// Update writes rec when the record satisfies expect; see
// resourcelock.Interface.Update.
func (l *Lease) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	return l.UpdateDequeue(ctx, expect, rec, nil)
}

// UpdateDequeue is Update conditioned on the queue by d, taking the
// entries it names out.
func (l *Lease) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	rec, err := FillHolder(l.identity, rec, expect.HolderIdentity == l.identity)
	if err != nil {
		return rows.Item{}, err
	}
	o := l.opts.At(time.Now())
	o.Dequeue = d
	return l.store.Update(ctx, l.key, expect, rec, o)
}

// Join queues w; see rows.Store.Join.
func (l *Lease) Join(ctx context.Context, w rows.Waiter) (rows.Item, error) {
	return l.store.Join(ctx, l.key, w)
}

// Leave takes the entry ticket at index out of the queue; see
// rows.Store.Leave.
func (l *Lease) Leave(ctx context.Context, ticket string, index int) (rows.Item, error) {
	return l.store.Leave(ctx, l.key, ticket, index)
}

// Joinable reports true: one key always has its queue.
func (l *Lease) Joinable(rows.Waiter) bool { return true }

// Remove deletes the row when it satisfies expect; see
// rows.Store.Remove.
func (l *Lease) Remove(ctx context.Context, expect resourcelock.Precondition) error {
	return l.store.Remove(ctx, l.key, expect)
}

// Fence gives the record a new fencing generation; see
// rows.Store.Fence.
func (l *Lease) Fence(ctx context.Context, acquisitionID string) (rows.Item, error) {
	return l.store.Fence(ctx, l.key, l.identity, acquisitionID)
}

// CanFence reports whether Fence can work (see rows.Store.CanFence).
func (l *Lease) CanFence() bool { return l.store.CanFence() }

// FillHolder returns rec naming holder id, or an error when it names
// someone else; a holder's own write (handOver) may hand the lease over,
// naming the waiter it goes to (HandedTo).
func FillHolder(id string, rec resourcelock.Record, handOver bool) (resourcelock.Record, error) {
	switch {
	case rec.HolderIdentity == "":
		rec.HolderIdentity = id
	case rec.HolderIdentity == id, handOver && rec.HandedTo != "":
	default:
		return resourcelock.Record{}, fmt.Errorf("%w: record names holder %q but this lock's identity is %q", dynalease.ErrInvalid, rec.HolderIdentity, id)
	}
	return rec, nil
}
