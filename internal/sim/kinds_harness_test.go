package sim

import (
	"fmt"
	"slices"
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
		c, done := a.lockClient()
		defer done()
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

// setActor takes two of keys as one set again and again.
func (w *World) setActor(name string, keys []string, s Settings, contenders int) *actor {
	a := w.newActor(name, s)
	// A set waits for its held keys as one, and queues on its first key
	// only: a loose bound, a few leases and every contender's hold.
	bound := 3*s.Lease + time.Duration(contenders)*(s.MaxHold+4*s.Refresh) + 5*s.Refresh
	a.run(func() {
		c, done := a.lockClient()
		defer done()
		for a.sleep(a.between(0, s.MaxThink)) {
			i := a.rng.IntN(len(keys))
			j := (i + 1 + a.rng.IntN(len(keys)-1)) % len(keys)
			set := []string{keys[i], keys[j]}
			wt := w.hist.StartWait("set", fmt.Sprint(set), a.p, bound)
			l, err := c.AcquireSet(a.ctx, set, lock.WithAdditionalWait(time.Hour))
			if a.ended(err) {
				w.hist.EndWait(wt, errEndedWait)
				return
			}
			w.hist.EndWait(wt, err)
			if err != nil {
				continue
			}
			t := w.hist.Begin("set", slices.Sorted(slices.Values(set)), a.p, l.Token(), l.ValidUntil)
			if !a.hold(l, t, a.between(s.MaxHold/10, s.MaxHold)) {
				continue
			}
			if a.rng.IntN(2) == 0 {
				_ = l.Guard(a.ctx, a.p.Store(w).Guarded(fmt.Sprint(set)))
			}
			w.hist.End(t, true)
			_ = l.Release(a.ctx)
		}
	})
	return a
}

// permitActor takes one of a semaphore's permits again and again.
func (w *World) permitActor(name, sem string, permits int, s Settings, contenders int) *actor {
	a := w.newActor(name, s)
	// Permits poll unfairly: no bound is stated; a loose one catches a
	// waiter that never gets one.
	bound := 3*s.Lease + time.Duration(contenders)*(s.MaxHold+4*s.Refresh)
	a.run(func() {
		c, done := a.lockClient()
		defer done()
		for a.sleep(a.between(0, s.MaxThink)) {
			wt := w.hist.StartWait("permit", sem, a.p, bound)
			l, err := c.AcquirePermit(a.ctx, sem, permits, lock.WithAdditionalWait(time.Hour))
			if a.ended(err) {
				w.hist.EndWait(wt, errEndedWait)
				return
			}
			w.hist.EndWait(wt, err)
			if err != nil {
				continue
			}
			t := w.hist.Begin("permit", []string{l.Key()}, a.p, l.Token(), l.ValidUntil)
			t.Note, t.Permits = sem, permits
			if !a.hold(l, t, a.between(s.MaxHold/10, s.MaxHold)) {
				continue
			}
			w.hist.End(t, true)
			_ = l.Release(a.ctx)
		}
	})
	return a
}

// rwActor takes key shared (a reader) or exclusively (a writer), as role
// says: "reader", "writer", "greedy" (a writer that asks again at once),
// or "upgrader" (an upgradeable reader that upgrades about one time in
// two), on a process of its own, or on p's when p is not nil.
func (w *World) rwActor(name, key, role string, s Settings, contenders int, p *Process) *actor {
	var a *actor
	if p == nil {
		a = w.newActor(name, s)
	} else {
		a = w.actorOn(p, name, s)
	}
	// Readers and writers are served in their queue's order: each ahead
	// holds at most MaxHold; a dead holder or waiter costs a lease.
	bound := 2*s.Lease + time.Duration(contenders)*(s.MaxHold+4*s.Refresh) + 5*s.Refresh
	a.run(func() {
		c, done := a.lockClient()
		defer done()
		think, hold := s.MaxThink, s.MaxHold
		switch role {
		case "greedy":
			think = 0
		case "long-reader":
			think, hold = s.MaxThink/4, 4*s.MaxHold
		}
		for a.sleep(a.between(0, think)) {
			kind := "read"
			wt := w.hist.StartWait(role, key, a.p, bound)
			var l *lock.Lock
			var err error
			switch role {
			case "writer", "greedy":
				kind = "lock"
				l, err = c.Acquire(a.ctx, key, lock.WithAdditionalWait(time.Hour))
			case "upgrader":
				l, err = c.AcquireShared(a.ctx, key, lock.WithUpgradeable(), lock.WithAdditionalWait(time.Hour))
			default:
				l, err = c.AcquireShared(a.ctx, key, lock.WithAdditionalWait(time.Hour))
			}
			if a.ended(err) {
				w.hist.EndWait(wt, errEndedWait)
				return
			}
			w.hist.EndWait(wt, err)
			if err != nil {
				continue
			}
			t := w.hist.Begin(kind, []string{key}, a.p, l.Token(), l.ValidUntil)
			if !a.hold(l, t, a.between(hold/10, hold)) {
				continue
			}
			if role == "upgrader" && a.rng.IntN(2) == 0 {
				l = a.upgrade(l, t, key, bound)
				if l == nil {
					continue
				}
				t = w.hist.Begin("lock", []string{key}, a.p, l.Token(), l.ValidUntil)
				if !a.hold(l, t, a.between(s.MaxHold/10, s.MaxHold)) {
					continue
				}
			}
			if kind == "lock" && a.rng.IntN(2) == 0 {
				_ = l.Guard(a.ctx, a.p.Store(w).Guarded(key))
			}
			w.hist.End(t, true)
			_ = l.Release(a.ctx)
		}
	})
	return a
}

// upgrade upgrades the reader r (whose term is t) and returns the writer,
// or nil when the upgrade failed (r is then released, or ended).
func (a *actor) upgrade(r *lock.Lock, t *Term, key string, bound time.Duration) *lock.Lock {
	w := a.w
	wt := w.hist.StartWait("upgrade", key, a.p, bound)
	wt.reader = t
	l, err := r.Upgrade(a.ctx, lock.WithAdditionalWait(time.Hour))
	if a.ended(err) {
		w.hist.EndWait(wt, errEndedWait)
		return nil
	}
	switch {
	case err == nil:
		w.hist.EndWait(wt, nil)
		w.hist.End(t, true) // the reader ends as the writer begins
		return l
	case r.IsHeld():
		w.hist.EndWait(wt, err)
		w.hist.End(t, true)
		_ = r.Release(a.ctx)
	default:
		// The upgrade ended with its reader: its reader's error is the
		// outcome the doc promises.
		w.hist.EndWait(wt, errEndedWait)
		w.hist.End(t, false)
	}
	return nil
}
