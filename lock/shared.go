package lock

import (
	"context"

	"github.com/dynalease/dynalease/internal/readlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// AcquireShared takes a shared hold of the lock on key, a read lock:
// any number of shared holders may hold the key at once, and none while a
// holder of the lock itself (Acquire: exclusive, a writer) holds it. It
// waits while a writer holds the key, and while a writer queued before
// it waits (see the package doc, Read and write): with fair waiting it
// queues, and is let in in its turn. It returns a Lock like
// Acquire's: it heartbeats, is lost (typed loss, Done, Context) and
// released like any lock, and its Key is key.
//
// A shared lock's Token is the fencing token of the hold of readers it
// belongs to (with fencing tokens on): above every earlier writer's when
// this reader began the hold or took the key over, the other readers'
// when it joined them. Present it to the resource with reads, or record
// it where the resource checks writes: a resource that refuses a token
// below the largest it has seen then refuses a writer's late write (a
// paused ex-holder's) after the readers, and a reader that read before a
// writer that has since written. It
// carries no data of its own (Data is the row's, as the last writer left
// it) and guards no writes (Guard refuses: a writer's Guard is the
// guarded write of a key).
//
// A writer holding the key is taken over once its RVN has stayed
// unchanged for its lease, as Acquire takes over a silent holder; the
// budget, WithAdditionalWait and ctx work as for Acquire, and a shared
// hold waits in the key's queue as a writer does (readers queued ahead of
// every writer hold together).
//
// It takes WithSortKeyValue, WithRefreshPeriodFor, WithAdditionalWait,
// WithSessionMonitor and WithUpgradeable; the other acquire options are
// refused with an error matching dynalease.ErrInvalid that names the
// option. Each call takes
// another hold, also in one client: shared holds of one key in one
// process do not wait for each other.
func (c *Client) AcquireShared(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquireShared(ctx, key, opts, false)
}

// TryAcquireShared takes a shared hold of the lock on key if it can
// without waiting: the row is missing or free, or held by shared holders
// with no writer waiting (and, WithUpgradeable, no other upgradeable
// reader). Otherwise it returns an error matching ErrLocked; it never takes
// a row over, since each shared hold watches the row afresh.
func (c *Client) TryAcquireShared(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	return c.acquireShared(ctx, key, opts, true)
}

func (c *Client) acquireShared(ctx context.Context, key string, opts []AcquireOption, try bool) (*Lock, error) {
	a, k, err := c.acquireConfig(key, opts)
	if err != nil {
		return nil, err
	}
	if name := a.refusedForShared(); name != "" {
		return nil, invalid(name, "a shared lock writes no data, attributes or numbers, is not reentrant and takes a missing row as it is")
	}
	reader, err := readlease.New(c.store, k, c.cfg.identity, c.clk)
	if err != nil {
		return nil, refused("key", err)
	}
	if a.upgradeable {
		reader.SetUpgradeable()
	}
	c.mu.Lock()
	h, ok := c.readHints[k]
	c.mu.Unlock()
	if ok {
		reader.Guess(h)
	}
	l, err := c.acquireTarget(ctx, target{key: k, shared: reader}, a, try)
	c.keepHint(k, reader.Hint())
	return l, err
}

// maxReadHints bounds the keys whose rows a client remembers for its
// shared holds' first joins.
const maxReadHints = 1024

// keepHint remembers what a shared hold of k saw of its row, for the
// next one's first join: a join to readers when they held it, a begin
// otherwise (one request each, when the row has not changed since).
func (c *Client) keepHint(k resourcelock.Key, h readlease.Hint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.readHints[k]; !ok && len(c.readHints) >= maxReadHints {
		for old := range c.readHints {
			delete(c.readHints, old) // any one: a hint is worth a request
			break
		}
	}
	c.readHints[k] = h
}

// sharedKey returns the key under which this client keeps the claim of
// one shared hold of k, and the kernel its watch: one of its own per
// hold, never a key's (a NUL byte no key holds), so that shared holds of
// one key do not wait for each other in process, and a hold never inherits
// another's writes in doubt.
func sharedKey(k resourcelock.Key, r *readlease.Reader) resourcelock.Key {
	return resourcelock.Key{Partition: k.Partition, Sort: k.Sort + "\x00shared " + r.Ticket()}
}

// Shared reports whether the lock is a shared hold (AcquireShared).
func (l *Lock) Shared() bool { return l.kind == kindShared }
