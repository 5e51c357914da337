package keylease

import (
	"context"
	"fmt"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// PortOf returns i as a Port: itself when it is one (the leases the stores
// make), or else i with none of a Port's other abilities: no queue, no
// fencing, no deletion, its writes' options its own.
func PortOf(i resourcelock.Interface) Port {
	if p, ok := i.(Port); ok {
		return p
	}
	return plain{i}
}

// plain is a resourcelock.Interface of another kind than the stores'
// leases, as a Port.
type plain struct{ resourcelock.Interface }

func (p plain) cannot(what string) error {
	return fmt.Errorf("%w: %s cannot %s", dynalease.ErrInvalid, p.Describe(), what)
}

func (p plain) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *resourcelock.Dequeue) (resourcelock.Item, error) {
	if d != nil {
		return resourcelock.Item{}, p.cannot("condition a write on its queue")
	}
	return p.Update(ctx, expect, rec)
}

func (p plain) Join(context.Context, resourcelock.Waiter) (resourcelock.Item, error) {
	return resourcelock.Item{}, p.cannot("queue waiters")
}

func (p plain) Leave(context.Context, string, int) (resourcelock.Item, error) {
	return resourcelock.Item{}, p.cannot("queue waiters")
}

func (plain) Joinable(resourcelock.Waiter) bool { return false }

func (p plain) Remove(context.Context, resourcelock.Precondition) error {
	return p.cannot("delete its row")
}

func (p plain) Fence(context.Context, string) (resourcelock.Item, error) {
	return resourcelock.Item{}, p.cannot("fence")
}

func (plain) CanFence() bool { return false }

func (p plain) With(Options) Port { return p }
