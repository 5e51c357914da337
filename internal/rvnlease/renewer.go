package rvnlease

import (
	"container/heap"
	"sync"
	"time"

	"github.com/dynalease/dynalease/internal/timing"
)

// Renewable is one held lease that a Renewer renews in the background.
type Renewable interface {
	// Renew sends one renewal and settles it. The renewer calls it from
	// one of its workers, never twice at once for one Renewable, and
	// measures the next renewal from when the call began.
	Renew()
	// Ended reports whether the hold has ended: the renewer then drops
	// it and never calls Renew on it again.
	Ended() bool
}

// Renewer renews many held leases in the background with a fixed number
// of goroutines: one dispatcher keeps the holds in a heap ordered by when
// each is due, and workers run their renewals. However many leases are
// held, it uses workers+1 goroutines; when renewals fall behind, the
// earliest due is sent first.
//
// A hold is due one period after its previous renewal began; its first
// renewal is due when Add says (see Spread for holds acquired together).
// The renewer decides only when a renewal is sent: whether the lease is
// still valid, and what a renewal that failed or found the lease taken
// means, is the Renewable's (see Holder).
//
// Each time the renewer is about to wait with nothing under way and its
// queue changed since it last said so, it tells a timing.Watcher clock,
// with the loop name given to NewRenewer.
type Renewer struct {
	clk     timing.Clock
	epoch   time.Time // due times are kept as durations since
	period  time.Duration
	workers int
	loop    string

	startOnce sync.Once

	// renewing counts the renewals under way: a worker adds one under mu
	// unless closed is set, and Close, having set closed under mu, waits
	// for them, so that no renewal begins once Close has. (Not a lock held
	// across a renewal's request: a goroutine waiting on a lock whose
	// holder waits on a request would not count as blocked to a
	// simulator's scheduler, which must see every goroutine wait.)
	renewing sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	queue    dueQueue
	inflight int
	version  int // counts changes to the queue, so a Watcher hears of each idle state once

	wake chan struct{}
	work chan Renewable
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewRenewer returns a renewer that renews every period with at most
// workers renewals under way at once. Its goroutines start with the first
// Add.
func NewRenewer(clk timing.Clock, period time.Duration, workers int, loop string) *Renewer {
	return &Renewer{
		clk:     clk,
		epoch:   clk.Now(),
		period:  period,
		workers: workers,
		loop:    loop,
		wake:    make(chan struct{}, 1),
		work:    make(chan Renewable),
		stop:    make(chan struct{}),
	}
}

// Add schedules the renewals of a held lease, the first one at first.
// Add after Close schedules nothing.
//
// The hold is queued before the goroutines start, so the dispatcher's
// first pass already sees it: it never reports itself idle on an empty
// queue while the first hold is being added (a Watcher clock relies on it).
func (s *Renewer) Add(r Renewable, first time.Time) {
	s.push(r, first)
	s.startOnce.Do(func() {
		s.wg.Add(1 + s.workers)
		go s.dispatch()
		for i := 0; i < s.workers; i++ {
			go s.worker()
		}
	})
}

func (s *Renewer) push(r Renewable, due time.Time) {
	s.mu.Lock()
	s.queue.push(dueRenewal{r: r, due: due.Sub(s.epoch)})
	s.version++
	s.mu.Unlock()
	s.poke()
}

func (s *Renewer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops the renewer and waits for renewals under way to return.
// No renewal begins after Close has: one handed to a worker as Close
// began is dropped.
func (s *Renewer) Close() {
	s.startOnce.Do(func() {}) // never start after Close
	s.mu.Lock()
	s.closed = true
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	s.renewing.Wait()
	s.wg.Wait()
}

func (s *Renewer) dispatch() {
	defer s.wg.Done()
	defer close(s.work)
	idleAt := -1 // the queue version last reported idle
	idle := func(version int) {
		if version != idleAt {
			idleAt = version
			timing.Blocking(s.clk, s.loop)
		}
	}
	for {
		// This pass looks at the whole queue: earlier wake-ups are moot.
		select {
		case <-s.wake:
		default:
		}
		s.mu.Lock()
		// Drop holds that ended; they are never renewed again.
		for s.queue.Len() > 0 && s.queue[0].r.Ended() {
			s.queue.pop()
		}
		if s.queue.Len() == 0 {
			quiet, version := s.inflight == 0, s.version
			s.mu.Unlock()
			if quiet {
				idle(version)
			}
			select {
			case <-s.wake:
				continue
			case <-s.stop:
				return
			}
		}
		next := s.queue[0]
		if due := s.epoch.Add(next.due); due.After(s.clk.Now()) {
			quiet, version := s.inflight == 0, s.version
			s.mu.Unlock()
			if !s.waitUntil(due, func() {
				if quiet {
					idle(version)
				}
			}) {
				return
			}
			continue
		}
		s.queue.pop()
		s.inflight++
		s.mu.Unlock()
		select {
		case s.work <- next.r:
		case <-s.stop:
			return
		}
	}
}

// waitUntil waits until the clock reaches due, or a wake-up comes, having
// called idle when it blocks; it reports false once the renewer stops.
func (s *Renewer) waitUntil(due time.Time, idle func()) bool {
	t, passed := timing.TimerUntil(s.clk, due)
	if passed {
		return true
	}
	defer t.Stop()
	idle()
	select {
	case <-t.C():
	case <-s.wake:
	case <-s.stop:
		return false
	}
	return true
}

func (s *Renewer) worker() {
	defer s.wg.Done()
	for r := range s.work {
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.renewing.Add(1)
		}
		s.mu.Unlock()
		began := s.clk.Now()
		if !closed {
			r.Renew()
			s.renewing.Done()
		}
		s.mu.Lock()
		s.inflight--
		s.version++
		if !closed && !r.Ended() {
			s.queue.push(dueRenewal{r: r, due: began.Add(s.period).Sub(s.epoch)})
		}
		s.mu.Unlock()
		s.poke()
	}
}

// dueRenewal is one hold in the queue: 24 bytes, a lock client keeps one
// per lock it holds.
type dueRenewal struct {
	r   Renewable
	due time.Duration // since the renewer's epoch
}

// dueQueue is a min-heap of renewals by due time. Its push and pop do
// what heap.Push and heap.Pop do without boxing each renewal in an
// interface value (an allocation per renewal).
type dueQueue []dueRenewal

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due < q[j].due }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueRenewal)) }
func (q *dueQueue) Pop() any          { return q.removeLast() }

// push adds x.
func (q *dueQueue) push(x dueRenewal) {
	*q = append(*q, x)
	heap.Fix(q, len(*q)-1)
}

// pop removes the earliest renewal.
func (q *dueQueue) pop() {
	last := len(*q) - 1
	q.Swap(0, last)
	q.removeLast()
	if last > 0 {
		heap.Fix(q, 0)
	}
}

// removeLast removes the last element, clearing its place so that the
// queue does not keep an ended hold reachable.
func (q *dueQueue) removeLast() dueRenewal {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = dueRenewal{}
	*q = old[:len(old)-1]
	return x
}
