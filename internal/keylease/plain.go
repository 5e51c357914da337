package keylease

import (
	"context"
	"fmt"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// PortOf returns i as a Port with none of a Port's other abilities: no
// queue, no fencing, no deletion, its writes' options its own.
func PortOf(i resourcelock.Interface) Port { return plain{i} }

// plain is a resourcelock.Interface of another kind than the stores'
// leases, as a Port.
type plain struct{ resourcelock.Interface }

func (p plain) cannot(what string) error {
	return fmt.Errorf("%w: %s cannot %s", dynalease.ErrInvalid, p.Describe(), what)
}

func (p plain) Get(ctx context.Context) (rows.Item, error) {
	rec, err := p.Interface.Get(ctx)
	return rows.Item{Record: rec}, err
}

func (p plain) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	rec, err := p.Interface.Create(ctx, rec)
	return rows.Item{Record: rec}, err
}

func (p plain) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	rec, err := p.Interface.Update(ctx, expect, rec)
	return rows.Item{Record: rec}, err
}

func (p plain) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	if d != nil {
		return rows.Item{}, p.cannot("condition a write on its queue")
	}
	return p.Update(ctx, expect, rec)
}

func (p plain) Join(context.Context, rows.Waiter) (rows.Item, error) {
	return rows.Item{}, p.cannot("queue waiters")
}

func (p plain) Leave(context.Context, string, int) (rows.Item, error) {
	return rows.Item{}, p.cannot("queue waiters")
}

func (plain) Joinable(rows.Waiter) bool { return false }

func (p plain) Remove(context.Context, resourcelock.Precondition) error {
	return p.cannot("delete its row")
}

func (p plain) Fence(context.Context, string) (rows.Item, error) {
	return rows.Item{}, p.cannot("fence")
}

func (plain) CanFence() bool { return false }

func (p plain) With(Options) Port { return p }

// AsInterface returns l as a resourcelock.Interface, whose answers are
// the records of l's rows: for the conformance suite of Interface, and
// tests that give an elector a Lease.
func AsInterface(l *Lease) resourcelock.Interface { return records{l} }

// records is a Lease answering with records.
type records struct{ *Lease }

func (l records) Get(ctx context.Context) (resourcelock.Record, error) {
	it, err := l.Lease.Get(ctx)
	return it.Record, err
}

func (l records) Create(ctx context.Context, rec resourcelock.Record) (resourcelock.Record, error) {
	it, err := l.Lease.Create(ctx, rec)
	return it.Record, err
}

func (l records) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (resourcelock.Record, error) {
	it, err := l.Lease.Update(ctx, expect, rec)
	return it.Record, err
}
