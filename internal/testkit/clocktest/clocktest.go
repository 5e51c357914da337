// Package clocktest holds the fake clock that the library's own fake-clock
// tests drive: k8s.io/utils/clock/testing's FakeClock, told each time a
// loop of the library is about to block on it (timing.Watcher), so that
// a test steps the clock only when the code it drives is waiting, never
// racing it.
package clocktest

import (
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/timing"
)

// Clock is a FakeClock that calls OnBlock with the loop's name each time a
// loop of the library is about to block on it, its timers set.
type Clock struct {
	*clocktesting.FakeClock
	OnBlock func(loop string)
}

var _ timing.Watcher = (*Clock)(nil)

// Blocking calls OnBlock, when set.
func (c *Clock) Blocking(loop string) {
	if c.OnBlock != nil {
		c.OnBlock(loop)
	}
}
