package rvnlease

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestDeadlineExpiresOnItsOwnAndNeverResumes(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	expired := make(chan struct{}, 10)
	d := NewDeadline(fc, t0.Add(time.Second), func() { expired <- struct{}{} })
	fc.Step(500 * time.Millisecond)
	if !d.Extend(t0.Add(2*time.Second)) || !d.Until().Equal(t0.Add(2*time.Second)) {
		t.Fatal("a valid deadline was not extended")
	}
	if d.Extend(t0.Add(1500*time.Millisecond)) != true || !d.Until().Equal(t0.Add(2*time.Second)) {
		t.Fatal("an earlier time moved the deadline back")
	}
	fc.Step(time.Second) // past the first bound: the old timer must not expire it
	select {
	case <-expired:
		t.Fatal("expired at the bound it was extended past")
	case <-time.After(20 * time.Millisecond):
	}
	if d.Passed() {
		t.Fatal("passed before its deadline")
	}
	fc.Step(500 * time.Millisecond)
	select {
	case <-expired:
	case <-time.After(30 * time.Second):
		t.Fatal("the timer never expired the deadline")
	}
	if !d.Passed() || d.Extend(t0.Add(time.Hour)) {
		t.Fatal("a passed deadline resumed")
	}
}

func TestEndedDeadlineDoesNotExpire(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	expired := make(chan struct{}, 1)
	d := NewDeadline(fc, t0.Add(time.Second), func() { expired <- struct{}{} })
	fc.Step(100 * time.Millisecond)
	d.End()
	if !d.Passed() || !d.Until().Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("ended deadline: passed %v, until %v", d.Passed(), d.Until())
	}
	fc.Step(time.Second)
	select {
	case <-expired:
		t.Fatal("an ended deadline expired")
	case <-time.After(20 * time.Millisecond):
	}
}
