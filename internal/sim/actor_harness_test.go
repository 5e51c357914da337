package sim

import (
	"context"
	"errors"
	"github.com/dynalease/dynalease/internal/rows"
	"math/rand/v2"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// Settings are the durations every process of a history uses.
type Settings struct {
	Lease          time.Duration // a lock's lease, and an election's LeaseDuration
	Heartbeat      time.Duration
	Refresh        time.Duration // a lock's poll period
	RequestTimeout time.Duration
	RenewDeadline  time.Duration // an election's
	Retry          time.Duration // an election's RetryPeriod
	MaxHold        time.Duration // the longest an actor holds
	MaxThink       time.Duration // the longest an actor waits before asking again
}

// DefaultSettings are short leases, so that a history of a few dozen
// seconds sees many terms, takeovers and hand-overs.
var DefaultSettings = Settings{
	Lease:          2 * time.Second,
	Heartbeat:      500 * time.Millisecond,
	Refresh:        200 * time.Millisecond,
	RequestTimeout: 250 * time.Millisecond,
	RenewDeadline:  1500 * time.Millisecond,
	Retry:          200 * time.Millisecond,
	MaxHold:        600 * time.Millisecond,
	MaxThink:       400 * time.Millisecond,
}

// actor is one user of the library on a process: its own random choices
// (drawn on its goroutine only), its process, and the context that ends
// it (cancelled when its process crashes, and at the history's end).
type actor struct {
	w    *World
	p    *Process
	s    Settings
	rng  *rand.Rand
	ctx  context.Context
	stop context.CancelFunc
	// done is closed when the actor's goroutine has returned.
	done chan struct{}
	// wall is a job actor's wall clock, whose skew the plan makes jump.
	wall *wallClock
	// elect and priority are a candidate's election and priority;
	// restarted that its process crashed to come back as a new one.
	elect     string
	priority  int64
	restarted bool
}

// newActor makes an actor on a new process named name, whose clock is
// off by a random offset and drifts within ρ = 1e-4.
func (w *World) newActor(name string, s Settings) *actor {
	w.mu.Lock()
	offset := time.Duration(w.rng.Int64N(int64(2*time.Hour))) - time.Hour
	drift := (w.rng.Float64()*2 - 1) * 1e-4
	w.mu.Unlock()
	return w.actorOn(w.Process(name, offset, drift), name, s)
}

// actorOn makes an actor named name on the process p (several actors of
// one process share its lock client).
func (w *World) actorOn(p *Process, name string, s Settings) *actor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &actor{w: w, p: p, s: s, rng: newRand(w.Seed, "actor "+name), ctx: ctx, stop: cancel, done: make(chan struct{})}
	w.mu.Lock()
	w.actors = append(w.actors, a)
	w.mu.Unlock()
	return a
}

// run runs body on the actor's goroutine.
func (a *actor) run(body func()) {
	go func() {
		defer close(a.done)
		body()
	}()
}

// sleep waits d on the actor's clock, or until its context ends (false).
func (a *actor) sleep(d time.Duration) bool {
	if d <= 0 {
		return a.ctx.Err() == nil
	}
	t := a.p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-a.ctx.Done():
		return false
	}
}

// between returns a random duration in [lo, hi].
func (a *actor) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(a.rng.Int64N(int64(hi-lo)+1))
}

// lockClient returns the lock client of the actor's process, with the
// history's settings (fair waiting and stints, fencing, heartbeats), and
// the function to call when the actor is done with it: the last of the
// process's actors closes it.
func (a *actor) lockClient() (*lock.Client, func()) {
	p := a.p
	// Made outside the world's mu: a client reads its clock.
	p.locksOnce.Do(func() {
		c, err := lock.New(lock.Config{Store: rows.Sealed(p.Store(a.w)), Identity: p.Name, Clock: p.clock,
			LeaseDuration: a.s.Lease, HeartbeatPeriod: a.s.Heartbeat, RefreshPeriod: a.s.Refresh,
			RequestTimeout: a.s.RequestTimeout, Fencing: true})
		if err != nil {
			panic(err)
		}
		p.locks = c
	})
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	p.lockUsers++
	c := p.locks
	return c, func() {
		a.w.mu.Lock()
		p.lockUsers--
		last := p.lockUsers == 0
		a.w.mu.Unlock()
		if last {
			_ = c.Close(context.Background())
		}
	}
}

// hold keeps the term t of l for d, or until l ends; it reports whether
// l is still held (the caller releases it).
func (a *actor) hold(l *lock.Lock, t *Term, d time.Duration) bool {
	timer := a.p.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-l.Done():
		a.w.hist.End(t, false)
		return false
	case <-a.ctx.Done():
		return false
	}
}

// ended reports whether err is the end of the actor's context or of the
// history, not an outcome to check.
func (a *actor) ended(err error) bool {
	return a.ctx.Err() != nil || errors.Is(err, lock.ErrClosed) || errors.Is(err, errEnded)
}
