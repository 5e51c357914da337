package rvnlease

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/timing"
)

// rhythmSim is a holder renewing a lease and a waiter reading it, on a
// simulated clock: the holder sends a renewal every period after the
// previous send began (plus its timer's latency) and it lands a one-way
// delay later; the waiter's read is served half a round trip after its
// send and returns a round trip after it, and the waiter reads when its
// rhythm says, or else at its ordinary jittered period.
type rhythmSim struct {
	rng            *rand.Rand
	period         time.Duration // the waiter's ordinary and assumed period
	holderPeriod   time.Duration
	rtt            time.Duration
	landings       []time.Time // of the holder's renewals, in order
	stopAt         time.Time   // the holder sends nothing from then on (zero: never)
	reads          []time.Time // the waiter's sends
	lags           []time.Duration
	lastSeen       int // the last renewal the waiter saw
	changePeriodAt time.Time
	newPeriod      time.Duration
}

func newRhythmSim(seed uint64, period time.Duration) *rhythmSim {
	return &rhythmSim{rng: rand.New(rand.NewPCG(seed, 1)), period: period, holderPeriod: period, rtt: 4 * time.Millisecond, lastSeen: -1}
}

var simT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// holderUntil lays the holder's landings up to end.
func (s *rhythmSim) holderUntil(end time.Time) {
	send := simT0.Add(37 * time.Millisecond)
	for send.Before(end) && (s.stopAt.IsZero() || send.Before(s.stopAt)) {
		s.landings = append(s.landings, send.Add(time.Millisecond+time.Duration(s.rng.Int64N(int64(2*time.Millisecond)))))
		p := s.holderPeriod
		if !s.changePeriodAt.IsZero() && !send.Before(s.changePeriodAt) {
			p = s.newPeriod
		}
		send = send.Add(p + time.Duration(s.rng.Int64N(int64(time.Millisecond))))
	}
}

// shown returns the index of the last renewal landed by t, -1 for none.
func (s *rhythmSim) shown(t time.Time) int {
	i := -1
	for j, l := range s.landings {
		if !l.After(t) {
			i = j
		}
	}
	return i
}

// run has the waiter read from simT0 to end.
func (s *rhythmSim) run(end time.Time) *rhythm {
	s.holderUntil(end)
	r := newRhythm(s.period, nil)
	now := simT0
	for now.Before(end) {
		send := now
		rtt := s.rtt/2 + time.Duration(s.rng.Int64N(int64(s.rtt)))
		ret := send.Add(rtt)
		i := s.shown(send.Add(rtt / 2))
		s.reads = append(s.reads, send)
		if i > s.lastSeen {
			if i >= 0 {
				s.lags = append(s.lags, ret.Sub(s.landings[i]))
			}
			s.lastSeen = i
		}
		rvn := ""
		if i >= 0 {
			rvn = fmt.Sprintf("rvn-%d", i)
		}
		r.saw(send, ret, rvn, "holder", i >= 0)
		wait := time.Duration(float64(s.period) * (1 + 0.2*s.rng.Float64()))
		if t, ok := r.next(ret); ok {
			wait = max(0, min(wait, t.Sub(ret)))
		}
		now = ret.Add(wait)
	}
	return r
}

