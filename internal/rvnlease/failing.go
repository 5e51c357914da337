package rvnlease

import (
	"container/list"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/internal/timing"
)

// Failing tracks the failures a caller keeps retrying (throttling, a
// timeout, a refused connection) and since when, per lease (key), for
// LastError-style accessors, health checks and metrics. A key's failure
// lasts until a request for that key succeeds (Note(key, nil)) or its
// caller stops retrying (Forget): one key's success never hides another's
// ongoing failure. It logs at error level when a key's failure starts or
// changes and once when it clears, not on every retry. Each call costs
// O(1), however many keys fail at once. It is safe for concurrent use.
type Failing struct {
	clk    timing.Clock
	log    logr.Logger
	report func(err error, since time.Time) // told of every change of Last, nil err once none fails

	mu    sync.Mutex
	byKey map[string]*list.Element // of failure, in order of since: the front fails longest
	order list.List
}

type failure struct {
	key   string
	err   error
	since time.Time
}

// NewFailing returns a tracker that reads clk, logs to log and tells report
// (which must not block) of every change.
func NewFailing(clk timing.Clock, log logr.Logger, report func(err error, since time.Time)) *Failing {
	return &Failing{clk: clk, log: log, report: report, byKey: map[string]*list.Element{}}
}

// Note records the outcome of a request or round for key ("" for a
// caller with one lease): nil once one succeeds.
func (f *Failing) Note(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, failing := f.byKey[key]
	if err == nil && !failing {
		return // the common case: nothing to log, nothing to allocate
	}
	log := f.log
	if key != "" {
		log = log.WithValues("key", key)
	}
	switch {
	case err == nil:
		f.removeLocked(el)
		log.Info("requests to the lock table succeed again")
	case !failing:
		// Failures start in the order of the clock: the newest is last.
		f.byKey[key] = f.order.PushBack(&failure{key: key, err: err, since: f.clk.Now()})
		log.Error(err, "a request to the lock table failed; retrying")
	default:
		fl := el.Value.(*failure)
		prev := fl.err
		fl.err = err
		if prev.Error() != err.Error() {
			log.Error(err, "a request to the lock table failed; retrying", "failingFor", f.clk.Since(fl.since).String())
		}
	}
	f.report(f.lastLocked())
}

// Forget drops key's failure, if any, without saying that requests
// succeed again: its caller has stopped retrying (an Acquire that gave
// up, a lock that ended).
func (f *Failing) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, failing := f.byKey[key]; failing {
		f.removeLocked(el)
		f.report(f.lastLocked())
	}
}

func (f *Failing) removeLocked(el *list.Element) {
	delete(f.byKey, el.Value.(*failure).key)
	f.order.Remove(el)
}

// Last returns the failure being retried longest, over every key, and
// since when; nil and the zero time while nothing fails.
func (f *Failing) Last() (error, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastLocked()
}

func (f *Failing) lastLocked() (error, time.Time) {
	if el := f.order.Front(); el != nil {
		fl := el.Value.(*failure)
		return fl.err, fl.since
	}
	return nil, time.Time{}
}
