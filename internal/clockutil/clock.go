package clockutil

import (
	"k8s.io/utils/clock"
)

// Clock is the clock every wait in dynalease uses: timers, tickers and
// delayed functions. clock.RealClock and *testing.FakeClock from
// k8s.io/utils/clock both satisfy it.
type Clock = clock.WithTickerAndDelayedExecution

// Real returns the clock backed by the machine's monotonic clock.
func Real() Clock { return clock.RealClock{} }

// OrReal returns c, or the real clock when c is nil.
func OrReal(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
