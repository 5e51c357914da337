package clockutil

import "k8s.io/utils/clock"

// Clock is the clock every wait in dynalease goes through: timers, tickers
// and delayed functions (k8s.io/utils/clock's WithTickerAndDelayedExecution).
// clock.RealClock, Fake and k8s.io/utils/clock/testing's FakeClock satisfy
// it.
//
// A clock that also has a method Float64() float64, returning numbers in
// [0, 1), supplies every random choice the library makes on its behalf
// (the jitter of polls and heartbeats, the order in which a semaphore's
// slots are tried): a simulator's clock, seeded, then makes a run repeat.
// Other clocks leave those choices to math/rand.
type Clock = clock.WithTickerAndDelayedExecution
