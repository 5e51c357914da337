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

// Random is implemented by a clock that also supplies the library's random
// choices made on its behalf (jitter, the order of a semaphore's slots, a
// rhythm's random read): a simulator's, so that one seed makes one
// history. Float64 returns a number in [0, 1). The real clock does not
// implement it; the library then draws from math/rand.
type Random interface {
	Float64() float64
}

// Float64 returns a number in [0, 1) from c, when it is a Random, or from
// math/rand.
func Float64(c Clock) float64 {
	if r, ok := c.(Random); ok {
		return r.Float64()
	}
	return rand.Float64()
}

// IntN returns a number in [0, n) from c's randomness (see Float64); n
// must be positive.
func IntN(c Clock, n int) int {
	return min(int(Float64(c)*float64(n)), n-1)
}

// Between returns a duration in [0, d) from c's randomness (see Float64);
// d must be positive.
func Between(c Clock, d time.Duration) time.Duration {
	return min(time.Duration(Float64(c)*float64(d)), d-1)
}

// Jittered returns a duration chosen uniformly in [d, MaxJittered(d)],
// from c's randomness. A non-positive d is returned unchanged. The result
// never overflows: near the largest duration it saturates there.
func Jittered(c Clock, d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return Add(d, time.Duration(Float64(c)*JitterFactor*float64(d)))
}

// Spread returns a duration chosen uniformly in [(1−JitterFactor)·d, d],
// from c's randomness: jitter that only shortens, for a period that must
// not be exceeded (a heartbeat's). A non-positive d is returned unchanged.
func Spread(c Clock, d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(Float64(c)*JitterFactor*float64(d))
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
