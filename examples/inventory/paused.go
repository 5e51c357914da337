package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
)

// The paused-worker scenario: why a lease alone is not enough.
//
// A lease makes a lock run out when its holder stops renewing it, so that
// a crashed holder does not block everyone forever. But a holder that is
// not dead, only stopped — a long garbage-collection pause, a stalled or
// live-migrated VM, SIGSTOP, a swap storm — does not know it stopped. Any
// check it makes of its lock (IsHeld, the lock's context, the validity
// check inside Guard) can pass just before the pause, and the write it
// sends after waking then reaches DynamoDB long after others took the
// lock over. No check made by the holder closes that window: the pause can
// always fall after the last one, inside the SDK, the kernel or the
// network. Only a check made by DynamoDB when the write is applied does:
// Guard's transaction re-reads the lock row, and a fence compares tokens
// on the item itself.
//
// How the pause is simulated, and why this way. A real stalled process
// stops everything: its code, its heartbeats and its timers. The sleeper
// therefore has a lock client of its own, whose clock is a stallClock
// that follows real time until the sleeper stalls and then stands still:
// its heartbeats stop (none falls due), its lock never expires on its own
// clock, and when the sleeper wakes IsHeld still answers true. Its clock
// stays frozen until its write has been answered, and only then catches up
// with real time, as a woken process's clock does. That puts the pause at
// the worst place deterministically: after every check the sleeper makes,
// before its write leaves. Everything else is real: the others' clocks,
// DynamoDB's, and the stall itself, which lasts as long in real time as
// the others need to wait out the sleeper's lease (a full lease of
// unchanged RVN, measured on their own clocks) and sell.
//
// Turning the sleeper's heartbeats off (lock.Config.ManualHeartbeats) with a
// real clock would not do: its lock would expire on its own clock during
// the stall, and the check before the write would refuse it. That is the
// common, easy case of a pause before the check, which a lease handles;
// it would not show the case only DynamoDB can catch.

// pausedResult is the outcome of one paused-worker scenario: the sleeper's
// sale, if its write landed, and the others' sales together make up the
// embedded result.
type pausedResult struct {
	result
	Mode         writeMode
	Sleeper      string        // the sleeper's owner name
	Token        int64         // its lock's fencing token
	Fence        int64         // the stock item's fence at the end (fenced writes only)
	Read         int64         // the stock it read before its stall
	Units        int64         // the units it meant to sell
	Stalled      time.Duration // how long it stalled, in real time
	HeldOnWaking bool          // IsHeld on waking, on its frozen clock
	WriteErr     error         // why its write was refused; nil if it landed
	ReleaseErr   error         // what its Release said afterwards
	Others       result        // the other buyers' sales on their own
}

// Landed reports whether the sleeper's stale write was applied.
func (p pausedResult) Landed() bool { return p.WriteErr == nil }

