package clockutil

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Fake is a Clock whose time moves only when the test steps it (Step,
// StepToNext), for tests of code that uses dynalease. Its timers fire in
// the order of their times, each once the clock reaches it: a timer's
// channel receives that time (a ticker's keeps at most one tick), and an
// AfterFunc's function runs on the goroutine that steps the clock, after
// the clock has moved and without any lock of the clock's held, so it may
// read the clock. A Fake is safe for concurrent use.
//
// Each loop of the library tells the clock, just before it blocks on it
// with its timers set, that it is about to (Blocking, with the loop's
// name); WaitBlocked waits for that. The loops' names:
//   - "acquire": an Acquire (or a set's, or a permit's) between two polls,
//     and a job's loop pausing before it waits on a slot run elsewhere;
//   - "heartbeat": a lock client's background heartbeats, between two;
//   - "election": an Elector's Run, campaigning or leading;
//   - "renewal": a leader's renewals, between two;
//   - "schedule": a scheduled job's loop, waiting for its next slot.
//
// A test that steps the clock only after the loop it drives has said it
// blocks never races that loop: whatever the loop does next starts from
// the step. What is not guaranteed: that a loop is still blocked when
// WaitBlocked returns, if something other than the clock (a release, a
// context's end, another goroutine) woke it meanwhile.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  timerHeap
	seq     uint64
	blocked map[string]bool // loops that said they block, not yet waited for
	changed chan struct{}   // closed, and made anew, at each Blocking
}

// NewFake returns a fake clock that reads now until it is stepped.
func NewFake(now time.Time) *Fake {
	return &Fake{now: now, blocked: map[string]bool{}, changed: make(chan struct{})}
}

var _ Clock = (*Fake)(nil)

// Now returns the clock's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the time passed on the clock since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// After returns a channel that receives the clock's time once it has moved
// d on.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer returns a timer that fires once the clock has moved d on (at
// the next Step, when d is not positive).
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return t
}

// AfterFunc returns a timer that calls fn, on the goroutine that steps the
// clock, once the clock has moved d on.
func (f *Fake) AfterFunc(d time.Duration, fn func()) clock.Timer {
	t := &fakeTimer{f: f, fn: fn}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return t
}

// Tick returns the channel of a ticker of period d that is never stopped;
// nil when d is not positive.
func (f *Fake) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return f.NewTicker(d).C()
}

// NewTicker returns a ticker of period d: its channel keeps at most one
// tick, and a step over several periods ticks once. It panics when d is
// not positive, as time.NewTicker does.
func (f *Fake) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clockutil: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return fakeTicker{t}
}

// Sleep blocks until the clock has moved d on: another goroutine must step
// it.
func (f *Fake) Sleep(d time.Duration) { <-f.After(d) }

// Step moves the clock d on and fires, in the order of their times, the
// timers it reaches. It returns once every AfterFunc function due has
// returned.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	f.setLocked(f.now.Add(d))
}

// StepToNext moves the clock to the time of the earliest timer and fires
// the timers due then. It returns how far the clock moved, and false,
// without moving it, when no timer is set.
func (f *Fake) StepToNext() (time.Duration, bool) {
	f.mu.Lock()
	if len(f.timers) == 0 {
		f.mu.Unlock()
		return 0, false
	}
	from, to := f.now, f.timers[0].when
	if to.Before(from) {
		to = from
	}
	f.setLocked(to)
	return to.Sub(from), true
}

// Next returns how long from now the earliest timer fires, and false when
// no timer is set.
func (f *Fake) Next() (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return 0, false
	}
	return max(f.timers[0].when.Sub(f.now), 0), true
}

// Blocking is called by the library's loop named loop just before it
// blocks on the clock, its timers set. Tests do not call it.
func (f *Fake) Blocking(loop string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocked[loop] = true
	close(f.changed)
	f.changed = make(chan struct{})
}

// WaitBlocked waits until the loop named loop (see Fake) has said it is
// about to block on the clock, since the last WaitBlocked of that loop
// returned (or since the clock was made), and returns nil; or until ctx
// ends, and returns ctx's error.
func (f *Fake) WaitBlocked(ctx context.Context, loop string) error {
	for {
		f.mu.Lock()
		if f.blocked[loop] {
			f.blocked[loop] = false
			f.mu.Unlock()
			return nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startLocked sets t to fire d from now.
func (f *Fake) startLocked(t *fakeTimer, d time.Duration) {
	f.seq++
	t.when, t.seq = f.now.Add(d), f.seq
	heap.Push(&f.timers, t)
}

// setLocked moves the clock to to and fires the timers due, in order;
// f.mu is held on entry and released on return. AfterFunc functions run
// with f.mu released.
func (f *Fake) setLocked(to time.Time) {
	if to.After(f.now) {
		f.now = to
	}
	for len(f.timers) > 0 && !f.timers[0].when.After(f.now) {
		t := f.timers[0]
		if t.period > 0 {
			for !t.when.After(f.now) {
				t.when = t.when.Add(t.period)
			}
			f.seq++
			t.seq = f.seq
			heap.Fix(&f.timers, 0)
		} else {
			heap.Pop(&f.timers)
		}
		if t.fn != nil {
			f.mu.Unlock()
			t.fn()
			f.mu.Lock()
			continue
		}
		select {
		case t.ch <- f.now:
		default: // a ticker's unread tick
		}
	}
	f.mu.Unlock()
}

// fakeTimer is a timer, ticker or delayed function of a Fake.
type fakeTimer struct {
	f      *Fake
	when   time.Time
	seq    uint64 // orders timers of one time by when they were set
	period time.Duration
	ch     chan time.Time
	fn     func()
	index  int // in f.timers; -1 when not set
}

// C returns the timer's channel (nil for an AfterFunc's).
func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop stops the timer, and reports whether it was set.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.stopLocked()
}

func (t *fakeTimer) stopLocked() bool {
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.f.timers, t.index)
	return true
}

// Reset sets the timer to fire d from now, and reports whether it was set.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.stopLocked()
	t.f.startLocked(t, d)
	return was
}

// fakeTicker is a ticker of a Fake.
type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time { return k.t.ch }
func (k fakeTicker) Stop()               { k.t.Stop() }

// timerHeap orders timers by time, then by when they were set.
type timerHeap []*fakeTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
