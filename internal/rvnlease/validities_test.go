package rvnlease

import (
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// testHold is a hold as a Validities times it; mu is the holder's mutex.
type testHold struct {
	name  string
	mu    sync.Mutex
	sent  time.Duration
	valid Validity
}

func newTestValidities(fc *clocktesting.FakeClock, validity time.Duration) (*Validities[*testHold], chan string) {
	expired := make(chan string, 100)
	s := NewValidities(fc, fc.Now(), validity,
		func(h *testHold) *time.Duration { return &h.sent },
		func(h *testHold) *Validity { return &h.valid },
		func(h *testHold) { expired <- h.name })
	return s, expired
}

func (h *testHold) start(s *Validities[*testHold], sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.Start(h, sent)
}

func (h *testHold) extend(s *Validities[*testHold], sent time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.Extend(h, sent)
}

func (h *testHold) passed(s *Validities[*testHold]) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.Passed(h)
}

func expectExpired(t *testing.T, expired chan string, want ...string) {
	t.Helper()
	got := map[string]bool{}
	for range want {
		select {
		case name := <-expired:
			got[name] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("expired %v, want %v", got, want)
		}
	}
	for _, name := range want {
		if !got[name] {
			t.Fatalf("expired %v, want %v", got, want)
		}
	}
	select {
	case name := <-expired:
		t.Fatalf("%s expired too, want only %v", name, want)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestValiditiesExpireEachHoldAtItsOwnEndOnOneTimer(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	s, expired := newTestValidities(fc, time.Second)
	a, b, c := &testHold{name: "a"}, &testHold{name: "b"}, &testHold{name: "c"}
	a.start(s, t0)
	b.start(s, t0.Add(100*time.Millisecond))
	c.start(s, t0.Add(200*time.Millisecond))
	fc.Step(500 * time.Millisecond)
	if !a.extend(s, t0.Add(500*time.Millisecond)) || !s.Until(a).Equal(t0.Add(1500*time.Millisecond)) {
		t.Fatal("a valid hold was not extended")
	}
	if !a.extend(s, t0.Add(300*time.Millisecond)) || !s.Until(a).Equal(t0.Add(1500*time.Millisecond)) {
		t.Fatal("an earlier send time moved the end back")
	}
	fc.Step(500 * time.Millisecond) // a's first end: the timer set for it must not expire it
	expectExpired(t, expired)
	if a.passed(s) || b.passed(s) {
		t.Fatal("passed before its end")
	}
	fc.Step(100 * time.Millisecond) // b's end
	expectExpired(t, expired, "b")
	if !b.passed(s) || b.extend(s, fc.Now()) {
		t.Fatal("a passed hold resumed")
	}
	fc.Step(time.Second) // past both c's and a's ends at once
	expectExpired(t, expired, "a", "c")
	if s.Len() != 0 {
		t.Fatalf("%d holds left", s.Len())
	}
}

func TestValiditiesSetAtMostOneTimer(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	s, expired := newTestValidities(fc, time.Second)
	holds := make([]*testHold, 50)
	for i := range holds {
		holds[i] = &testHold{name: string(rune('A' + i))}
		holds[i].start(s, t0.Add(time.Duration(len(holds)-i)*time.Millisecond))
	}
	fc.Step(900 * time.Millisecond)
	for _, h := range holds[:len(holds)-1] {
		if !h.extend(s, fc.Now()) {
			t.Fatal("a valid hold was not extended")
		}
	}
	if n := fc.Waiters(); n != 1 {
		t.Fatalf("%d timers set for 50 holds, want 1", n)
	}
	// The earliest end: holds[49]'s, at t0+1001ms.
	fc.Step(100 * time.Millisecond)
	expectExpired(t, expired)
	fc.Step(time.Millisecond)
	expectExpired(t, expired, holds[len(holds)-1].name)
	for _, h := range holds[:len(holds)-1] {
		h.mu.Lock()
		s.End(h)
		h.mu.Unlock()
	}
	if s.Len() != 0 {
		t.Fatalf("after every hold ended: %d holds", s.Len())
	}
	fc.Step(time.Hour)
	expectExpired(t, expired)
	eventually(t, "the timer spent", func() bool { return !fc.HasWaiters() })
}

func TestValiditiesOneTimerServesHoldsStartedOneAfterAnother(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	s, expired := newTestValidities(fc, time.Second)
	for i := range 10 {
		h := &testHold{name: "h"}
		h.start(s, fc.Now())
		if n := fc.Waiters(); n != 1 {
			t.Fatalf("hold %d: %d timers set, want 1", i, n)
		}
		fc.Step(10 * time.Millisecond)
		h.mu.Lock()
		s.End(h)
		h.mu.Unlock()
	}
	last := &testHold{name: "last"}
	last.start(s, fc.Now())
	fc.Step(time.Second)
	expectExpired(t, expired, "last")
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestValiditiesEndedHoldDoesNotExpire(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	s, expired := newTestValidities(fc, time.Second)
	a, b := &testHold{name: "a"}, &testHold{name: "b"}
	a.start(s, t0)
	b.start(s, t0)
	fc.Step(100 * time.Millisecond)
	a.mu.Lock()
	s.End(a)
	a.mu.Unlock()
	if !a.passed(s) || a.extend(s, fc.Now()) {
		t.Fatal("an ended hold is still valid")
	}
	fc.Step(time.Second)
	expectExpired(t, expired, "b")
}

func TestValiditiesExpireAHoldStartedPastItsEnd(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	s, expired := newTestValidities(fc, time.Second)
	a := &testHold{name: "a"}
	fc.Step(2 * time.Second)
	a.start(s, t0)
	if !a.passed(s) {
		t.Fatal("a hold started past its end is valid")
	}
	// Without a step: a fake clock fires a timer set in the past only at
	// its next step, and the test may have made its last (a timer armed
	// late, by a stalled goroutine, is the same case). This failed once in
	// fifty runs of an election test under load before the fix.
	expectExpired(t, expired, "a")
}
