package lock

import (
	"context"
	"time"

	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// engineFor returns the engine's view of this client's settings, shared by
// every lock and Acquire of the client.
func (c *Client) engineFor(onlyIfExists bool) *rvnlease.Config {
	if onlyIfExists {
		return c.engine[1]
	}
	return c.engine[0]
}

// engineConfig builds the engine's view of this client's settings.
func (c *Client) engineConfig(onlyIfExists bool) *rvnlease.Config {
	return &rvnlease.Config{
		Clock:          c.clk,
		Identity:       c.cfg.owner,
		RequestTimeout: c.cfg.requestTimeout,
		Validity:       c.cfg.validity(),
		OnlyIfExists:   onlyIfExists,
		Log:            c.log,
		Observe:        c.observeRequest,
	}
}

// observeRequest reports one request to the store to the metrics.
func (c *Client) observeRequest(op string, err error, d time.Duration) {
	c.cfg.metrics.Request(op, metrics.RequestOutcome(err), d)
}

// acquirePort is one key of the client's store as an Acquire writes it:
// with the call's attributes, data choice and OnlyIfExists.
type acquirePort struct {
	c   *Client
	key resourcelock.Key
	set *resourcelock.Set // the rows of a set lock, instead of key
	cfg *acquireConfig
}

func (p acquirePort) options() resourcelock.WriteOptions {
	o := p.c.writeOptions(p.cfg.attributes)
	o.KeepData = !p.cfg.replaceData
	return o
}

func (p acquirePort) Get(ctx context.Context) (resourcelock.Item, error) {
	return holdPort{c: p.c, key: p.key, set: p.set}.Get(ctx)
}

func (p acquirePort) Create(ctx context.Context, rec resourcelock.Record) (resourcelock.Item, error) {
	o := p.options()
	if p.set != nil {
		return p.set.Create(ctx, rec, o)
	}
	o.OnlyIfExists = p.cfg.onlyIfExists
	return p.c.store.Create(ctx, p.key, rec, o)
}

func (p acquirePort) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Update(ctx, expect, rec, p.options())
	}
	return p.c.store.Update(ctx, p.key, expect, rec, p.options())
}

func (p acquirePort) Join(ctx context.Context, w resourcelock.Waiter) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Join(ctx, w)
	}
	return p.c.store.Join(ctx, p.key, w)
}

func (p acquirePort) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *resourcelock.Dequeue) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.UpdateDequeue(ctx, expect, rec, d, p.options())
	}
	o := p.options()
	o.Dequeue = d
	return p.c.store.Update(ctx, p.key, expect, rec, o)
}

// PassOn writes a waiter's pass-on of a hand-over it will not confirm:
// none of the call's data, attributes or TTL, only the record, with the
// row's data, attributes and TTL as kept has them.
func (p acquirePort) PassOn(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *resourcelock.Dequeue, kept resourcelock.Item) (resourcelock.Item, error) {
	o := resourcelock.WriteOptions{KeepData: true, Expires: kept.Expires, Dequeue: d}
	if p.set != nil {
		return p.set.UpdateDequeue(ctx, expect, rec, d, o)
	}
	return p.c.store.Update(ctx, p.key, expect, rec, o)
}

func (p acquirePort) Leave(ctx context.Context, ticket string, index int) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Leave(ctx, ticket, index)
	}
	return p.c.store.Leave(ctx, p.key, ticket, index)
}

func (p acquirePort) Fence(ctx context.Context, holder, acquisitionID string) (resourcelock.Item, error) {
	return holdPort{c: p.c, key: p.key, set: p.set}.Fence(ctx, holder, acquisitionID)
}

// holdPort is one key of the client's store, or the rows of a set, as its
// holder writes it: heartbeats and releases, with the record's own data.
type holdPort struct {
	c   *Client
	key resourcelock.Key
	set *resourcelock.Set // the rows of a set lock, instead of key
}

func (p holdPort) Get(ctx context.Context) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Get(ctx)
	}
	return p.c.store.Get(ctx, p.key)
}

func (p holdPort) Create(ctx context.Context, rec resourcelock.Record) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Create(ctx, rec, p.c.writeOptions(nil))
	}
	return p.c.store.Create(ctx, p.key, rec, p.c.writeOptions(nil))
}

func (p holdPort) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Update(ctx, expect, rec, p.c.writeOptions(nil))
	}
	return p.c.store.Update(ctx, p.key, expect, rec, p.c.writeOptions(nil))
}

// UpdateDequeue is a release that takes waiters out of the queue (a
// hand-over), or expects it empty.
func (p holdPort) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *resourcelock.Dequeue) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.UpdateDequeue(ctx, expect, rec, d, p.c.writeOptions(nil))
	}
	o := p.c.writeOptions(nil)
	o.Dequeue = d
	return p.c.store.Update(ctx, p.key, expect, rec, o)
}

func (p holdPort) Fence(ctx context.Context, holder, acquisitionID string) (resourcelock.Item, error) {
	if p.set != nil {
		return p.set.Fence(ctx, holder, acquisitionID)
	}
	return p.c.store.Fence(ctx, p.key, holder, acquisitionID)
}

// lockPort is the port of a lock's holder: its key of the client's store,
// written as holdPort writes it. It is one pointer, so that a lock keeps
// it without an allocation of its own.
type lockPort struct{ l *Lock }

func (p lockPort) port() holdPort {
	hp := holdPort{c: p.l.c, key: p.l.key}
	if set := p.l.slot.set; set != nil {
		hp.set = set.rows
	}
	return hp
}

func (p lockPort) Get(ctx context.Context) (resourcelock.Item, error) { return p.port().Get(ctx) }

func (p lockPort) Create(ctx context.Context, rec resourcelock.Record) (resourcelock.Item, error) {
	return p.port().Create(ctx, rec)
}

func (p lockPort) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (resourcelock.Item, error) {
	return p.port().Update(ctx, expect, rec)
}

func (p lockPort) Fence(ctx context.Context, holder, acquisitionID string) (resourcelock.Item, error) {
	return p.port().Fence(ctx, holder, acquisitionID)
}
