package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing/synctest"
	"time"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// Epoch is the world's time when a history begins.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is one simulated history: one clock, one store (a memory store
// behind a scheduler), the processes that use them, and what happened.
//
// The scheduler is the only thing that moves: at each step it waits until
// every goroutine of the history is blocked (synctest.Wait), then fires
// one event (a timer of a process, the landing of a request, a fault of
// the plan), chosen by the seed among those due at the world's time, or
// moves the time to the next one. Every wait of the library goes through a
// process's Clock, every request through the scheduler, and every random
// choice through a source seeded by the seed, so one seed makes one
// history.
type World struct {
	Seed uint64
	// Trace keeps every event fired, for a history that diverged.
	Trace bool
	trace []string

	mu     sync.Mutex
	now    time.Time
	rng    *rand.Rand // the scheduler's and the faults' choices
	events eventHeap
	staged []*event // scheduled since the last step
	fired  *Process // the owner of the event the last step fired; nil: the world's
	sends  []*send  // requests sent since the last step, not planned yet
	seq    uint64
	procs  []*Process
	actors []*actor
	mem    *memorystore.Store
	hist   *History
	faults Faults
	calm   bool // faults are over
	ending bool // the history is being torn down
	steps  int
	// instantSteps counts the steps taken at the world's present time: a
	// history whose time stops moving while its goroutines keep stepping
	// spins.
	instantSteps int
	spin         string // what spun, when something did
}

// New returns the world of seed, with faults f.
func New(seed uint64, f Faults) *World {
	w := &World{Seed: seed, now: Epoch, rng: newRand(seed, "world"), mem: memorystore.New(), faults: f}
	w.hist = &History{w: w, lastRead: map[string]time.Time{}, sameInstantReads: map[string]int{}}
	return w
}

// Now returns the world's time (no process's reading of it).
func (w *World) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// Mem returns the memory store under the scheduler, for checks of its rows.
func (w *World) Mem() *memorystore.Store { return w.mem }

// History returns what happened.
func (w *World) History() *History { return w.hist }

// Process is one simulated host: its clock (offset and rate), whether it
// is paused, and its source of random choices.
type Process struct {
	Name   string
	offset time.Duration // its clock's offset from the world's
	drift  float64       // its clock's rate is 1 + drift
	start  time.Time     // the world's time when it began
	rng    *rand.Rand
	clock  *Clock

	paused    bool
	pausedAt  time.Time
	pauses    [][2]time.Time // each pause, from and to (to zero while it lasts)
	crashed   bool
	crashedAt time.Time
	// locks is the process's lock client, shared by its actors (lockUsers
	// of them).
	locksOnce sync.Once
	locks     *lock.Client
	lockUsers int
	// deferred are its events that came due while it was paused, fired
	// when it resumes.
	deferred []*event
	requests int // requests it sent
}

// Process adds a process named name (unique) to the world, its clock off
// by offset and running at 1 + drift times the world's rate.
func (w *World) Process(name string, offset time.Duration, drift float64) *Process {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := &Process{Name: name, offset: offset, drift: drift, start: w.now, rng: newRand(w.Seed, "process "+name)}
	p.clock = &Clock{w: w, p: p}
	w.procs = append(w.procs, p)
	return p
}

// Clock returns the process's clock.
func (p *Process) Clock() *Clock { return p.clock }

// localLocked returns the world's time at as the process's clock reads it.
func (p *Process) localLocked(at time.Time) time.Time {
	elapsed := at.Sub(p.start)
	return at.Add(p.offset + time.Duration(float64(elapsed)*p.drift))
}

// dueLocked returns the first world time, from now on, at which the
// process's clock has moved d on from its reading now: a timer never fires
// early on the clock that set it.
func (p *Process) dueLocked(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return now
	}
	target := p.localLocked(now).Add(d)
	due := now.Add(time.Duration(float64(d) / (1 + p.drift)))
	for p.localLocked(due).Before(target) {
		due = due.Add(1 + target.Sub(p.localLocked(due)))
	}
	return due
}

// event is one thing the scheduler fires: a process's timer (owner set),
// or the landing of a request or a step of the fault plan (the world's).
type event struct {
	due   time.Time
	seq   uint64
	owner *Process      // nil: the world's, never held back
	fire  func()        // called with the world's mu held
	what  string        // for the log, and the order of simultaneous events
	timer time.Duration // a timer's duration, when it is one
	index int           // in the heap; -1 when not in it
}

// armLocked sets t to fire when its process's clock has moved d on.
func (w *World) armLocked(t *timer, d time.Duration) {
	ev := &event{owner: t.p, timer: d}
	if t.fn != nil {
		ev.what = "func"
	}
	ev.fire = t.fireLocked
	t.ev = ev
	w.atLocked(ev, t.p.dueLocked(w.now, d))
}

// atLocked schedules ev at due (the world's time). It is staged until the
// next step, which orders the events staged meanwhile by their content
// (due time, owner, what), not by which goroutine staged them first: the
// goroutines that run between two steps run in no set order.
func (w *World) atLocked(ev *event, due time.Time) {
	ev.due, ev.index = due, -2
	w.staged = append(w.staged, ev)
}

