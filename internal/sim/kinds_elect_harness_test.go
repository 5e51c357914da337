package sim

import (
	"context"
	"github.com/dynalease/dynalease/internal/rows"
	"time"

	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/schedule"
)

// electActor campaigns in the election name at priority, standing, with
// fencing; a term it leads lasts until a higher priority takes over, or
// until it hands over (about one term in three) or its Run ends (each Run
// lasts a random while, then the candidate campaigns again).
func (w *World) electActor(name, elect string, priority int64, s Settings) *actor {
	a := w.newActor(name, s)
	a.elect, a.priority = elect, priority
	a.run(func() {
		for a.ctx.Err() == nil {
			var e *election.Elector
			var t *Term
			handOver := a.rng.IntN(3) == 0
			leadFor := a.between(s.Retry, 3*s.Lease)
			var err error
			e, err = election.New(election.Config{Store: rows.Sealed(a.p.Store(w)), Name: elect, Identity: a.p.Name, Clock: a.p.clock,
				LeaseDuration: s.Lease, RenewDeadline: s.RenewDeadline, RetryPeriod: s.Retry, RequestTimeout: s.RequestTimeout,
				Priority: priority, Stand: true, Fencing: true, ReleaseOnCancel: a.rng.IntN(2) == 0,
				Callbacks: election.Callbacks{
					OnStartedLeading: func(ctx context.Context) {
						t = w.hist.Begin("elect", []string{elect}, a.p, e.Token(), e.ValidUntil)
						timer := a.p.clock.NewTimer(leadFor)
						defer timer.Stop()
						select {
						case <-ctx.Done():
							return
						case <-timer.C():
						}
						if handOver {
							_ = e.HandOver(ctx, "")
						}
						<-ctx.Done()
					},
					OnStoppedLeading: func() {
						if t != nil {
							w.hist.End(t, false)
							t = nil
						}
					},
				}})
			if err != nil {
				panic(err)
			}
			rctx, cancel := context.WithCancel(a.ctx)
			stop := a.p.clock.AfterFunc(a.between(2*s.Lease, 8*s.Lease), cancel)
			_ = e.Run(rctx)
			stop.Stop()
			cancel()
			if !a.sleep(a.between(0, s.MaxThink)) {
				return
			}
		}
	})
	return a
}

// jobActor runs a scheduler with one job every second, whose runs last a
// random while; its wall clock (which decides the slots) is the world's
// time off by a skew of up to half a second, which jumps during the
// faults (a host's wall clock, kept near by NTP; its monotonic clock, the
// process's Clock, has an offset of its own).
func (w *World) jobActor(name, job string, s Settings) *actor {
	a := w.newActor(name, s)
	w.mu.Lock()
	wall := &wallClock{w: w, skew: time.Duration(w.rng.Int64N(int64(time.Second))) - 500*time.Millisecond}
	w.mu.Unlock()
	a.wall = wall
	a.run(func() {
		c, done := a.lockClient()
		defer done()
		every, err := schedule.Every(time.Second)
		if err != nil {
			panic(err)
		}
		sch, err := schedule.New(schedule.Config{Locks: c, Clock: a.p.clock, WallClock: wall},
			schedule.Job{Name: job, Schedule: every, Run: func(ctx context.Context, r schedule.Run) error {
				w.hist.Slot(job, r.Slot, r.Attempt, a.p)
				t := w.hist.Begin("job", []string{r.Lock.Key()}, a.p, r.Lock.Token(), r.Lock.ValidUntil)
				timer := a.p.clock.NewTimer(a.between(0, s.MaxHold/2))
				defer timer.Stop()
				select {
				case <-ctx.Done():
					w.hist.End(t, false)
					return ctx.Err()
				case <-timer.C():
				}
				w.hist.End(t, true)
				return nil
			}})
		if err != nil {
			panic(err)
		}
		_ = sch.Run(a.ctx)
	})
	return a
}

// wallClock is a host's wall clock: the world's time, off by a skew that
// the plan makes jump.
type wallClock struct {
	w    *World
	skew time.Duration // guarded by the world's mu
}

func (wc *wallClock) Now() time.Time {
	wc.w.mu.Lock()
	defer wc.w.mu.Unlock()
	return wc.w.now.Add(wc.skew)
}

func (wc *wallClock) Since(t time.Time) time.Duration { return wc.Now().Sub(t) }
