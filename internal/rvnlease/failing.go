package rvnlease

import (
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/clockutil"
)

// Failing tracks the failures a caller keeps retrying (throttling, a
// timeout, a refused connection) and since when, per lease (key), for
// LastError-style accessors, health checks and metrics. A key's failure
// lasts until a request for that key succeeds or its caller stops retrying
// (Note(key, nil) either way): one key's success never hides another's
// ongoing failure. It logs at error level when a key's failure starts or
// changes and once when it clears, not on every retry. It is safe for
// concurrent use.
type Failing struct {
	clk    clockutil.Clock
	log    logr.Logger
	report func(err error, since time.Time) // told of every change of Last, nil err once none fails

	mu    sync.Mutex
	byKey map[string]failure
}

type failure struct {
	err   error
	since time.Time
}

// NewFailing returns a tracker that reads clk, logs to log and tells report
// (which must not block) of every change.
func NewFailing(clk clockutil.Clock, log logr.Logger, report func(err error, since time.Time)) *Failing {
	return &Failing{clk: clk, log: log, report: report, byKey: map[string]failure{}}
}

// Note records the outcome of a request or round for key ("" for a
// caller with one lease): nil once one succeeds, or once the caller stops
// retrying for key.
func (f *Failing) Note(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev, failing := f.byKey[key]
	log := f.log
	if key != "" {
		log = log.WithValues("key", key)
	}
	switch {
	case err == nil && !failing:
		return
	case err == nil:
		delete(f.byKey, key)
		log.Info("requests to the lock table succeed again")
	case !failing:
		f.byKey[key] = failure{err: err, since: f.clk.Now()}
		log.Error(err, "a request to the lock table failed; retrying")
	default:
		f.byKey[key] = failure{err: err, since: prev.since}
		if prev.err.Error() != err.Error() {
			log.Error(err, "a request to the lock table failed; retrying", "failingFor", f.clk.Since(prev.since).String())
		}
	}
	f.report(f.lastLocked())
}

// Last returns the failure being retried longest, over every key, and
// since when; nil and the zero time while nothing fails.
func (f *Failing) Last() (error, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastLocked()
}

func (f *Failing) lastLocked() (error, time.Time) {
	var oldest failure
	for _, fl := range f.byKey {
		if oldest.err == nil || fl.since.Before(oldest.since) {
			oldest = fl
		}
	}
	return oldest.err, oldest.since
}
