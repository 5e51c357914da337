// Package clockutil holds the waits that dynalease performs, expressed on an
// injected clock from k8s.io/utils/clock.
//
// Every timer, sleep and timeout in the library goes through a Clock from this
// package, so tests can drive the library with clock/testing.FakeClock and
// never sleep for real. The jitter range of periodic runs is defined here and
// nowhere else: a jittered period p lies in [p, (1+JitterFactor)·p].
//
// The waits measure local elapsed time. With clock.RealClock that is Go's
// monotonic clock, which does not count time during which the whole machine
// is suspended; this package does not guarantee anything about such pauses.
package clockutil
