package timing

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Watcher is implemented by a clock that wants to know when a loop of the
// library is about to block on it, its timers set: a test's fake clock,
// which can then be stepped without racing the code it drives (the
// library's own tests use one). loop names the loop ("election",
// "acquire", "heartbeat" for a lock client's renewals, "renewal" for a
// term's); each loop reports for its own timers only, so a leading Elector
// has two loops, "election" and "renewal", and a Blocking that waits for
// the test must not wait on a loop the test does not drive. The real clock
// does not implement it.
type Watcher interface {
	Blocking(loop string)
}

// Blocking tells c, when it is a Watcher, that loop is about to block on it.
func Blocking(c Clock, loop string) {
	if w, ok := c.(Watcher); ok {
		w.Blocking(loop)
	}
}

// Sleep waits for d on c, or until ctx is done, for the loop named loop
// (see Watcher). It returns nil after the full wait and ctx's error when
// ctx ended first. A non-positive d returns at once (with ctx's error if
// ctx is already done), and so does a wait whose end the clock passed
// while its timer was being set (a stall, or a fake clock stepped
// meanwhile): the timer would otherwise count d again from the later time.
// A Watcher clock is told only of waits that block.
func Sleep(ctx context.Context, c Clock, d time.Duration, loop string) error {
	if d <= 0 {
		return ctx.Err()
	}
	t, passed := TimerUntil(c, c.Now().Add(d))
	if passed {
		return ctx.Err()
	}
	defer t.Stop()
	Blocking(c, loop)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// TimerUntil returns a timer on c that fires at due, or passed true (and a
// stopped timer) when the clock has reached due by the time the timer is
// set: a stall, or a fake clock stepped meanwhile. Without that check the
// timer would count the whole wait again from the later time. The
// library's waits for a time computed before the wait (a poll, a renewal
// that is due) arm their timers through it.
func TimerUntil(c Clock, due time.Time) (t clock.Timer, passed bool) {
	t = c.NewTimer(due.Sub(c.Now()))
	if !c.Now().Before(due) {
		t.Stop()
		return t, true
	}
	return t, false
}
