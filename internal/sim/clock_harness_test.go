package sim

import (
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease/internal/timing"
)

// Clock is one process's clock in a World: the world's time seen with the
// process's offset and rate, its timers fired by the world's scheduler
// (never while the process is paused), and its random choices drawn from
// the process's own seeded source (timing.Random). It implements every
// method the library's clock has.
type Clock struct {
	w *World
	p *Process
}

var (
	_ timing.Clock  = (*Clock)(nil)
	_ timing.Random = (*Clock)(nil)
)

// Now returns the world's time as this process reads it.
func (c *Clock) Now() time.Time {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.p.localLocked(c.w.now)
}

// Since returns the time passed on this clock since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Float64 draws from the process's seeded source.
func (c *Clock) Float64() float64 {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.p.rng.Float64()
}

// After returns a channel that receives this clock's time once it has
// moved d on.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// NewTimer returns a timer that fires once this clock has moved d on.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{w: c.w, p: c.p, ch: make(chan time.Time, 1)}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.armLocked(t, d)
	return t
}

// AfterFunc returns a timer that calls fn, on a goroutine of its own, once
// this clock has moved d on.
func (c *Clock) AfterFunc(d time.Duration, fn func()) clock.Timer {
	t := &timer{w: c.w, p: c.p, fn: fn}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.armLocked(t, d)
	return t
}

// Tick returns the channel of a ticker of period d that is never stopped.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return c.NewTicker(d).C()
}

// NewTicker returns a ticker of period d; its channel keeps one tick.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("sim: non-positive interval for NewTicker")
	}
	t := &timer{w: c.w, p: c.p, ch: make(chan time.Time, 1), period: d}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.armLocked(t, d)
	return ticker{t}
}

// Sleep blocks until this clock has moved d on.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

// timer is a timer, ticker or delayed function of a process's Clock: an
// event of the world's, fired when the world reaches it and the process is
// not paused.
type timer struct {
	w      *World
	p      *Process
	period time.Duration // a ticker's, on the process's clock
	ch     chan time.Time
	fn     func()
	ev     *event // while armed; nil otherwise
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	return t.stopLocked()
}

func (t *timer) stopLocked() bool {
	if t.ev == nil {
		return false
	}
	t.w.removeLocked(t.ev)
	t.ev = nil
	return true
}

func (t *timer) Reset(d time.Duration) bool {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	was := t.stopLocked()
	t.w.armLocked(t, d)
	return was
}

// fire delivers the timer's tick, or starts its function; a ticker is
// armed again. The world's mu is held.
func (t *timer) fireLocked() {
	t.ev = nil
	local := t.p.localLocked(t.w.now)
	if t.period > 0 {
		t.w.armLocked(t, t.period)
	}
	if t.fn != nil {
		t.w.spawnLocked(t.fn)
		return
	}
	select {
	case t.ch <- local:
	default: // a ticker's unread tick
	}
}

type ticker struct{ t *timer }

func (k ticker) C() <-chan time.Time { return k.t.ch }
func (k ticker) Stop()               { k.t.Stop() }

// newRand returns a source seeded by the world's seed and a name, so that
// each process's and actor's draws depend on nobody else's.
func newRand(seed uint64, name string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}
