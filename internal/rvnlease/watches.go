package rvnlease

import (
	"container/list"
	"sync"

	"github.com/dynalease/dynalease/resourcelock"
)

// Watches remembers, for a bounded number of keys, what one identity has
// watched of other holders' leases, so that a wait continues the watch of
// an earlier one (a try takes over a lease whose RVN earlier tries saw
// unchanged for its lease), and the acquiring writes of earlier waits
// still in doubt, so that a row one of them left is recognised as this
// identity's. The least recently updated keys are forgotten first. It is
// safe for concurrent use.
type Watches struct {
	mu    sync.Mutex
	max   int
	order *list.List // of resourcelock.Key, most recent at the front
	byKey map[resourcelock.Key]*entry
}

type entry struct {
	obs   Observation
	doubt Attempts
	elem  *list.Element
}

// NewWatches returns a cache of at most max keys.
func NewWatches(max int) *Watches {
	return &Watches{max: max, order: list.New(), byKey: map[resourcelock.Key]*entry{}}
}

// Get returns the observation of key and the writes in doubt, if
// remembered.
func (o *Watches) Get(k resourcelock.Key) (Observation, Attempts, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.byKey[k]
	if !ok {
		return Observation{}, Attempts{}, false
	}
	return e.obs, e.doubt, true
}

// Put remembers obs and the writes in doubt for key, evicting the oldest
// entry when full.
func (o *Watches) Put(k resourcelock.Key, obs Observation, doubt Attempts) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.byKey[k]; ok {
		e.obs, e.doubt = obs, doubt
		o.order.MoveToFront(e.elem)
		return
	}
	o.byKey[k] = &entry{obs: obs, doubt: doubt, elem: o.order.PushFront(k)}
	for o.order.Len() > o.max {
		last := o.order.Back()
		o.order.Remove(last)
		delete(o.byKey, last.Value.(resourcelock.Key))
	}
}

// Forget drops key.
func (o *Watches) Forget(k resourcelock.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.byKey[k]; ok {
		o.order.Remove(e.elem)
		delete(o.byKey, k)
	}
}

// Len returns the number of keys remembered.
func (o *Watches) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byKey)
}
