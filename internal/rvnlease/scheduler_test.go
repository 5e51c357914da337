package rvnlease

import (
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/clocktest"
)

// countedHold is a Renewable that records when it was renewed and can be
// ended or made to block.
type countedHold struct {
	clk   *clocktesting.FakeClock
	mu    sync.Mutex
	at    []time.Time
	ended bool
	block chan struct{} // when set, Renew waits on it
	in    chan struct{} // when set, Renew says it has begun
}

func (h *countedHold) Renew() {
	h.mu.Lock()
	h.at = append(h.at, h.clk.Now())
	block, in := h.block, h.in
	h.mu.Unlock()
	if in != nil {
		in <- struct{}{}
	}
	if block != nil {
		<-block
	}
}

func (h *countedHold) Ended() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended
}

func (h *countedHold) renewals() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.at...)
}

// newTestScheduler returns a scheduler on a fake clock and a function that
// waits until it is idle (nothing under way, its timer set).
func newTestScheduler(t *testing.T, period time.Duration, workers int) (*Scheduler, *clocktesting.FakeClock, func()) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	idle := make(chan struct{})
	clk := &clocktest.Clock{FakeClock: fc, OnBlock: func(string) { idle <- struct{}{} }}
	s := NewScheduler(clk, period, workers, "renewal")
	t.Cleanup(func() {
		go func() {
			for range idle {
			}
		}()
		s.Close()
	})
	return s, fc, func() {
		t.Helper()
		select {
		case <-idle:
		case <-time.After(30 * time.Second):
			t.Fatal("the scheduler never came to wait on the clock")
		}
	}
}

// A hold is renewed first when Add says, then one period after each
// renewal began; an ended hold is dropped and never renewed again.
func TestSchedulerRenewsEveryPeriodFromTheLastRenewal(t *testing.T) {
	s, fc, waitIdle := newTestScheduler(t, 2*time.Second, 2)
	t0 := fc.Now()
	a := &countedHold{clk: fc}
	b := &countedHold{clk: fc}
	s.Add(a, t0.Add(time.Second))
	waitIdle()
	s.Add(b, t0.Add(1500*time.Millisecond))
	waitIdle()
	for _, step := range []time.Duration{time.Second, 500 * time.Millisecond, 1500 * time.Millisecond, 500 * time.Millisecond} {
		fc.Step(step)
		waitIdle()
	}
	want := func(h *countedHold, name string, at ...time.Duration) {
		t.Helper()
		got := h.renewals()
		if len(got) != len(at) {
			t.Fatalf("%s renewed at %v, want %d renewals", name, got, len(at))
		}
		for i, d := range at {
			if !got[i].Equal(t0.Add(d)) {
				t.Fatalf("%s renewal %d at +%v, want +%v", name, i, got[i].Sub(t0), d)
			}
		}
	}
	want(a, "a", time.Second, 3*time.Second)
	want(b, "b", 1500*time.Millisecond, 3500*time.Millisecond)

	a.mu.Lock()
	a.ended = true
	a.mu.Unlock()
	fc.Step(2 * time.Second) // b is due at +5.5 s; a would have been at +5 s
	waitIdle()
	want(a, "a", time.Second, 3*time.Second)
	want(b, "b", 1500*time.Millisecond, 3500*time.Millisecond, 5500*time.Millisecond)
}

// A renewal that fell due while the previous one was under way is sent as
// soon as that one returns, without waiting for the clock to move again.
func TestSchedulerSendsAnOverdueRenewalAtOnce(t *testing.T) {
	s, fc, waitIdle := newTestScheduler(t, 2*time.Second, 1)
	t0 := fc.Now()
	block, in := make(chan struct{}), make(chan struct{}, 1)
	h := &countedHold{clk: fc, block: block, in: in}
	s.Add(h, t0.Add(time.Second))
	waitIdle()
	fc.Step(time.Second)
	<-in
	fc.Step(3 * time.Second) // the renewal is slow: the next fell due at +3 s
	h.mu.Lock()
	h.block, h.in = nil, nil
	h.mu.Unlock()
	close(block)
	waitIdle()
	got := h.renewals()
	if len(got) != 2 || !got[1].Equal(t0.Add(4*time.Second)) {
		t.Fatalf("renewed at %v, want at +1 s and at once when that returned (+4 s)", got)
	}
}

// Close waits for a renewal under way and sends none after it.
func TestSchedulerCloseWaitsForTheRenewalUnderWay(t *testing.T) {
	s, fc, waitIdle := newTestScheduler(t, 2*time.Second, 1)
	block, in := make(chan struct{}), make(chan struct{}, 1)
	h := &countedHold{clk: fc, block: block, in: in}
	s.Add(h, fc.Now().Add(time.Second))
	waitIdle()
	fc.Step(time.Second)
	<-in
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a renewal was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(block)
	<-closed
	fc.Step(10 * time.Second)
	if n := len(h.renewals()); n != 1 {
		t.Fatalf("%d renewals, want 1: none after Close", n)
	}
}
