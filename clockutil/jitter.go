package clockutil

import (
	"context"
	"math/rand/v2"
	"time"
)

// JitterFactor bounds the jitter added to periodic waits: a jittered period p
// lies in [p, (1+JitterFactor)·p]. Configuration checks that must account for
// jitter (for example a renew deadline that has to exceed a jittered retry
// period) use MaxJittered rather than repeating the factor.
const JitterFactor = 0.2

// Jittered returns a duration chosen uniformly in [d, (1+JitterFactor)·d].
// A non-positive d is returned unchanged.
func Jittered(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*JitterFactor*float64(d))
}

// MaxJittered returns the longest duration Jittered(d) can return.
func MaxJittered(d time.Duration) time.Duration {
	return d + time.Duration(JitterFactor*float64(d))
}

// Every calls f, then waits and calls it again, until ctx is done. The wait
// after each call is Jittered(period) when jitter is true and period
// otherwise; it is measured from the end of the previous call, so a slow f
// delays the next call rather than piling calls up. Every returns ctx's error
// when ctx ends; f is never called after that, but a call already running is
// not interrupted except through ctx.
func Every(ctx context.Context, c Clock, period time.Duration, jitter bool, f func(context.Context)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		f(ctx)
		wait := period
		if jitter {
			wait = Jittered(period)
		}
		if err := Sleep(ctx, c, wait); err != nil {
			return err
		}
	}
}
