package clockutil

import (
	"context"
	"time"
)

// Sleep waits for d on c, or until ctx is done. It returns nil after the full
// wait and ctx's error when ctx ended first. A non-positive d returns at once
// (with ctx's error if ctx is already done).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
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
