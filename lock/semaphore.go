package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// permitKey returns the key of slot i of the semaphore name:
// "NAME#permit-I".
func permitKey(name string, i int) string { return name + "#permit-" + strconv.Itoa(i) }

// AcquirePermit takes one of permits permits of the semaphore name,
// waiting while all are held, and returns the lock on its slot (Key names
// the slot: "NAME#permit-I" for slot I, from 0). The permit heartbeats, is lost, released, fenced
// (each permit has its own fencing token) and guards writes like any lock.
//
// Each poll reads all slots in one request and takes a free slot (missing
// or released) at once, or one whose holder's RVN has stayed unchanged for
// the holder's lease on this client's clock, with a write conditioned as
// any takeover is. AcquirePermit gives up with an error matching ErrLocked
// when every slot has stayed with its holder for the longest lease seen
// plus WithAdditionalWait (the budget starts again each time a slot changes
// hands), and with ctx's error when ctx ends first. A client may hold
// several permits of one semaphore; each AcquirePermit takes another slot.
//
// permits must lie between 1 and the store's MaxMany (100 on DynamoDB).
// WithReentrant and WithAcquireOnlyIfExists are refused; the other acquire
// options apply to the permit's row. See the package doc for why at most permits hold, and what permits means when
// callers disagree or change it.
func (c *Client) AcquirePermit(ctx context.Context, name string, permits int, opts ...AcquireOption) (*Lock, error) {
	return c.acquirePermit(ctx, name, permits, opts, false)
}

// TryAcquirePermit takes one of permits permits of the semaphore name if
// it can without waiting: a slot free, or one whose holder's RVN this
// client has already watched unchanged for its lease in earlier calls.
// Otherwise it returns an error matching ErrLocked.
func (c *Client) TryAcquirePermit(ctx context.Context, name string, permits int, opts ...AcquireOption) (*Lock, error) {
	return c.acquirePermit(ctx, name, permits, opts, true)
}

// permitRows returns the rows of the slots of the semaphore name with permits
// permits, in slot order, held or not; a slot never taken is absent. It
// reads them in one request; once the client is closed it returns
// ErrClosed without one.
func (c *Client) permitRows(ctx context.Context, name string, permits int) ([]Info, error) {
	store, keys, _, err := c.permitConfig(name, permits, nil)
	if err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	found, err := c.readSlots(ctx, store, keys)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, k := range keys {
		if it, ok := found[k]; ok {
			out = append(out, infoOf(it, nil))
		}
	}
	return out, nil
}

// permitConfig validates a semaphore's name, permits and options, and
// returns its slot keys.
func (c *Client) permitConfig(name string, permits int, opts []AcquireOption) (rows.Store, []resourcelock.Key, acquireConfig, error) {
	store := c.store
	if permits < 1 || permits > store.MaxMany() {
		return nil, nil, acquireConfig{}, invalid("permits", "%d permits; a semaphore has 1 to %d (the found one request reads)", permits, store.MaxMany())
	}
	keys := make([]resourcelock.Key, permits)
	var a acquireConfig
	for i := range keys {
		var err error
		if a, keys[i], err = c.acquireConfig(permitKey(name, i), opts); err != nil {
			return nil, nil, a, err
		}
	}
	switch {
	case a.reentrant:
		return nil, nil, a, invalid("WithReentrant", "a permit is not reentrant")
	case a.numbers != nil || a.below != nil:
		return nil, nil, a, invalid(a.ledgerOption(), "a permit carries no integer attributes")
	case a.onlyIfExists:
		return nil, nil, a, invalid("WithAcquireOnlyIfExists", "a semaphore's slots are made as they are first taken")
	case a.upgradeable:
		return nil, nil, a, invalid("WithUpgradeable", "a permit has no shared hold: only AcquireShared takes it")
	}
	return store, keys, a, nil
}

// readSlots reads the slots in one request, bounded by the request
// timeout.
func (c *Client) readSlots(ctx context.Context, store rows.Store, keys []resourcelock.Key) (map[resourcelock.Key]rows.Item, error) {
	rctx, cancel := c.k.WithRequestTimeout(ctx)
	defer cancel()
	started := c.clk.Now()
	found, err := store.GetMany(rctx, keys)
	c.observeRequest("get", err, c.clk.Since(started))
	return found, err
}

// acquirePermit takes a slot of the semaphore through the kernel's one
// wait loop: its places are the slots, read in one request per poll, and
// a slot is written only once this client has claimed it (a slot it
// holds, or works on in another call, is passed over).
func (c *Client) acquirePermit(ctx context.Context, name string, permits int, opts []AcquireOption, try bool) (*Lock, error) {
	store, keys, a, err := c.permitConfig(name, permits, opts)
	if err != nil {
		return nil, err
	}
	c.cfg.waits.Waiting(kindPermit.String(), 1)
	defer c.cfg.waits.Waiting(kindPermit.String(), -1)
	ctx, sp := c.startAcquire(ctx, kindPermit, semName(name), try, permits)
	l, err := c.takePermit(ctx, name, permits, store, keys, a, try, sp)
	sp.end(c, l, err)
	return l, err
}

func (c *Client) takePermit(ctx context.Context, name string, permits int, store rows.Store, keys []resourcelock.Key, a acquireConfig, try bool, sp acquireSpan) (*Lock, error) {
	ctx, cancel := c.closable(ctx)
	defer cancel()
	start := c.clk.Now()
	r := c.request(a, try, "semaphore "+name)
	r.Span = sp.Acquisition
	r.Budget.Restart = true
	r.Read = func(ctx context.Context) (map[resourcelock.Key]rows.Item, error) {
		return store.GetMany(ctx, keys)
	}
	slots := make([]*claim, len(keys))
	r.Places = make([]rvnlease.Place, len(keys))
	for i, k := range keys {
		r.Places[i] = rvnlease.Place{
			Key: k, Lease: c.acquireLease(target{key: k}, &a), NewRecord: c.newRecord(&a),
			Claim: func() bool {
				s, _, err := c.claim(ctx, k, acquireConfig{failIfLocked: true})
				slots[i] = s
				return err == nil
			},
			Unclaim: func() { c.unclaim(k, slots[i]) },
		}
	}
	won, err := c.k.Acquire(ctx, r)
	if err != nil {
		return nil, closedOr(ctx, permitError(ctx, name, permits, err))
	}
	t := target{key: keys[won.Place], claim: slots[won.Place], permit: true}
	return c.handOut(ctx, t, a, won, start)
}

// permitError returns the error of a permit's wait that ended without a
// slot: ErrLocked when every slot was held (naming the last failure of a
// request meanwhile), ctx's error when ctx ended it, and the wait's
// failure otherwise.
func permitError(ctx context.Context, name string, permits int, err error) error {
	var held *rvnlease.HeldError
	switch {
	case errors.As(err, &held):
		what := fmt.Sprintf("all %d permits of %q are held", permits, name)
		if held.Waited > 0 {
			what = fmt.Sprintf("all %d permits of %q stayed held for %v", permits, name, held.Waited)
		}
		if held.Last != nil {
			return fmt.Errorf("%w: %s (and the last request failed: %w)", ErrLocked, what, held.Last)
		}
		return fmt.Errorf("%w: %s", ErrLocked, what)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	return fmt.Errorf("semaphore %q: %w", name, err)
}
