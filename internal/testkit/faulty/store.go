package faulty

import (
	"context"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// More operations Store counts and can fail.
const (
	OpRemove Op = "Remove"
	OpScan   Op = "Scan"
)

// Store wraps a rows.Store: it records every call and applies
// injected faults, per operation. A fault injected for an operation
// applies to the next calls of it on any key. It is safe for concurrent
// use.
type Store struct {
	faults
	inner rows.Store
}

var _ rows.Store = (*Store)(nil)

// New wraps inner.
func New(inner rows.Store) *Store {
	return &Store{faults: faults{faults: map[Op][]queued{}}, inner: inner}
}

// Describe returns the wrapped store's description.
func (f *Store) Describe() string { return "faulty " + f.inner.Describe() }

// Get reads through the wrapped store, subject to faults for OpGet.
func (f *Store) Get(ctx context.Context, key resourcelock.Key) (rows.Item, error) {
	return f.item(ctx, OpGet, func() (rows.Item, error) { return f.inner.Get(ctx, key) })
}

// Create writes through the wrapped store, subject to faults for OpCreate.
func (f *Store) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	return f.item(ctx, OpCreate, func() (rows.Item, error) { return f.inner.Create(context.WithoutCancel(ctx), key, rec, opts) })
}

// Update writes through the wrapped store, subject to faults for OpUpdate.
func (f *Store) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	return f.item(ctx, OpUpdate, func() (rows.Item, error) {
		return f.inner.Update(context.WithoutCancel(ctx), key, expect, rec, opts)
	})
}

// Remove deletes through the wrapped store, subject to faults for OpRemove.
func (f *Store) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	_, err := f.do(ctx, OpRemove, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, f.inner.Remove(context.WithoutCancel(ctx), key, expect)
	})
	return err
}

// Scan reads through the wrapped store, subject to faults for OpScan.
func (f *Store) Scan(ctx context.Context, partition string, fn func(rows.Item, error) error) error {
	_, err := f.do(ctx, OpScan, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, f.inner.Scan(ctx, partition, fn)
	})
	return err
}

// OpFence names Store.Fence.
const OpFence Op = "Fence"

// Fence passes through the wrapped store, subject to faults for OpFence.
func (f *Store) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (rows.Item, error) {
	return f.item(ctx, OpFence, func() (rows.Item, error) {
		return f.inner.Fence(context.WithoutCancel(ctx), key, holder, acquisitionID)
	})
}

// CanFence forwards the wrapped store's CanFence.
func (f *Store) CanFence() bool { return f.inner.CanFence() }

// OpJoin, OpLeave, OpShare and OpStand name Store.Join, Store.Leave,
// Store.Share and Store.Stand.
const (
	OpJoin  Op = "Join"
	OpLeave Op = "Leave"
	OpShare Op = "Share"
	OpStand Op = "Stand"
)

// Stand passes through the wrapped store, subject to faults for OpStand.
func (f *Store) Stand(ctx context.Context, key resourcelock.Key, c rows.Candidate, drop []string) (rows.Item, error) {
	return f.item(ctx, OpStand, func() (rows.Item, error) { return f.inner.Stand(context.WithoutCancel(ctx), key, c, drop) })
}

// Share passes through the wrapped store, subject to faults for OpShare.
func (f *Store) Share(ctx context.Context, key resourcelock.Key, w rows.Share) (rows.Item, error) {
	return f.item(ctx, OpShare, func() (rows.Item, error) { return f.inner.Share(context.WithoutCancel(ctx), key, w) })
}

// Join passes through the wrapped store, subject to faults for OpJoin.
func (f *Store) Join(ctx context.Context, key resourcelock.Key, w rows.Waiter) (rows.Item, error) {
	return f.item(ctx, OpJoin, func() (rows.Item, error) { return f.inner.Join(context.WithoutCancel(ctx), key, w) })
}

// Leave passes through the wrapped store, subject to faults for OpLeave.
func (f *Store) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (rows.Item, error) {
	return f.item(ctx, OpLeave, func() (rows.Item, error) {
		return f.inner.Leave(context.WithoutCancel(ctx), key, ticket, index)
	})
}

// item runs apply, a request that answers with a row, subject to faults
// for op.
func (f *Store) item(ctx context.Context, op Op, apply func() (rows.Item, error)) (rows.Item, error) {
	var it rows.Item
	_, err := f.do(ctx, op, func() (resourcelock.Record, error) {
		var err error
		it, err = apply()
		return it.Record, err
	})
	if err != nil {
		return rows.Item{}, err
	}
	return it, nil
}

// OpGetMany, OpWriteMany and OpFenceMany name the Store methods of many
// rows.
const (
	OpGetMany   Op = "GetMany"
	OpWriteMany Op = "WriteMany"
	OpFenceMany Op = "FenceMany"
)

// MaxMany forwards the wrapped store's MaxMany.
func (f *Store) MaxMany() int { return f.inner.MaxMany() }

// GetMany reads through the wrapped store, subject to faults for
// OpGetMany.
func (f *Store) GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]rows.Item, error) {
	var rows map[resourcelock.Key]rows.Item
	_, err := f.do(ctx, OpGetMany, func() (resourcelock.Record, error) {
		var err error
		rows, err = f.inner.GetMany(ctx, keys)
		return resourcelock.Record{}, err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// WriteMany writes through the wrapped store, subject to faults for
// OpWriteMany.
func (f *Store) WriteMany(ctx context.Context, writes []rows.Write) error {
	_, err := f.do(ctx, OpWriteMany, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, f.inner.WriteMany(context.WithoutCancel(ctx), writes)
	})
	return err
}

// FenceMany passes through the wrapped store, subject to faults for
// OpFenceMany.
func (f *Store) FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (int64, error) {
	var gen int64
	_, err := f.do(ctx, OpFenceMany, func() (resourcelock.Record, error) {
		var err error
		gen, err = f.inner.FenceMany(context.WithoutCancel(ctx), keys, holder, acquisitionID)
		return resourcelock.Record{}, err
	})
	return gen, err
}
