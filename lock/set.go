package lock

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/setlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// AcquireSet takes the locks on keys all at once, waiting while any of
// them is held by another holder, and returns one Lock that holds them all:
// every attempt, heartbeat and release is one transaction over all the
// rows, so it never holds some keys while waiting for others, and two
// callers taking overlapping sets in any order never deadlock (see the
// package doc, Sets of keys, and setlease.Set for the argument). A
// held key is taken over once its RVN has stayed unchanged for its
// holder's lease; the budget, WithAdditionalWait and ctx work as for
// Acquire, and a fair client's set waits in the queue of its first key.
// The lock is lost, with a *dynalease.LostError naming the key, when any
// key is taken, released or deleted by another. Key returns the keys
// joined by commas; Keys returns them.
//
// Keys are partition key values, sorted and without duplicates; on a table
// with a sort key every member has the sort key value of WithSortKeyValue.
// A set holds at most the store's MaxMany keys (100 on DynamoDB), and half
// as many on a client with fencing tokens, whose set has one token above
// every token any of its keys had (one fence of all of them).
// Larger sets, data (WithData), attributes (WithAttributes), reentrancy
// (WithReentrant) and WithAcquireOnlyIfExists are refused before any
// request, with an error matching dynalease.ErrInvalid.
func (c *Client) AcquireSet(ctx context.Context, keys []string, opts ...AcquireOption) (*Lock, error) {
	return c.acquireSet(ctx, keys, opts, false)
}

// TryAcquireSet takes the locks on keys all at once if it can without
// waiting, as TryAcquire does for one key; otherwise it returns an error
// matching ErrLocked and takes none of them.
func (c *Client) TryAcquireSet(ctx context.Context, keys []string, opts ...AcquireOption) (*Lock, error) {
	return c.acquireSet(ctx, keys, opts, true)
}

func (c *Client) acquireSet(ctx context.Context, keys []string, opts []AcquireOption, try bool) (*Lock, error) {
	a, set, err := c.setConfig(keys, opts)
	if err != nil {
		return nil, err
	}
	return c.acquireTarget(ctx, target{key: set.rows.Key(), set: set}, a, try)
}

// setHold is what a lock on a set keeps of it: the rows, and this client's
// claim on each key (in the order of rows.Keys()).
type setHold struct {
	rows   *setlease.Set
	hold   keylease.Port // rows with the client's hold options
	keys   []resourcelock.Key
	claims []*claim
}

// setConfig validates an AcquireSet's keys and options and returns its
// rows.
func (c *Client) setConfig(keys []string, opts []AcquireOption) (acquireConfig, *setHold, error) {
	if len(keys) == 0 {
		return acquireConfig{}, nil, invalid("keys", "a set needs at least one key")
	}
	var a acquireConfig
	members := make([]resourcelock.Key, len(keys))
	for i, key := range keys {
		var k resourcelock.Key
		var err error
		if a, k, err = c.acquireConfig(key, opts); err != nil {
			return a, nil, err
		}
		members[i] = k
	}
	switch {
	case len(a.data) > 0 || !a.replaceData:
		return a, nil, invalid("WithData", "a set of keys carries no data")
	case len(a.attributes) > 0:
		return a, nil, invalid("WithAttributes", "a set of keys carries no attributes")
	case a.reentrant:
		return a, nil, invalid("WithReentrant", "a set of keys is not reentrant")
	case a.numbers != nil || a.below != nil:
		return a, nil, invalid(a.ledgerOption(), "a set of keys carries no integer attributes")
	case a.onlyIfExists:
		return a, nil, invalid("WithAcquireOnlyIfExists", "a set of keys takes missing rows too")
	case a.upgradeable:
		return a, nil, invalid("WithUpgradeable", "a set of keys has no shared hold: only AcquireShared takes it")
	}
	store := c.store
	set, err := setlease.New(store, members, c.cfg.identity)
	if err != nil {
		return a, nil, refused("keys", err)
	}
	if n, most := len(set.Keys()), store.MaxMany()/2; c.cfg.fencing && n > most {
		return a, nil, invalid("keys", "%d keys; a client with fencing tokens takes at most %d in a set (fencing writes two items per key in one transaction)", n, most)
	}
	return a, &setHold{rows: set, hold: set.With(c.writeOptions(nil)), keys: set.Keys()}, nil
}

// claimSet takes this client's claims on every key of set, all or none:
// while another Acquire of this client works on or holds any of them, it
// takes none and waits for that one to be freed, then tries again. So a
// set never holds some of its claims while waiting for others.
func (c *Client) claimSet(ctx context.Context, set *setHold, a acquireConfig) error {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		busy := slices.IndexFunc(set.keys, func(k resourcelock.Key) bool { return c.claims.get(k) != nil })
		if busy < 0 {
			set.claims = make([]*claim, len(set.keys))
			for i, k := range set.keys {
				set.claims[i] = &claim{}
				c.claims.put(k, set.claims[i])
			}
			set.claims[0].set = set
			c.mu.Unlock()
			return nil
		}
		k := set.keys[busy]
		if err := c.waitClaimLocked(ctx, k, c.claims.get(k), a); err != nil {
			return err
		}
	}
}

// unclaimTarget gives up the claims of t.
func (c *Client) unclaimTarget(t target) {
	if t.set == nil {
		c.unclaim(t.claimKey(), t.claim)
		return
	}
	for i, k := range t.set.keys {
		c.unclaim(k, t.set.claims[i])
	}
}

// unclaimLock gives up the claims of l.
func (c *Client) unclaimLock(l *Lock) {
	t := target{key: l.lease.Key(), claim: l.claim, set: l.claim.set}
	if l.x != nil {
		t.shared = l.x.shared
	}
	c.unclaimTarget(t)
}

// own records l as the holder of t's claims. The client's mu is held.
func (t target) own(l *Lock) {
	if t.set == nil {
		t.claim.lock = l
		return
	}
	for _, s := range t.set.claims {
		s.lock = l
	}
}

// keys returns the keys the lock holds: its key, or the members of a set
// (sorted), as partition key values.
func (l *Lock) keys() []string {
	set := l.claim.set
	if set == nil {
		return []string{l.lease.Key().Partition}
	}
	keys := make([]string, len(set.keys))
	for i, k := range set.keys {
		keys[i] = k.Partition
	}
	return keys
}

// setLoss returns e, a loss of l found by a write or a read, with the
// key that another took, released or deleted named for a set, and the
// reason that key shows, as the read that found the loss saw it.
func (l *Lock) setLoss(e *dynalease.LostError) *dynalease.LostError {
	set := l.claim.set
	if set == nil {
		return e
	}
	d, ok := set.rows.Departure()
	if !ok {
		return e
	}
	e.Lease = fmt.Sprintf("%s (key %s)", l.lease.Key(), d.Key)
	switch {
	case d.Missing:
		e.Reason, e.HolderIdentity = dynalease.Deleted, ""
	case d.Released:
		e.Reason, e.HolderIdentity = dynalease.ReleasedElsewhere, d.HolderIdentity
	default:
		e.Reason, e.HolderIdentity = dynalease.Stolen, d.HolderIdentity
	}
	return e
}
