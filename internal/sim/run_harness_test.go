package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
)

// Plan is one history's shape: how long its faults last, how long it
// runs calm after them, which kinds run, and its faults.
type Plan struct {
	Faulty   time.Duration // the faults' phase
	Calm     time.Duration // the calm phase after it
	Settings Settings
	Faults   Faults
	// Pauses and Crashes are how many processes are paused (for up to
	// two leases) or crash during the faults' phase.
	Pauses, Crashes int
	// Restarts are how many candidates crash and come back under their
	// identity (a new process).
	Restarts int
	// Kinds are the kinds that run (all of Kinds when empty).
	Kinds []string
}

// DefaultPlan is the plan of make sim's histories.
var DefaultPlan = Plan{
	Faulty:   6 * time.Second,
	Calm:     24 * time.Second,
	Settings: DefaultSettings,
	Faults: Faults{Latency: 20 * time.Millisecond, Instant: 0.3, Slow: 0.02, SlowLatency: 600 * time.Millisecond, LandLate: 0.5,
		Lost: 0.02, Refused: 0.02, Throttled: 0.02},
	Pauses:   2,
	Crashes:  1,
	Restarts: 1,
}

// Result is what one history did.
type Result struct {
	Trace       []string
	Seed        uint64
	Failures    []string
	Fingerprint string
	Steps       int
	Log         string
	Full        string // every line of the log, with Trace
}

// Run runs the history of seed under plan in a synctest bubble of t's,
// and returns what its checks found.
func Run(t *testing.T, seed uint64, plan Plan) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) {
		res = runBubble(seed, plan, false)
	})
	return res
}

// Trace runs the history of seed as Run does, keeping every event fired.
func Trace(t *testing.T, seed uint64, plan Plan) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) {
		res = runBubble(seed, plan, true)
	})
	return res
}

// Kinds are the kinds a history runs, each with its actors.
var Kinds = []string{"lock", "set", "permit", "rw", "elect", "job"}

// runBubble runs the history inside its bubble.
func runBubble(seed uint64, plan Plan, trace bool) Result {
	w := New(seed, plan.Faults)
	w.Trace = trace
	// A third of the histories answer every request at once (a fake
	// clock over a memory store), a third never do.
	w.faults.Instant = []float64{0, plan.Faults.Instant, 1}[w.rng.IntN(3)]
	uuid.SetRand(seededReader{mu: &sync.Mutex{}, r: newRand(seed, "uuid")})
	defer uuid.SetRand(nil)
	actors := w.cast(plan)
	w.planFaults(plan, actors)
	end := Epoch.Add(plan.Faulty + plan.Calm)
	for w.StepUntil(end) && w.Spun() == "" {
	}
	synctest.Wait()
	quiet := Epoch.Add(plan.Faulty + 2*plan.Settings.Lease)
	w.hist.checkLeaders(quiet, end, plan.Settings.Lease+3*plan.Settings.Retry+plan.Settings.RequestTimeout)
	w.hist.checkJobs(quiet.Add(plan.Settings.Lease+2*time.Second), end.Add(-2*time.Second))
	w.hist.CheckEntries(end, w.gone(), map[string]time.Duration{
		"reader":    plan.Settings.Lease + plan.Settings.Heartbeat + time.Second,
		"candidate": plan.Settings.Lease + 4*plan.Settings.Retry + time.Second,
		"queue":     4 * plan.Settings.Lease,
	})
	failures := w.hist.Check(end, quiet)
	full := ""
	if trace {
		full = w.hist.Tail(1 << 30)
	}
	res := Result{Full: full, Trace: w.trace, Seed: seed, Failures: failures, Fingerprint: w.hist.Fingerprint(), Steps: w.steps, Log: w.hist.Tail(80)}
	w.teardown()
	return res
}

// cast starts the history's actors, for each kind of plan.Kinds (all when
// empty).
func (w *World) cast(plan Plan) []*actor {
	s := plan.Settings
	kinds := plan.Kinds
	if len(kinds) == 0 {
		kinds = Kinds
	}
	var actors []*actor
	for _, kind := range kinds {
		switch kind {
		case "lock":
			for i := range 3 {
				actors = append(actors, w.lockActor(fmt.Sprintf("lock-%d", i), "k", s, 3))
			}
		case "set":
			for i := range 2 {
				actors = append(actors, w.setActor(fmt.Sprintf("set-%d", i), []string{"s1", "s2", "s3"}, s, 2))
			}
		case "permit":
			for i := range 3 {
				actors = append(actors, w.permitActor(fmt.Sprintf("permit-%d", i), "sem", 2, s, 3))
			}
		case "rw":
			for i, role := range []string{"reader", "greedy", "upgrader"} {
				actors = append(actors, w.rwActor(fmt.Sprintf("rw-%d-%s", i, role), "rw", role, s, 5, nil))
			}
			// An upgrader and a writer of one client.
			both := w.rwActor("rw-3-both", "rw", "upgrader", s, 5, nil)
			actors = append(actors, both, w.rwActor("rw-3-both-writer", "rw", "writer", s, 5, both.p))
			// Readers alone on a key, whose holds overlap: nobody but
			// them removes a crashed one's entry.
			for i := range 3 {
				actors = append(actors, w.rwActor(fmt.Sprintf("ro-%d", i), "ro", "long-reader", s, 3, nil))
			}
		case "elect":
			for i := range 3 {
				actors = append(actors, w.electActor(fmt.Sprintf("elect-%d", i), "e", int64(i), s))
			}
		case "job":
			for i := range 2 {
				actors = append(actors, w.jobActor(fmt.Sprintf("job-%d", i), "j", s))
			}
		default:
			panic("sim: no kind " + kind)
		}
	}
	return actors
}

