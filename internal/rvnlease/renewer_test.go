package rvnlease

import (
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/testkit/clocktest"
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

// newTestRenewer returns a renewer on a fake clock, a function that
// waits until it is idle (nothing under way, its timer set), and one that
// stops the test from being told (call it before Close, which must not
// wait for the test).
func newTestRenewer(t *testing.T, period time.Duration, workers int) (*Renewer, *clocktesting.FakeClock, func(), func()) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	idle, free := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(free) }) }
	clk := &clocktest.Clock{FakeClock: fc, OnBlock: func(string) {
		select {
		case idle <- struct{}{}:
		case <-free:
		}
	}}
	s := NewRenewer(clk, period, workers, "renewal")
	t.Cleanup(func() {
		letGo()
		s.Close()
	})
	return s, fc, func() {
		t.Helper()
		select {
		case <-idle:
		case <-time.After(30 * time.Second):
			t.Fatal("the renewer never came to wait on the clock")
		}
	}, letGo
}

// A hold is renewed first when Add says, then one period after each
// renewal began; an ended hold is dropped and never renewed again.
func TestRenewerRenewsEveryPeriodFromTheLastRenewal(t *testing.T) {
	s, fc, waitIdle, _ := newTestRenewer(t, 2*time.Second, 2)
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
func TestRenewerSendsAnOverdueRenewalAtOnce(t *testing.T) {
	s, fc, waitIdle, _ := newTestRenewer(t, 2*time.Second, 1)
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
func TestRenewerCloseWaitsForTheRenewalUnderWay(t *testing.T) {
	s, fc, waitIdle, letGo := newTestRenewer(t, 2*time.Second, 1)
	block, in := make(chan struct{}), make(chan struct{}, 1)
	h := &countedHold{clk: fc, block: block, in: in}
	s.Add(h, fc.Now().Add(time.Second))
	waitIdle()
	fc.Step(time.Second)
	<-in
	letGo()
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

// A renewal handed to a worker while Close waits for another under way
// never begins: nothing is renewed once Close has begun.
func TestRenewerRenewsNothingOnceCloseHasBegun(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	// This test never waits for the renewer to be idle: it is told
	// without blocking, so that Close is never held up by the test.
	clk := &clocktest.Clock{FakeClock: fc, OnBlock: func(string) {}}
	s := NewRenewer(clk, 2*time.Second, 2, "renewal")
	t0 := fc.Now()
	block, in := make(chan struct{}), make(chan struct{}, 1)
	a := &countedHold{clk: fc, block: block, in: in}
	b := &countedHold{clk: fc}
	s.Add(a, t0.Add(time.Second))
	s.Add(b, t0.Add(2*time.Second))
	for waited := time.Duration(0); !fc.HasWaiters(); waited += time.Millisecond { // the dispatcher's timer for a
		if waited > 30*time.Second {
			t.Fatal("the renewer never set its timer")
		}
		time.Sleep(time.Millisecond)
	}
	fc.Step(time.Second)
	<-in // a is under way
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	// Let Close begin, then make b due; give the dispatcher time to hand
	// it to the free worker (on a slow machine it may not, and the test
	// then shows less, never a false failure).
	time.Sleep(20 * time.Millisecond)
	fc.Step(time.Second)
	time.Sleep(50 * time.Millisecond)
	close(block)
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close never returned")
	}
	if n := len(b.renewals()); n != 0 {
		t.Fatalf("b renewed %d times after Close began", n)
	}
}
