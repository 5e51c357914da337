package rvnlease

import (
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/clockutil"
)

// Failing tracks the failure a caller keeps retrying (throttling, a
// timeout, a refused connection) and since when, for LastError-style
// accessors, health checks and metrics. It logs at error level when a
// failure starts or changes and once when requests succeed again, not on
// every retry. It is safe for concurrent use.
type Failing struct {
	clk    clockutil.Clock
	log    logr.Logger
	report func(err error, since time.Time) // told of every change, nil err once cleared

	mu    sync.Mutex
	err   error
	since time.Time
}

// NewFailing returns a tracker that reads clk, logs to log and tells report
// (which must not block) of every change.
func NewFailing(clk clockutil.Clock, log logr.Logger, report func(err error, since time.Time)) *Failing {
	return &Failing{clk: clk, log: log, report: report}
}

// Note records the outcome of a request or round: nil once one succeeds.
func (f *Failing) Note(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.err
	switch {
	case err == nil && prev == nil:
		return
	case err == nil:
		f.err, f.since = nil, time.Time{}
		f.log.Info("requests to the lock table succeed again")
	case prev == nil:
		f.err, f.since = err, f.clk.Now()
		f.log.Error(err, "a request to the lock table failed; retrying")
	default:
		f.err = err
		if prev.Error() != err.Error() {
			f.log.Error(err, "a request to the lock table failed; retrying", "failingFor", f.clk.Since(f.since).String())
		}
	}
	f.report(f.err, f.since)
}

// Last returns the failure being retried and since when; nil and the zero
// time while requests succeed.
func (f *Failing) Last() (error, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err, f.since
}