func (s *rhythmSim) readsIn(from, to time.Time) int {
	n := 0
	for _, t := range s.reads {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// A waiter's sighting of a steady holder's renewal comes within a few
// round trips of its landing once the rhythm has halved its bracket a few
// times, at no more than two and a half reads a period, none more than a
// period apart.
func TestARhythmSightsASteadyHoldersRenewalsSoon(t *testing.T) {
	const period = 200 * time.Millisecond
	for seed := range uint64(20) {
		s := newRhythmSim(seed, period)
		end := simT0.Add(40 * period)
		s.run(end)
		for i, lag := range s.lags {
			if i >= 10 && lag > 15*time.Millisecond {
				t.Fatalf("seed %d: renewal %d sighted %v after it landed; lags %v", seed, i, lag, s.lags)
			}
		}
		if n := s.readsIn(simT0.Add(10*period), end); n > 80 {
			t.Fatalf("seed %d: %d reads in 30 periods, want about two and a half a period", seed, n)
		}
		// A write at any moment (a release) is seen within a period.
		for i := 1; i < len(s.reads); i++ {
			if gap := s.reads[i].Sub(s.reads[i-1]); s.reads[i].After(simT0.Add(10*period)) && gap > period {
				t.Fatalf("seed %d: reads %v apart at %v", seed, gap, s.reads[i].Sub(simT0))
			}
		}
	}
}

// Without a rhythm (ordinary reads a jittered period apart) the lag is
// about half a period: the figure the rhythm improves on.
func TestWithoutARhythmTheLagIsAboutHalfAPeriod(t *testing.T) {
	const period = 200 * time.Millisecond
	s := newRhythmSim(1, period)
	s.holderUntil(simT0.Add(40 * period))
	var total time.Duration
	now, seen := simT0, -1
	for now.Before(simT0.Add(40 * period)) {
		if i := s.shown(now); i > seen {
			if i >= 0 {
				total += now.Sub(s.landings[i])
			}
			seen = i
		}
		now = now.Add(time.Duration(float64(period) * (1 + 0.2*s.rng.Float64())))
	}
	if mean := total / time.Duration(seen+1); mean < 40*time.Millisecond {
		t.Fatalf("mean lag without a rhythm %v: the comparison is void", mean)
	}
}

// A holder that stops renewing costs a few reads after its renewal was
// due, then the waiter reads at its ordinary period again.
func TestARhythmGivesUpOnAHolderThatStops(t *testing.T) {
	const period = 200 * time.Millisecond
	for seed := range uint64(20) {
		s := newRhythmSim(seed, period)
		s.stopAt = simT0.Add(20 * period)
		end := simT0.Add(40 * period)
		r := s.run(end)
		if n := s.readsIn(s.stopAt, s.stopAt.Add(2*period)); n > 2+6 {
			t.Fatalf("seed %d: %d reads in the two periods after the holder stopped", seed, n)
		}
		if n := s.readsIn(s.stopAt.Add(4*period), end); n > 16 {
			t.Fatalf("seed %d: %d reads in 16 periods of a stopped holder, want at most one a period", seed, n)
		}
		if _, ok := r.next(end); ok {
			t.Fatalf("seed %d: the rhythm still places reads for a holder that stopped", seed)
		}
	}
}

// A holder that renews at another period than the one assumed (slower,
// here) turns the rhythm off after two losses: the reads go back to one a
// period, and the lag to what it is without a rhythm.
func TestARhythmTurnsOffForAHolderOfAnotherPeriod(t *testing.T) {
	const period = 200 * time.Millisecond
	for seed := range uint64(20) {
		s := newRhythmSim(seed, period)
		s.holderPeriod = 330 * time.Millisecond
		end := simT0.Add(60 * period)
		r := s.run(end)
		if !r.off {
			t.Fatalf("seed %d: the rhythm is still on for a holder of another period", seed)
		}
		if n := s.readsIn(simT0.Add(30*period), end); n > 30 {
			t.Fatalf("seed %d: %d reads in 30 periods once off", seed, n)
		}
		if n := len(s.reads); n > 60+20 {
			t.Fatalf("seed %d: %d reads in 60 periods", seed, n)
		}
	}
}

// A holder that changes its period, or a new holder, starts afresh: a
// fresh holder has no bracket until its second RVN, and a changed period
// is learned again or turns the rhythm off, never a busy loop.
func TestARhythmStartsAfreshForAFreshHolderAndAChangedPeriod(t *testing.T) {
	r := newRhythm(200*time.Millisecond, nil)
	r.saw(simT0, simT0.Add(time.Millisecond), "a", "h1", true)
	if _, ok := r.next(simT0.Add(time.Millisecond)); ok {
		t.Fatal("a rhythm from one sighting")
	}
	r.saw(simT0.Add(200*time.Millisecond), simT0.Add(201*time.Millisecond), "b", "h1", true)
	if _, ok := r.next(simT0.Add(201 * time.Millisecond)); !ok {
		t.Fatal("no rhythm after a second RVN")
	}
	r.saw(simT0.Add(400*time.Millisecond), simT0.Add(401*time.Millisecond), "c", "h2", true)
	if _, ok := r.next(simT0.Add(401 * time.Millisecond)); ok {
		t.Fatal("a new holder kept the old holder's rhythm")
	}
	for seed := range uint64(20) {
		s := newRhythmSim(seed, 200*time.Millisecond)
		s.changePeriodAt, s.newPeriod = simT0.Add(4*time.Second), 150*time.Millisecond
		end := simT0.Add(12 * time.Second)
		s.run(end)
		if n := len(s.reads); n > 200 {
			t.Fatalf("seed %d: %d reads in 60 periods", seed, n)
		}
	}
}

// A wait whose polls fail (throttling, timeouts) polls at its ordinary
// period, whatever the rhythm says: a rhythm whose reads are past due
// would otherwise have it poll a failing table at once, again and again.
func TestAFailingWaitIgnoresItsRhythm(t *testing.T) {
	const period = 200 * time.Millisecond
	r := newRhythm(period, nil)
	r.saw(simT0, simT0.Add(time.Millisecond), "a", "h", true)
	r.saw(simT0.Add(period), simT0.Add(period+time.Millisecond), "b", "h", true)
	now := simT0.Add(10 * period) // every read the rhythm placed is past due
	if at, ok := r.next(now); !ok || at.After(now) {
		t.Fatalf("rhythm.next = %v, %v: want a read past due, for the test to mean anything", at, ok)
	}
	s := &waiting{Wait: Wait{Engine: &Config{Clock: timing.Real()}, Period: period}, at: []placeState{{Acquirer: &Acquirer{}}}, rh: r, lastErr: errors.New("throttled")}
	if wait := s.wake(now); wait < period {
		t.Fatalf("a failing wait sleeps %v, want its ordinary period (at least %v)", wait, period)
	}
	s.lastErr = nil
	if wait := s.wake(now); wait != 0 {
		t.Fatalf("a wait that does not fail sleeps %v, want 0 (the rhythm's read is due)", wait)
	}
	// A failed read moves the rhythm on, as a read that saw nothing.
	for range 20 {
		r.failed(now)
		now = now.Add(time.Millisecond)
	}
	if _, ok := r.next(now); ok {
		t.Fatal("failed reads never moved the rhythm on")
	}
}
