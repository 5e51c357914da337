package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// PermitKey returns the key of slot i of the semaphore name:
// "NAME#permit-I".
func PermitKey(name string, i int) string { return name + "#permit-" + strconv.Itoa(i) }

// AcquirePermit takes one of permits permits of the semaphore name,
// waiting while all are held, and returns the lock on its slot (Key names
// the slot: PermitKey). The permit heartbeats, is lost, released, fenced
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
// WithReentrant, WithFailIfLocked (TryAcquirePermit does not wait) and
// WithAcquireOnlyIfExists are refused; the other acquire options apply to the permit's row. See the
// package doc for why at most permits hold, and what permits means when
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

// Permits returns the rows of the slots of the semaphore name with permits
// permits, in slot order, held or not; a slot never taken is absent. It
// reads them in one request.
func (c *Client) Permits(ctx context.Context, name string, permits int) ([]Info, error) {
	store, keys, _, err := c.permitConfig(name, permits, nil)
	if err != nil {
		return nil, err
	}
	rows, err := c.readSlots(ctx, store, keys)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, k := range keys {
		if it, ok := rows[k]; ok {
			out = append(out, infoOf(it, nil))
		}
	}
	return out, nil
}

// permitConfig validates a semaphore's name, permits and options, and
// returns its slot keys.
func (c *Client) permitConfig(name string, permits int, opts []AcquireOption) (resourcelock.ManyStore, []resourcelock.Key, acquireConfig, error) {
	store, ok := c.store.(resourcelock.ManyStore)
	if !ok {
		return nil, nil, acquireConfig{}, &OptionError{Option: "permits", Err: fmt.Errorf("%w: %s", resourcelock.ErrNotMany, c.store.Describe())}
	}
	if permits < 1 || permits > store.MaxMany() {
		return nil, nil, acquireConfig{}, invalid("permits", "%d permits; a semaphore has 1 to %d (the rows one request reads)", permits, store.MaxMany())
	}
	keys := make([]resourcelock.Key, permits)
	var a acquireConfig
	for i := range keys {
		var err error
		if a, keys[i], err = c.acquireConfig(PermitKey(name, i), opts); err != nil {
			return nil, nil, a, err
		}
	}
	switch {
	case a.reentrant:
		return nil, nil, a, invalid("WithReentrant", "a permit is not reentrant")
	case a.failIfLocked:
		return nil, nil, a, invalid("WithFailIfLocked", "use TryAcquirePermit")
	case a.onlyIfExists:
		return nil, nil, a, invalid("WithAcquireOnlyIfExists", "a semaphore's slots are made as they are first taken")
	}
	return store, keys, a, nil
}

// readSlots reads the slots in one request, bounded by the request
// timeout.
func (c *Client) readSlots(ctx context.Context, store resourcelock.ManyStore, keys []resourcelock.Key) (map[resourcelock.Key]resourcelock.Item, error) {
	rctx, cancel := clockutil.WithTimeout(ctx, c.clk, c.cfg.requestTimeout)
	defer cancel()
	started := c.clk.Now()
	rows, err := store.GetMany(rctx, keys)
	c.observeRequest("get", err, c.clk.Since(started))
	return rows, err
}