// flushLocked plans the requests sent since the last step and schedules
// the events staged, in an order set by their content.
func (w *World) flushLocked() {
	if len(w.sends) > 0 {
		sends := w.sends
		w.sends = nil
		slices.SortStableFunc(sends, func(a, b *send) int { return cmp.Compare(a.sortKey, b.sortKey) })
		for _, s := range sends {
			w.planSendLocked(s)
		}
	}
	if len(w.staged) == 0 {
		return
	}
	staged := w.staged
	w.staged = nil
	slices.SortStableFunc(staged, func(a, b *event) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return cmp.Compare(a.sortKey(), b.sortKey())
	})
	for _, ev := range staged {
		if ev.index != -2 {
			continue // stopped meanwhile
		}
		w.seq++
		ev.seq = w.seq
		heap.Push(&w.events, ev)
	}
}

// sortKey orders events of one due time: by owner, then what.
func (ev *event) sortKey() string {
	what := ev.what
	if ev.timer != 0 {
		what += " timer " + strconv.FormatInt(int64(ev.timer), 10)
	}
	if ev.owner == nil {
		return "\x00" + what
	}
	return ev.owner.Name + "\x00" + what
}

// removeLocked takes ev out of the schedule (or out of its process's
// deferred events).
func (w *World) removeLocked(ev *event) {
	if ev.index >= 0 {
		heap.Remove(&w.events, ev.index)
		return
	}
	if ev.index == -2 { // staged
		ev.index = -3
		return
	}
	if p := ev.owner; p != nil {
		for i, d := range p.deferred {
			if d == ev {
				p.deferred = append(p.deferred[:i], p.deferred[i+1:]...)
				return
			}
		}
	}
}

// spawnLocked runs fn on a goroutine of the history.
func (w *World) spawnLocked(fn func()) { go fn() }

// After runs fn (with the world's mu held) at the world's time now + d,
// as the world's own event: the plan's faults, the processes' requests.
func (w *World) After(d time.Duration, fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.atLocked(&event{fire: fn, what: "world"}, w.now.Add(d))
}

// maxInstantSteps bounds the steps at one instant: more, and something
// spins (a loop that never waits on the clock).
const maxInstantSteps = 20000

// Step waits until every goroutine of the history is blocked, then fires
// one event; it reports false when no event is left. Call it from the
// history's main goroutine only.
func (w *World) Step() bool { return w.StepUntil(time.Time{}) }

// StepUntil is Step that fires no event after until (zero: no limit): it
// reports false when the next event is later, leaving the time where it
// is, every goroutine waiting.
func (w *World) StepUntil(until time.Time) bool {
	synctest.Wait()
	w.hist.sample(w.fired)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	for {
		if w.events.Len() == 0 {
			return false
		}
		next := w.events[0]
		if !until.IsZero() && next.due.After(until) {
			return false
		}
		if next.due.After(w.now) {
			w.now, w.instantSteps = next.due, 0
		}
		// The events due now, one chosen by the seed.
		var due []*event
		for w.events.Len() > 0 && !w.events[0].due.After(w.now) {
			due = append(due, heap.Pop(&w.events).(*event))
		}
		i := 0
		if len(due) > 1 {
			i = w.rng.IntN(len(due))
		}
		ev := due[i]
		for j, d := range due {
			if j != i {
				heap.Push(&w.events, d)
			}
		}
		if p := ev.owner; p != nil && (p.paused || p.crashed) && !w.ending {
			p.deferred = append(p.deferred, ev)
			continue
		}
		w.steps++
		progress.Add(1)
		if w.instantSteps++; w.instantSteps > maxInstantSteps && w.spin == "" {
			w.spin = fmt.Sprintf("%d steps at %v without the time moving", w.instantSteps, w.now.Sub(Epoch))
		}
		if w.Trace {
			w.trace = append(w.trace, fmt.Sprintf("%d %s", w.now.Sub(Epoch), ev.sortKey()))
		}
		if w.instantSteps > maxInstantSteps-10 {
			owner := "world"
			if ev.owner != nil {
				owner = ev.owner.Name
			}
			w.hist.logLocked("spinning? event of %s: %s", owner, ev.what)
		}
		w.fired = ev.owner
		ev.fire()
		return true
	}
}

// resumeLocked ends p's pause: its deferred events fire now, in the order
// they came due.
func (w *World) resumeLocked(p *Process) {
	if p.paused {
		p.pauses = append(p.pauses, [2]time.Time{p.pausedAt, w.now})
	}
	p.paused = false
	for _, ev := range p.deferred {
		w.atLocked(ev, w.now)
	}
	p.deferred = nil
}

// Spun returns what spun, "" when nothing did.
func (w *World) Spun() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spin
}

// eventHeap orders events by due time, then by when they were set.
type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *eventHeap) Push(x any) {
	e := x.(*event)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// worldTime returns the world's time at which p's clock reads local.
func (p *Process) worldTime(local time.Time) time.Time {
	e := local.Sub(p.start) - p.offset
	return p.start.Add(time.Duration(float64(e) / (1 + p.drift)))
}
