package timing

import (
	"math"
	"math/rand/v2"
	"time"
)

// JitterFactor bounds the jitter added to periodic waits: a jittered period p
// lies in [p, (1+JitterFactor)·p]. Configuration checks that must account for
// jitter (for example a renew deadline that has to exceed a jittered retry
// period) use MaxJittered rather than repeating the factor.
const JitterFactor = 0.2

// Jittered returns a duration chosen uniformly in [d, MaxJittered(d)]. A
// non-positive d is returned unchanged. The result never overflows: near
// the largest duration it saturates there.
func Jittered(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return Add(d, time.Duration(rand.Float64()*JitterFactor*float64(d)))
}

// Spread returns a duration chosen uniformly in [(1−JitterFactor)·d, d]:
// jitter that only shortens, for a period that must not be exceeded (a
// heartbeat's). A non-positive d is returned unchanged.
func Spread(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Float64()*JitterFactor*float64(d))
}

// MaxJittered returns the longest duration Jittered(d) can return:
// (1+JitterFactor)·d, or the largest duration when that overflows.
func MaxJittered(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	extra := JitterFactor * float64(d)
	if extra >= float64(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return d + time.Duration(extra)
}

// Add returns the sum of durations that are each non-negative, saturated at
// the largest duration instead of wrapping around to a negative one. Every
// sum of caller-supplied durations in dynalease goes through it, so that an
// option such as math.MaxInt64 ("for ever") means a very long time rather
// than a negative one. A negative term is added as it is.
func Add(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		switch {
		case d > 0 && sum > math.MaxInt64-d:
			sum = math.MaxInt64
		case d < 0 && sum < math.MinInt64-d:
			sum = math.MinInt64
		default:
			sum += d
		}
	}
	return sum
}
