package resourcelocktest

import (
	"context"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// More operations FaultyStore counts and can fail.
const (
	OpRemove Op = "Remove"
	OpScan   Op = "Scan"
)

// FaultyStore wraps a resourcelock.Store: it records every call and
// applies injected faults, per operation. A fault injected for an
// operation applies to the next calls of it on any key. Over it,
// resourcelock.NewLease gives a faulty Interface. It is safe for
// concurrent use.
type FaultyStore struct {
	faults
	inner resourcelock.Store
}

var _ resourcelock.Store = (*FaultyStore)(nil)

// NewFaultyStore wraps inner.
func NewFaultyStore(inner resourcelock.Store) *FaultyStore {
	return &FaultyStore{faults: faults{faults: map[Op][]queued{}}, inner: inner}
}

// Describe returns the wrapped store's description.
func (f *FaultyStore) Describe() string { return "faulty " + f.inner.Describe() }

// Get reads through the wrapped store, subject to faults for OpGet.
func (f *FaultyStore) Get(ctx context.Context, key resourcelock.Key) (resourcelock.Item, error) {
	return f.item(ctx, OpGet, func() (resourcelock.Item, error) { return f.inner.Get(ctx, key) })
}

// Create writes through the wrapped store, subject to faults for OpCreate.
func (f *FaultyStore) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts resourcelock.WriteOptions) (resourcelock.Item, error) {
	return f.item(ctx, OpCreate, func() (resourcelock.Item, error) { return f.inner.Create(context.WithoutCancel(ctx), key, rec, opts) })
}

// Update writes through the wrapped store, subject to faults for OpUpdate.
func (f *FaultyStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts resourcelock.WriteOptions) (resourcelock.Item, error) {
	return f.item(ctx, OpUpdate, func() (resourcelock.Item, error) {
		return f.inner.Update(context.WithoutCancel(ctx), key, expect, rec, opts)
	})
}

// Remove deletes through the wrapped store, subject to faults for OpRemove.
func (f *FaultyStore) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	_, err := f.do(ctx, OpRemove, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, f.inner.Remove(context.WithoutCancel(ctx), key, expect)
	})
	return err
}

// Scan reads through the wrapped store, subject to faults for OpScan.
func (f *FaultyStore) Scan(ctx context.Context, partition string, fn func(resourcelock.Item, error) error) error {
	_, err := f.do(ctx, OpScan, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, f.inner.Scan(ctx, partition, fn)
	})
	return err
}

// OpFence names Store.Fence.
const OpFence Op = "Fence"

// Fence passes through the wrapped store, subject to faults for OpFence.
func (f *FaultyStore) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (resourcelock.Item, error) {
	return f.item(ctx, OpFence, func() (resourcelock.Item, error) {
		return f.inner.Fence(context.WithoutCancel(ctx), key, holder, acquisitionID)
	})
}

// CanFence forwards the wrapped store's CanFence.
func (f *FaultyStore) CanFence() bool { return f.inner.CanFence() }

// OpJoin and OpLeave name Store.Join and Store.Leave.
const (
	OpJoin  Op = "Join"
	OpLeave Op = "Leave"
)

// Join passes through the wrapped store, subject to faults for OpJoin.
func (f *FaultyStore) Join(ctx context.Context, key resourcelock.Key, w resourcelock.Waiter) (resourcelock.Item, error) {
	return f.item(ctx, OpJoin, func() (resourcelock.Item, error) { return f.inner.Join(context.WithoutCancel(ctx), key, w) })
}

// Leave passes through the wrapped store, subject to faults for OpLeave.
func (f *FaultyStore) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (resourcelock.Item, error) {
	return f.item(ctx, OpLeave, func() (resourcelock.Item, error) {
		return f.inner.Leave(context.WithoutCancel(ctx), key, ticket, index)
	})
}

// item runs apply, a request that answers with a row, subject to faults
// for op.
func (f *FaultyStore) item(ctx context.Context, op Op, apply func() (resourcelock.Item, error)) (resourcelock.Item, error) {
	var it resourcelock.Item
	_, err := f.do(ctx, op, func() (resourcelock.Record, error) {
		var err error
		it, err = apply()
		return it.Record, err
	})
	if err != nil {
		return resourcelock.Item{}, err
	}
	return it, nil
}

// OpGetMany and OpWriteMany name ManyStore.GetMany and ManyStore.WriteMany.
const (
	OpGetMany   Op = "GetMany"
	OpWriteMany Op = "WriteMany"
)

var _ resourcelock.ManyStore = (*FaultyStore)(nil)

// MaxMany forwards the wrapped store's MaxMany, or 0 when it is not a
// ManyStore.
func (f *FaultyStore) MaxMany() int {
	if m, ok := f.inner.(resourcelock.ManyStore); ok {
		return m.MaxMany()
	}
	return 0
}

// GetMany reads through the wrapped store, subject to faults for
// OpGetMany. It returns dynalease.ErrInvalid when the wrapped store is
// not a ManyStore.
func (f *FaultyStore) GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]resourcelock.Item, error) {
	m, ok := f.inner.(resourcelock.ManyStore)
	if !ok {
		return nil, dynalease.ErrInvalid
	}
	var rows map[resourcelock.Key]resourcelock.Item
	_, err := f.do(ctx, OpGetMany, func() (resourcelock.Record, error) {
		var err error
		rows, err = m.GetMany(ctx, keys)
		return resourcelock.Record{}, err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// WriteMany writes through the wrapped store, subject to faults for
// OpWriteMany. It returns dynalease.ErrInvalid when the wrapped store
// is not a ManyStore.
func (f *FaultyStore) WriteMany(ctx context.Context, writes []resourcelock.Write) error {
	m, ok := f.inner.(resourcelock.ManyStore)
	if !ok {
		return dynalease.ErrInvalid
	}
	_, err := f.do(ctx, OpWriteMany, func() (resourcelock.Record, error) {
		return resourcelock.Record{}, m.WriteMany(context.WithoutCancel(ctx), writes)
	})
	return err
}

// OpFenceMany names ManyStore.FenceMany.
const OpFenceMany Op = "FenceMany"

// MaxFenceMany forwards the wrapped store's MaxFenceMany, or 0 when it is
// not a ManyStore.
func (f *FaultyStore) MaxFenceMany() int {
	if m, ok := f.inner.(resourcelock.ManyStore); ok {
		return m.MaxFenceMany()
	}
	return 0
}

// FenceMany passes through the wrapped store, subject to faults for
// OpFenceMany.
func (f *FaultyStore) FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (int64, error) {
	m, ok := f.inner.(resourcelock.ManyStore)
	if !ok {
		return 0, dynalease.ErrInvalid
	}
	var gen int64
	_, err := f.do(ctx, OpFenceMany, func() (resourcelock.Record, error) {
		var err error
		gen, err = m.FenceMany(context.WithoutCancel(ctx), keys, holder, acquisitionID)
		return resourcelock.Record{}, err
	})
	return gen, err
}
