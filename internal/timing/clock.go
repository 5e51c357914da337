package timing

import (
	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease/clockutil"
)

// Clock is the clock every wait in dynalease uses (clockutil.Clock).
type Clock = clockutil.Clock

// Real returns the clock backed by the machine's monotonic clock.
func Real() Clock { return clock.RealClock{} }

// OrReal returns c, or the real clock when c is nil.
func OrReal(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
