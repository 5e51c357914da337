package rvnlease

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease/internal/clockutil"
)

// Deadline is the end of a holder's validity: a time on the clock that
// confirmed writes move later (the send time of the last confirmed write
// plus the validity) and that nothing moves back except End. A timer of its
// own calls expire once the clock has reached it, without the holder's
// loop, so a stuck loop or a paused process cannot make the lease look
// longer; Passed compares with the clock directly. It is safe for
// concurrent use. A caller that holds its own mutex while calling Extend or
// End must take that mutex in expire too, and never call Deadline's
// methods in the other order.
type Deadline struct {
	clk    clockutil.Clock
	expire func()

	mu    sync.Mutex
	until time.Time
	ended bool
	timer clock.Timer
}

// NewDeadline returns a deadline at until that calls expire, in a goroutine
// of its own, when the clock reaches it (at once if it already has).
func NewDeadline(clk clockutil.Clock, until time.Time, expire func()) *Deadline {
	d := &Deadline{clk: clk, until: until, expire: expire}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armLocked()
	return d
}

// armLocked sets a new timer for until. A new timer rather than Reset: a
// fake clock blocks when a fired AfterFunc timer fires again. The callback
// starts a goroutine because a fake clock runs AfterFunc callbacks while
// holding its own lock, so they may not read the clock.
func (d *Deadline) armLocked() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = d.clk.AfterFunc(d.until.Sub(d.clk.Now()), func() { go d.fired() })
}

func (d *Deadline) fired() {
	d.mu.Lock()
	if d.ended {
		d.mu.Unlock()
		return
	}
	if d.clk.Now().Before(d.until) {
		// Extended while this timer was already firing.
		d.armLocked()
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.expire()
}

// Extend moves the deadline to until when that is later. It reports false,
// changing nothing, once the deadline has passed or ended: a validity never
// resumes.
func (d *Deadline) Extend(until time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended || !d.clk.Now().Before(d.until) {
		return false
	}
	if until.After(d.until) {
		d.until = until
		d.armLocked()
	}
	return true
}

// End ends the validity now: the deadline becomes now if that is earlier,
// and expire is no longer called.
func (d *Deadline) End() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	if now := d.clk.Now(); now.Before(d.until) {
		d.until = now
	}
	d.timer.Stop()
}

// Passed reports whether the clock has reached the deadline (or End was
// called).
func (d *Deadline) Passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ended || !d.clk.Now().Before(d.until)
}

// Until returns the deadline: while the validity lasts, its bound; once
// ended, when it ended.
func (d *Deadline) Until() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.until
}
