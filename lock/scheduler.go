package lock

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/dynalease/dynalease/clockutil"
)

// scheduler runs the background heartbeats of a client's locks: one
// dispatcher goroutine keeps the locks in a heap ordered by when each is
// due, and a fixed number of workers send the heartbeats. However many
// locks are held, it uses concurrency+1 goroutines; when heartbeats fall
// behind, the earliest due is sent first.
//
// A lock is due one heartbeat period after its previous heartbeat started
// (after its acquisition, a random part of the period earlier, so that
// locks taken together spread out).
type scheduler struct {
	c      *Client
	period time.Duration

	startOnce sync.Once

	mu       sync.Mutex
	queue    dueQueue
	inflight int
	version  int // counts changes to the queue: a Watcher clock hears of each blocking once per state

	wake chan struct{}
	work chan *Lock
	stop chan struct{}
	wg   sync.WaitGroup
}

func newScheduler(c *Client) *scheduler {
	s := &scheduler{
		c:      c,
		period: c.cfg.heartbeat,
		wake:   make(chan struct{}, 1),
		work:   make(chan *Lock),
		stop:   make(chan struct{}),
	}
	return s
}

// start launches the goroutines, on the first lock held.
func (s *scheduler) start() {
	s.startOnce.Do(func() {
		s.wg.Add(1 + s.c.cfg.concurrency)
		go s.dispatch()
		for i := 0; i < s.c.cfg.concurrency; i++ {
			go s.worker()
		}
	})
}

// add schedules the first heartbeat of a newly acquired lock.
//
// The lock is queued before the goroutines start, so the dispatcher's first
// pass already sees it: it never reports itself idle on an empty queue
// while the first lock is being added (a Watcher clock relies on it).
func (s *scheduler) add(l *Lock) {
	l.mu.Lock()
	sent := l.sent
	l.mu.Unlock()
	s.push(l, sent.Add(clockutil.Spread(s.period)))
	s.start()
}

func (s *scheduler) push(l *Lock, due time.Time) {
	s.mu.Lock()
	heap.Push(&s.queue, dueLock{l: l, due: due})
	s.version++
	s.mu.Unlock()
	s.poke()
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) close() {
	s.startOnce.Do(func() {}) // never start after close
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

func (s *scheduler) dispatch() {
	defer s.wg.Done()
	defer close(s.work)
	idleAt := -1 // the queue version last reported idle
	idle := func(version int) {
		if version != idleAt {
			idleAt = version
			clockutil.Blocking(s.c.clk, "heartbeat")
		}
	}
	for {
		// This pass looks at the whole queue: earlier wake-ups are moot.
		select {
		case <-s.wake:
		default:
		}
		s.mu.Lock()
		// Drop locks that ended; they are never heartbeaten again.
		for s.queue.Len() > 0 && s.queue[0].l.isEnded() {
			heap.Pop(&s.queue)
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
		if d := next.due.Sub(s.c.clk.Now()); d > 0 {
			quiet, version := s.inflight == 0, s.version
			s.mu.Unlock()
			t, passed := clockutil.TimerUntil(s.c.clk, next.due)
			if passed {
				continue
			}
			if quiet {
				idle(version)
			}
			select {
			case <-t.C():
			case <-s.wake:
			case <-s.stop:
				t.Stop()
				return
			}
			t.Stop()
			continue
		}
		heap.Pop(&s.queue)
		s.inflight++
		s.mu.Unlock()
		select {
		case s.work <- next.l:
		case <-s.stop:
			return
		}
	}
}

func (s *scheduler) worker() {
	defer s.wg.Done()
	for l := range s.work {
		started := s.c.clk.Now()
		if err := l.heartbeat(context.Background(), heartbeatConfig{}); err != nil {
			s.c.log.V(1).Info("heartbeat failed", "key", l.key.String(), "error", err.Error())
		}
		s.mu.Lock()
		s.inflight--
		s.version++
		if !l.isEnded() {
			heap.Push(&s.queue, dueLock{l: l, due: started.Add(s.period)})
		}
		s.mu.Unlock()
		s.poke()
	}
}

// isEnded reports whether the lock has ended.
func (l *Lock) isEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

type dueLock struct {
	l   *Lock
	due time.Time
}

// dueQueue is a min-heap of locks by due time.
type dueQueue []dueLock

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueLock)) }
func (q *dueQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