// gone returns the processes that crashed, with when.
func (w *World) gone() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]time.Time{}
	for _, p := range w.procs {
		if p.crashed {
			m[p.Name] = p.crashedAt
		}
	}
	for _, p := range w.procs {
		if !p.crashed {
			delete(m, p.Name) // came back
		}
	}
	return m
}

// planFaults schedules the plan's pauses and crashes among actors, and
// the end of the faults.
func (w *World) planFaults(plan Plan, actors []*actor) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range plan.Pauses {
		a := actors[w.rng.IntN(len(actors))]
		from := time.Duration(w.rng.Int64N(int64(plan.Faulty)))
		d := time.Duration(w.rng.Int64N(int64(2 * plan.Settings.Lease)))
		w.atLocked(&event{what: "plan", fire: func() {
			if !a.p.crashed {
				a.p.paused, a.p.pausedAt = true, w.now
				w.hist.logLocked("%s paused for %v", a.p.Name, d)
			}
		}}, w.now.Add(from))
		w.atLocked(&event{what: "plan", fire: func() {
			if a.p.paused {
				w.resumeLocked(a.p)
				w.hist.logLocked("%s resumed", a.p.Name)
			}
		}}, w.now.Add(from+d))
	}
	for range plan.Crashes {
		a := actors[w.rng.IntN(len(actors))]
		from := time.Duration(w.rng.Int64N(int64(plan.Faulty)))
		w.atLocked(&event{what: "plan", fire: func() {
			a.p.crashed, a.p.crashedAt = true, w.now
			w.hist.logLocked("%s crashed", a.p.Name)
		}}, w.now.Add(from))
	}
	// A candidate that crashes and comes back under its name (a
	// StatefulSet's pod): a new process of the same identity.
	var candidates []*actor
	for _, a := range actors {
		if a.elect != "" {
			candidates = append(candidates, a)
		}
	}
	for range plan.Restarts {
		if len(candidates) == 0 {
			break
		}
		a := candidates[w.rng.IntN(len(candidates))]
		from := time.Duration(w.rng.Int64N(int64(plan.Faulty)))
		back := from + time.Duration(w.rng.Int64N(int64(plan.Settings.Lease)))
		w.atLocked(&event{what: "plan", fire: func() {
			if !a.p.crashed {
				a.p.crashed, a.p.crashedAt = true, w.now
				a.restarted = true
				w.hist.logLocked("%s crashed, to come back", a.p.Name)
			}
		}}, w.now.Add(from))
		w.atLocked(&event{what: "plan", fire: func() {
			if !a.restarted || w.ending {
				return
			}
			w.hist.logLocked("%s came back", a.p.Name)
			name, elect, priority, s := a.p.Name, a.elect, a.priority, a.s
			w.spawnLocked(func() { w.electActor(name, elect, priority, s) })
		}}, w.now.Add(back))
	}
	for _, a := range actors {
		if a.wall == nil {
			continue
		}
		for range 2 {
			from := time.Duration(w.rng.Int64N(int64(plan.Faulty)))
			jump := time.Duration(w.rng.Int64N(int64(4*time.Second))) - 2*time.Second
			w.atLocked(&event{what: "plan", fire: func() {
				a.wall.skew += jump
				w.hist.logLocked("%s's wall clock jumped %v", a.p.Name, jump)
			}}, w.now.Add(from))
		}
	}
	w.atLocked(&event{what: "plan", fire: func() {
		w.calm = true
		w.hist.logLocked("faults end")
	}}, w.now.Add(plan.Faulty))
}

// teardown ends the history: every actor is stopped, every process
// resumed, the store answers nothing any more, and the scheduler runs the
// remaining events until every goroutine has returned.
func (w *World) teardown() {
	w.mu.Lock()
	actors := slices.Clone(w.actors)
	w.mu.Unlock()
	w.mu.Lock()
	w.ending = true
	for _, p := range w.procs {
		p.crashed = false
		w.resumeLocked(p)
	}
	w.mu.Unlock()
	for _, a := range actors {
		a.stop()
	}
	for range 100000 {
		if !w.Step() {
			break
		}
	}
	for _, a := range actors {
		<-a.done
	}
}

// seededReader is the reader uuid draws its bytes from in a history; the
// library's goroutines call it at once.
type seededReader struct {
	mu *sync.Mutex
	r  *rand.Rand
}

func (s seededReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(p); i += 8 {
		v := s.r.Uint64()
		for j := i; j < len(p) && j < i+8; j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return len(p), nil
}
