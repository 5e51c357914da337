package clockutil

import "k8s.io/utils/clock"

// Clock is the clock every wait in dynalease goes through: timers, tickers
// and delayed functions (k8s.io/utils/clock's WithTickerAndDelayedExecution).
// clock.RealClock, Fake and k8s.io/utils/clock/testing's FakeClock satisfy
// it.
type Clock = clock.WithTickerAndDelayedExecution
