package main

import (
	"sync"
	"syscall"
	"time"
	"unsafe"

	"k8s.io/utils/clock"
)

// mono returns CLOCK_MONOTONIC in nanoseconds: one clock that every process
// on the machine shares, unlike the monotonic reading inside a time.Time,
// which counts from its own process's start. A SIGSTOPped process's clock
// keeps running, as the real time does.
func mono() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}

// driftClock is the clock a worker's library runs on: CLOCK_MONOTONIC (the
// shared clock every process and the checker read) advanced at a rate of
// its own, which the nemesis changes to model a host whose clock runs fast
// or slow (the rate drift ρ the safety argument allows). At rate 1 it reads
// the shared clock exactly, so the times the library computes (a term's
// send time, its ValidUntil) are the shared clock's. Its timers fire when
// the clock itself reaches their time, whatever the rate does meanwhile.
//
// The worker logs every time the library gives it through shared, so the
// checker compares times of one clock, as before.
type driftClock struct {
	mu     sync.Mutex
	segs   []segment // one per rate, oldest first; the last is in force
	timers map[*driftTimer]struct{}
}

// segment: from shared time mono on, the clock reads at + (m − mono)·rate.
type segment struct {
	mono, at int64
	rate     float64
}

var _ clock.WithTickerAndDelayedExecution = (*driftClock)(nil)

func newDriftClock() *driftClock {
	m := mono()
	return &driftClock{segs: []segment{{mono: m, at: m, rate: 1}}, timers: map[*driftTimer]struct{}{}}
}

func (c *driftClock) nowNs() int64 {
	m := mono()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.segs[len(c.segs)-1]
	return s.at + int64(float64(m-s.mono)*s.rate)
}

// setRate makes the clock advance at rate (> 0) from now on, and sets
// every pending timer again for the new rate: one set at a slower rate
// would otherwise fire late once the clock runs faster.
func (c *driftClock) setRate(rate float64) {
	m := mono()
	c.mu.Lock()
	s := c.segs[len(c.segs)-1]
	now := s.at + int64(float64(m-s.mono)*s.rate)
	c.segs = append(c.segs, segment{mono: m, at: now, rate: rate})
	pending := make([]*driftTimer, 0, len(c.timers))
	for t := range c.timers {
		pending = append(pending, t)
	}
	c.mu.Unlock()
	for _, t := range pending {
		t.rearm()
	}
}

// track and untrack keep the set of pending timers.
func (c *driftClock) track(t *driftTimer, pending bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pending {
		c.timers[t] = struct{}{}
	} else {
		delete(c.timers, t)
	}
}

// realDelay is how long, on the shared clock, the clock takes to advance
// by d at its present rate.
func (c *driftClock) realDelay(d time.Duration) time.Duration {
	c.mu.Lock()
	rate := c.segs[len(c.segs)-1].rate
	c.mu.Unlock()
	return time.Duration(float64(d) / rate)
}

// shared returns, in shared-clock nanoseconds, when this clock read t:
// exact for a time it has reached, and for a later one the time it will
// read t if its present rate lasts. The zero time gives 0.
func (c *driftClock) shared(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	at := t.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.segs[0]
	for _, seg := range c.segs[1:] {
		if seg.at > at {
			break
		}
		s = seg
	}
	return s.mono + int64(float64(at-s.at)/s.rate)
}

func (c *driftClock) Now() time.Time                  { return time.Unix(0, c.nowNs()) }
func (c *driftClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *driftClock) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).C()
}
func (c *driftClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *driftClock) NewTimer(d time.Duration) clock.Timer {
	t := &driftTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (c *driftClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &driftTimer{c: c, fn: f}
	t.Reset(d)
	return t
}

// NewTicker and Tick tick at the rate in force when they are made; the
// library does not use tickers.
func (c *driftClock) NewTicker(d time.Duration) clock.Ticker {
	return clock.RealClock{}.NewTicker(c.realDelay(d))
}

func (c *driftClock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

// driftTimer fires when its clock reaches its time: a real timer set for
// the remainder at the present rate, which re-arms itself if the clock has
// not got there yet (the rate slowed meanwhile).
type driftTimer struct {
	c  *driftClock
	ch chan time.Time // nil for an AfterFunc timer
	fn func()

	mu     sync.Mutex
	target int64 // the clock's time to fire at
	active bool
	real   *time.Timer
}

func (t *driftTimer) C() <-chan time.Time { return t.ch }

// The timer's mutex is taken before the clock's, never the other way.

func (t *driftTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.active
	t.active = false
	if t.real != nil {
		t.real.Stop()
	}
	t.c.track(t, false)
	return was
}

func (t *driftTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.track(t, true)
	was := t.active
	if t.real != nil {
		t.real.Stop()
	}
	t.target = t.c.nowNs() + int64(d)
	t.active = true
	t.armLocked()
	return was
}

// rearm sets a pending timer again at the clock's present rate.
func (t *driftTimer) rearm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active {
		t.real.Stop()
		t.armLocked()
	}
}

func (t *driftTimer) armLocked() {
	wait := t.c.realDelay(time.Duration(t.target - t.c.nowNs()))
	target := t.target
	t.real = time.AfterFunc(max(wait, 0), func() { t.fire(target) })
}

func (t *driftTimer) fire(target int64) {
	t.mu.Lock()
	if !t.active || t.target != target {
		t.mu.Unlock()
		return // stopped or reset since
	}
	now := t.c.nowNs()
	if now < t.target {
		t.armLocked()
		t.mu.Unlock()
		return
	}
	t.active = false
	t.c.track(t, false)
	t.mu.Unlock()
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- time.Unix(0, now):
	default:
	}
}