// runPaused makes one paused-worker scenario with writes of mode: the
// sleeper takes the item's lock, reads the stock, and stalls; meanwhile
// s.Others buyers, each with a lock client of its own, take the lock over
// and make s.OtherPurchases purchases each; once they are done the sleeper
// wakes and writes the stock it computed before the stall. The sleeper's
// lock client has the lease s.PauseLease, the others' the shop's s.Lease
// (zero: the lock client's default). name tells the owners of the
// scenario apart from others'.
func runPaused(ctx context.Context, sh *shop, t tables, s settings, mode writeMode, name string) (pausedResult, error) {
	sh = sh.with(mode)
	res := pausedResult{Mode: mode, Sleeper: fmt.Sprintf("%s-sleeper-%s", name, s.RunID)}
	res.Locked, res.Initial = true, s.Stock
	start := time.Now()
	if err := sh.setStock(ctx, s.Stock); err != nil {
		return res, err
	}

	heartbeat := s.PauseLease / 8
	clk := newStallClock()
	defer clk.stop()
	sc, err := newLockClientWith(sh.db, lock.Config{Clock: clk}, t, res.Sleeper, s.PauseLease, heartbeat, s.Refresh)
	if err != nil {
		return res, err
	}
	defer sc.Close(context.WithoutCancel(ctx))
	others := make([]buyFunc, s.Others)
	for i := range others {
		// The others' own leases are the shop's (s.Lease), not the
		// sleeper's short one: a loaded machine must not make them lose
		// their locks, nor time out their requests, which a lease of
		// s.PauseLease bounds tightly. They wait out the sleeper's lock by
		// the lease in its row.
		c, err := newLockClient(sh.db, t, fmt.Sprintf("%s-buyer-%d-%s", name, i+1, s.RunID), s.Lease, s.Heartbeat, s.Refresh)
		if err != nil {
			return res, err
		}
		defer c.Close(context.WithoutCancel(ctx))
		others[i] = lockedBuyer(sh, c)
	}

	var mine result
	l, err := acquire(ctx, sc, lockKey(sh.item), &mine)
	if err != nil {
		return res, fmt.Errorf("sleeper: %w", err)
	}
	res.Token = l.Token()
	res.Units = 1 + rand.Int64N(s.MaxUnits)

	// The sleeper stalls in its purchase, after the read: its clock stops
	// and the others start buying; it wakes when they are done.
	var othersErr error
	sleeper := *sh
	sleeper.pause = func(lctx context.Context, read int64) error {
		res.Read = read
		clk.freeze()
		stalled := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			res.Others, othersErr = runBuyers(ctx, sh, s.Stock, s.OtherPurchases, s.MaxUnits, true, others)
		}()
		select {
		case <-done:
		case <-lctx.Done():
			<-done
			return context.Cause(lctx)
		}
		res.Stalled = time.Since(stalled)
		if othersErr != nil {
			return fmt.Errorf("the other buyers: %w", othersErr)
		}
		res.HeldOnWaking = l.IsHeld()
		return nil
	}
	// A real-time bound on the sleeper's purchase: while its clock is
	// frozen, no timeout on that clock can fire.
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	lctx, lcancel := l.Context(pctx)
	ok, err := sleeper.purchase(lctx, l, res.Units)
	lcancel()
	cancel()
	clk.thaw()
	switch {
	case err == nil:
		count(&mine, ok, res.Units)
	case othersErr != nil:
		return res, err
	case errors.Is(err, dynalease.ErrLost) || errors.Is(err, errFenced):
		res.WriteErr = err
	default:
		return res, fmt.Errorf("sleeper: %w", err)
	}
	res.ReleaseErr = l.Release(ctx)

	res.add(res.Others)
	res.add(mine)
	res.Elapsed = time.Since(start)
	if res.Final, err = sh.stock(ctx); err != nil {
		return res, err
	}
	if mode == fencedWrite {
		res.Fence, err = sh.fence(ctx)
	}
	return res, err
}

// stallClock is the sleeper's clock: a fake clock that a goroutine keeps
// at real time, every millisecond, except between freeze and thaw, when it
// stands still. thaw catches it up with real time at once, firing the
// timers that fell due meanwhile, as a process's timers fire when it wakes.
type stallClock struct {
	*clocktesting.FakeClock

	mu     sync.Mutex
	frozen bool

	quit chan struct{}
	done chan struct{}
}

func newStallClock() *stallClock {
	c := &stallClock{
		FakeClock: clocktesting.NewFakeClock(time.Now()),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	go c.follow()
	return c
}

func (c *stallClock) follow() {
	defer close(c.done)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			c.mu.Lock()
			if !c.frozen {
				c.SetTime(time.Now())
			}
			c.mu.Unlock()
		}
	}
}

// freeze stops the clock; once it returns the clock does not move until
// thaw.
func (c *stallClock) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
}

// thaw sets the clock to real time and lets it follow real time again.
func (c *stallClock) thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = false
	c.SetTime(time.Now())
}

// stop ends the goroutine that moves the clock.
func (c *stallClock) stop() {
	close(c.quit)
	<-c.done
}
