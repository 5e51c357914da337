package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// A kind is a way of using the library that a history runs: it starts its
// actors (each on a process of its own) and says how long a wait of its
// may last once the faults stopped.

// lockActor takes one key exclusively again and again (fair waiting and
// stints, heartbeats, fencing), sometimes writing to a resource guarded by
// the lock, and releases it.
func (w *World) lockActor(name, key string, s Settings, contenders int) *actor {
	a := w.newActor(name, s)
	// Behind each contender ahead: its hold, the stint it may keep the key
	// for, and the hand-over's poll; a dead holder's lease, a dead
	// waiter's (a hand-over nobody confirms), and polls.
	bound := 2*s.Lease + time.Duration(contenders)*(s.MaxHold+s.Refresh+3*s.Refresh) + 5*s.Refresh
	a.run(func() {
		c := a.lockClient()
		defer c.Close(context.Background())
		for a.sleep(a.between(0, s.MaxThink)) {
			wt := w.hist.StartWait("lock", key, a.p, bound)
			l, err := c.Acquire(a.ctx, key, lock.WithAdditionalWait(time.Hour))
			if a.ended(err) {
				w.hist.EndWait(wt, errEndedWait)
				return
			}
			w.hist.EndWait(wt, err)
			if err != nil {
				continue
			}
			t := w.hist.Begin("lock", []string{key}, a.p, l.Token(), l.ValidUntil)
			if !a.hold(l, t, a.between(s.MaxHold/10, s.MaxHold)) {
				continue
			}
			if a.rng.IntN(2) == 0 {
				_ = l.Guard(a.ctx, a.p.Store(w).Guarded(key))
			}
			w.hist.End(t, true)
			_ = l.Release(a.ctx)
		}
	})
	return a
}

// errEndedWait is the outcome of a wait the history's end cut short.
var errEndedWait = fmt.Errorf("ended")
