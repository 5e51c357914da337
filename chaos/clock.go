package main

import (
	"syscall"
	"time"
	"unsafe"

	"k8s.io/utils/clock"
)

// mono returns CLOCK_MONOTONIC in nanoseconds: one clock that every process
// on the machine shares, unlike the monotonic reading inside a time.Time,
// which counts from its own process's start. A SIGSTOPped process's clock
// keeps running, as the real time does.
func mono() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}

// sharedClock is the real clock whose Now reads CLOCK_MONOTONIC, so that
// the times the library computes (a term's send time, its ValidUntil) are
// comparable across the workers. Timers are the real clock's: both advance
// at the rate of CLOCK_MONOTONIC.
type sharedClock struct{ clock.RealClock }

func (sharedClock) Now() time.Time                    { return time.Unix(0, mono()) }
func (c sharedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// ns returns t, a time of the shared clock, as nanoseconds.
func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