func (c *Client) acquirePermit(ctx context.Context, name string, permits int, opts []AcquireOption, try bool) (*Lock, error) {
	store, keys, a, err := c.permitConfig(name, permits, opts)
	if err != nil {
		return nil, err
	}
	// Close ends the call as ctx would, and it then returns ErrClosed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.closing, func() { cancel(ErrClosed) })
	defer stop()
	start := c.clk.Now()
	budgetFrom := start
	var lastErr error
	answered := false // a read of the slots succeeded in this call
	failKey := "semaphore " + name
	defer c.failing.Forget(failKey)
	// What this call watched of each slot: its own, not only in the
	// client's bounded cache, which a semaphore of many permits would
	// churn, restarting every watch. Seeded from the cache (earlier calls'
	// watches), and handed to it for the slot an acquisition tries.
	obs := make([]rvnlease.Observation, len(keys))
	for i, k := range keys {
		obs[i], _, _ = c.seen.get(k)
	}
	// Every slot's watch outlives the call, as a single key's does: a
	// later call (a TryAcquirePermit poll) continues it rather than
	// starting again, and so reaches a silent holder's lease.
	taken := -1
	defer func() {
		for i, k := range keys {
			if i != taken && obs[i].Known {
				_, doubt, _ := c.seen.get(k)
				c.seen.put(k, obs[i], doubt)
			}
		}
	}()
	holders := make([]string, len(keys)) // each slot's holder at the last read, "" when free
	seen := make([]bool, len(keys))
	for {
		if err := ctx.Err(); err != nil {
			return nil, closedOr(ctx, err)
		}
		rows, err := c.readSlots(ctx, store, keys)
		c.failing.Note(failKey, err)
		now := c.clk.Now()
		var candidates []int
		longest := time.Duration(0)
		if err != nil {
			if resourcelock.Permanent(err) || try {
				return nil, fmt.Errorf("semaphore %q: %w", name, err)
			}
			lastErr = err
		} else {
			answered, lastErr = true, nil
			moved := false
			for i, k := range keys {
				it, ok := rows[k]
				obs[i].Observe(it.Record, !ok, now)
				holder := obs[i].Holder
				if obs[i].Free() {
					holder = ""
				}
				if seen[i] && holders[i] != holder {
					moved = true // the slot changed hands, not a renewal
				}
				holders[i], seen[i] = holder, true
				switch {
				case obs[i].Free() || obs[i].Expired(now):
					candidates = append(candidates, i)
				default:
					longest = max(longest, obs[i].Lease)
				}
			}
			if moved {
				budgetFrom = now
			}
		}
		// From a random slot on, so that waiters spread over the free
		// ones instead of all racing for the first.
		if n := len(candidates); n > 1 {
			off := rand.IntN(n)
			candidates = append(candidates[off:], candidates[:off]...)
		}
		for _, i := range candidates {
			k := keys[i]
			_, doubt, _ := c.seen.get(k)
			c.seen.put(k, obs[i], doubt)
			l, err := c.acquireTarget(ctx, target{key: k, permit: true}, a, true)
			if o, _, ok := c.seen.get(k); ok && err != nil {
				obs[i] = o // what the attempt learned
			}
			switch {
			case err == nil:
				taken = i
				return l, nil
			case errors.Is(err, ErrClosed), ctx.Err() != nil:
				return nil, closedOr(ctx, err)
			case errors.Is(err, ErrLocked):
			case resourcelock.Permanent(err):
				return nil, fmt.Errorf("semaphore %q: %w", name, err)
			default:
				lastErr = err
			}
		}
		if try {
			if lastErr != nil {
				return nil, fmt.Errorf("%w: all %d permits of %q are held (and the last request failed: %w)", ErrLocked, permits, name, lastErr)
			}
			return nil, fmt.Errorf("%w: all %d permits of %q are held", ErrLocked, permits, name)
		}
		if longest == 0 {
			longest = c.cfg.lease
		}
		deadline := budgetFrom.Add(clockutil.Add(longest, a.additionalWait))
		if !now.Before(deadline) {
			if !answered {
				return nil, fmt.Errorf("semaphore %q: no answer from the lock table after %v: %w", name, now.Sub(start), lastErr)
			}
			if lastErr != nil {
				return nil, fmt.Errorf("%w: all %d permits of %q stayed held for %v (and the last request failed: %w)", ErrLocked, permits, name, now.Sub(budgetFrom), lastErr)
			}
			return nil, fmt.Errorf("%w: all %d permits of %q stayed held for %v", ErrLocked, permits, name, now.Sub(budgetFrom))
		}
		wait := clockutil.Jittered(a.refresh)
		for _, o := range obs {
			// Wake when a watched lease may be taken over.
			if o.Known && !o.Free() {
				if d := o.Expiry().Sub(now); d > 0 && d < wait {
					wait = d
				}
			}
		}
		if d := deadline.Sub(now); d < wait {
			wait = d
		}
		if err := clockutil.Sleep(ctx, c.clk, wait, "acquire"); err != nil {
			return nil, closedOr(ctx, err)
		}
	}
}
