package lock

import (
	"container/list"
	"sync"

	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// observations remembers, for a bounded number of keys, what this client
// has watched of other owners' locks, so that TryAcquire can take over a
// lock whose RVN it has already seen unchanged for a full lease, and so
// that an Acquire continues the wait of an earlier one; and the acquiring
// writes of earlier calls still in doubt, so that a row one of them left
// is recognised as this client's. The least recently updated keys are
// forgotten first.
type observations struct {
	mu    sync.Mutex
	max   int
	order *list.List // of resourcelock.Key, most recent at the front
	byKey map[resourcelock.Key]*entry
}

type entry struct {
	obs   rvnlease.Observation
	doubt rvnlease.Attempts
	elem  *list.Element
}

func newObservations(max int) *observations {
	return &observations{max: max, order: list.New(), byKey: map[resourcelock.Key]*entry{}}
}

// get returns the observation of key and the writes in doubt, if
// remembered.
func (o *observations) get(k resourcelock.Key) (rvnlease.Observation, rvnlease.Attempts, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.byKey[k]
	if !ok {
		return rvnlease.Observation{}, rvnlease.Attempts{}, false
	}
	return e.obs, e.doubt, true
}

// put remembers obs and the writes in doubt for key, evicting the oldest
// entry when full.
func (o *observations) put(k resourcelock.Key, obs rvnlease.Observation, doubt rvnlease.Attempts) {
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

// forget drops key.
func (o *observations) forget(k resourcelock.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.byKey[k]; ok {
		o.order.Remove(e.elem)
		delete(o.byKey, k)
	}
}

// len returns the number of keys remembered.
func (o *observations) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byKey)
}
