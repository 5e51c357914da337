// Package timing holds the waits that dynalease performs on the clock it
// was given (clockutil.Clock): sleeps, timeouts, jitter.
//
// Every timer, sleep and timeout in the library goes through this package,
// so tests can drive the library with a fake clock (clockutil.Fake) and
// never sleep for real. The jitter range of periodic runs is defined here
// and nowhere else: a jittered period p lies in [p, (1+JitterFactor)·p].
//
// The waits measure local elapsed time. With the real clock that is Go's
// monotonic clock, which does not count time during which the whole machine
// is suspended; this package does not guarantee anything about such pauses.
package timing
