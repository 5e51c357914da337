package main

import (
	"testing"
	"time"
)

// A drifting clock's timer fires only once the clock itself has reached
// its time, also when the rate changes while it is pending; and its times
// translate back to the shared clock at the instant they were read.
func TestDriftClockTimersAndTranslation(t *testing.T) {
	c := newDriftClock()
	c.setRate(0.5)
	start := c.Now()
	tm := c.NewTimer(100 * time.Millisecond)
	fn := make(chan time.Time, 1)
	c.AfterFunc(50*time.Millisecond, func() { fn <- c.Now() })
	c.setRate(4) // faster: both are set again for the new rate
	for _, ch := range []<-chan time.Time{tm.C(), fn} {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatal("a timer never fired")
		}
	}
	if d := c.Now().Sub(start); d < 100*time.Millisecond {
		t.Fatalf("the timer fired when the clock had advanced %v of 100ms", d)
	}
	for _, rate := range []float64{1, 0.995, 1.005, 2} {
		c.setRate(rate)
		before := mono()
		at := c.Now()
		after := mono()
		if s := c.shared(at); s < before-1 || s > after+1 {
			t.Fatalf("rate %v: shared(%v) = %d, outside the reading's [%d, %d]", rate, at, s, before, after)
		}
	}
	stopped := c.NewTimer(time.Hour)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop of a pending timer, then of a stopped one")
	}
	c.mu.Lock()
	pending := len(c.timers)
	c.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d timers still tracked after firing or stopping", pending)
	}
}
