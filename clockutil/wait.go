package clockutil

import (
	"context"
	"time"
)

// Sleep waits for d on c, or until ctx is done. It returns nil after the full
// wait and ctx's error when ctx ended first. A non-positive d returns at once
// (with ctx's error if ctx is already done), and so does a wait whose end the
// clock passed while its timer was being set (a stall, or a fake clock
// stepped meanwhile): the timer would otherwise count d again from the later
// time.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	return SleepObserved(ctx, c, d, nil)
}

// SleepObserved is Sleep that calls blocking, when not nil, once the timer
// is set and just before it blocks. Tests use it to step a fake clock only
// when the code under test is truly waiting on it; blocking is not called
// when Sleep returns without waiting.
func SleepObserved(ctx context.Context, c Clock, d time.Duration, blocking func()) error {
	if d <= 0 {
		return ctx.Err()
	}
	wake := c.Now().Add(d)
	t := c.NewTimer(d)
	defer t.Stop()
	if !c.Now().Before(wake) {
		return ctx.Err()
	}
	if blocking != nil {
		blocking()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// SleepUntil waits until c reads at least deadline, or until ctx is done.
// It returns nil once deadline is reached and ctx's error otherwise.
func SleepUntil(ctx context.Context, c Clock, deadline time.Time) error {
	return Sleep(ctx, c, deadline.Sub(c.Now()))
}
