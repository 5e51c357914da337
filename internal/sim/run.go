package sim

import (
	"fmt"
	"math/rand/v2"
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
}

// DefaultPlan is the plan of make sim's histories.
var DefaultPlan = Plan{
	Faulty:   10 * time.Second,
	Calm:     15 * time.Second,
	Settings: DefaultSettings,
	Faults: Faults{Latency: 20 * time.Millisecond, Slow: 0.02, SlowLatency: 600 * time.Millisecond, LandLate: 0.5,
		Lost: 0.02, Refused: 0.02, Throttled: 0.02},
	Pauses:  2,
	Crashes: 1,
}

// Result is what one history did.
type Result struct {
	Seed        uint64
	Failures    []string
	Fingerprint string
	Steps       int
	Log         string
}

// Run runs the history of seed under plan in a synctest bubble of t's,
// and returns what its checks found.
func Run(t *testing.T, seed uint64, plan Plan) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) {
		res = runBubble(seed, plan)
	})
	return res
}

// runBubble runs the history inside its bubble.
func runBubble(seed uint64, plan Plan) Result {
	w := New(seed, plan.Faults)
	uuid.SetRand(seededReader{newRand(seed, "uuid")})
	defer uuid.SetRand(nil)
	s := plan.Settings
	var actors []*actor
	for i := range 3 {
		actors = append(actors, w.lockActor(fmt.Sprintf("lock-%d", i), "k", s, 3))
	}
	w.planFaults(plan, actors)
	end := Epoch.Add(plan.Faulty + plan.Calm)
	for w.Step() {
		if !w.Now().Before(end) || w.Spun() != "" {
			break
		}
	}
	failures := w.hist.Check(w.Now())
	w.teardown(actors)
	return Result{Seed: seed, Failures: failures, Fingerprint: w.hist.Fingerprint(), Steps: w.steps, Log: w.hist.Tail(60)}
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
		w.atLocked(&event{fire: func() {
			if !a.p.crashed {
				a.p.paused = true
				w.hist.logLocked("%s paused for %v", a.p.Name, d)
			}
		}}, w.now.Add(from))
		w.atLocked(&event{fire: func() {
			if a.p.paused {
				w.resumeLocked(a.p)
				w.hist.logLocked("%s resumed", a.p.Name)
			}
		}}, w.now.Add(from+d))
	}
	for range plan.Crashes {
		a := actors[w.rng.IntN(len(actors))]
		from := time.Duration(w.rng.Int64N(int64(plan.Faulty)))
		w.atLocked(&event{fire: func() {
			a.p.crashed = true
			w.hist.logLocked("%s crashed", a.p.Name)
		}}, w.now.Add(from))
	}
	w.atLocked(&event{fire: func() {
		w.calm = true
		w.hist.logLocked("faults end")
	}}, w.now.Add(plan.Faulty))
}

// teardown ends the history: every actor is stopped, every process
// resumed, the store answers nothing any more, and the scheduler runs the
// remaining events until every goroutine has returned.
func (w *World) teardown(actors []*actor) {
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

// seededReader is the reader uuid draws its bytes from in a history.
type seededReader struct{ r *rand.Rand }

func (s seededReader) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := s.r.Uint64()
		for j := i; j < len(p) && j < i+8; j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return len(p), nil
}
