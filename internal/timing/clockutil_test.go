package timing

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestJitteredStaysInRange(t *testing.T) {
	const d = 100 * time.Millisecond
	sawAbove := false
	for i := 0; i < 10000; i++ {
		j := Jittered(nil, d)
		if j < d || j > MaxJittered(d) {
			t.Fatalf("Jittered(%v) = %v, outside [%v, %v]", d, j, d, MaxJittered(d))
		}
		if j > d {
			sawAbove = true
		}
	}
	if !sawAbove {
		t.Fatal("Jittered never added jitter")
	}
	if got, want := MaxJittered(d), 120*time.Millisecond; got != want {
		t.Fatalf("MaxJittered(%v) = %v, want %v", d, got, want)
	}
	if Jittered(nil, 0) != 0 || Jittered(nil, -time.Second) != -time.Second {
		t.Fatal("non-positive durations must be returned unchanged")
	}
}

// waitForWaiters blocks until the fake clock has n waiters, failing after a
// real second: the code under test runs in another goroutine.
func waitForWaiters(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no goroutine ever waited on the fake clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSleepWaitsForTheFakeClock(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), fc, time.Second, "test") }()
	waitForWaiters(t, fc)
	fc.Step(999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Sleep returned before its duration passed")
	case <-time.After(20 * time.Millisecond):
	}
	fc.Step(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
}

// armingStaller is a fake clock that moves on by stall while a timer is
// being set, as when the process stalls (or a test steps the clock) between
// the reading of the time and the arming of the timer.
type armingStaller struct {
	*clocktesting.FakeClock
	stall   time.Duration
	blocked *bool
}

// Blocking records that a wait blocked (see Watcher).
func (c armingStaller) Blocking(string) { *c.blocked = true }

func (c armingStaller) NewTimer(d time.Duration) clock.Timer {
	c.FakeClock.Step(c.stall)
	return c.FakeClock.NewTimer(d)
}

func TestSleepDoesNotWaitAgainWhenTheClockPassedItsEndWhileArming(t *testing.T) {
	blocked := false
	c := armingStaller{FakeClock: clocktesting.NewFakeClock(epoch), stall: time.Second, blocked: &blocked}
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), c, time.Second, "test") }()
	select {
	case err := <-done:
		if err != nil || blocked {
			t.Fatalf("Sleep = %v (blocked %v), want nil without blocking", err, blocked)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Sleep waited a second time for a wait whose end the clock had passed")
	}
}

func TestSleepReturnsOnCancel(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Sleep(ctx, fc, time.Hour, "test") }()
	waitForWaiters(t, fc)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, fc, 0, "test"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on a done context = %v, want context.Canceled", err)
	}
}

func TestWithTimeoutOnFakeClock(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	ctx, cancel := WithTimeout(context.Background(), fc, time.Second)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a fake-clock timeout must not claim a wall-clock deadline")
	}
	fc.Step(999 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("context ended before its timeout")
	}
	fc.Step(time.Millisecond)
	<-ctx.Done()
	cause := context.Cause(ctx)
	if !errors.Is(cause, context.DeadlineExceeded) {
		t.Fatalf("cause = %v, want DeadlineExceeded", cause)
	}
}

func TestWithTimeoutCancelIsNotATimeout(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	ctx, cancel := WithTimeout(context.Background(), fc, time.Second)
	cancel()
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatal("an explicit cancel was reported as a timeout")
	}
	if fc.HasWaiters() {
		t.Fatal("cancel left the timer armed")
	}
}

func TestWithTimeoutOnRealClock(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), Real(), 10*time.Millisecond)
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Fatal("a real-clock timeout must carry a deadline")
	}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("err = %v, cause = %v", ctx.Err(), context.Cause(ctx))
	}
}

func TestJitterAndAddSaturateInsteadOfWrapping(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, d := range []time.Duration{huge, huge - 1, huge / 2, huge/6*5 + 1} {
		for i := 0; i < 1000; i++ {
			if j := Jittered(nil, d); j < d {
				t.Fatalf("Jittered(%v) = %v: wrapped below the period", d, j)
			}
		}
		if m := MaxJittered(d); m < d {
			t.Fatalf("MaxJittered(%v) = %v: wrapped below the period", d, m)
		}
	}
	if got := MaxJittered(huge); got != huge {
		t.Fatalf("MaxJittered(max) = %v, want the largest duration", got)
	}
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{time.Second, 2 * time.Second}, 3 * time.Second},
		{[]time.Duration{huge, time.Nanosecond}, huge},
		{[]time.Duration{time.Hour, huge, time.Hour}, huge},
		{[]time.Duration{huge, -time.Second}, huge - time.Second},
		{[]time.Duration{math.MinInt64, -time.Second}, math.MinInt64},
	} {
		if got := Add(c.in...); got != c.want {
			t.Errorf("Add(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestSpreadStaysBelowThePeriod(t *testing.T) {
	const d = 100 * time.Millisecond
	sawBelow := false
	for i := 0; i < 10000; i++ {
		s := Spread(nil, d)
		if s > d || s < d-time.Duration(JitterFactor*float64(d)) {
			t.Fatalf("Spread(%v) = %v, outside [%v, %v]", d, s, d-time.Duration(JitterFactor*float64(d)), d)
		}
		sawBelow = sawBelow || s < d
	}
	if !sawBelow {
		t.Fatal("Spread never shortened the period")
	}
	if Spread(nil, 0) != 0 || Spread(nil, -time.Second) != -time.Second {
		t.Fatal("non-positive durations must be returned unchanged")
	}
}

func TestTimerUntilReportsADueTimeThatPassedWhileArming(t *testing.T) {
	c := armingStaller{FakeClock: clocktesting.NewFakeClock(epoch), stall: time.Second, blocked: new(bool)}
	if _, passed := TimerUntil(c, epoch.Add(time.Second)); !passed {
		t.Fatal("a due time the clock reached while arming was not reported passed")
	}
	if tm, passed := TimerUntil(c, c.Now().Add(time.Hour)); passed {
		t.Fatal("a due time an hour ahead reported passed")
	} else {
		tm.Stop()
	}
}

// seeded is a clock that supplies the library's random choices.
type seeded struct {
	Clock
	next float64
}

func (s *seeded) Float64() float64 { return s.next }

// A clock that is a Random supplies jitter and every random choice.
func TestARandomClockSuppliesTheRandomChoices(t *testing.T) {
	c := &seeded{Clock: Real(), next: 0.5}
	if got := Jittered(c, 100*time.Millisecond); got != 110*time.Millisecond {
		t.Fatalf("Jittered = %v, want 110ms from the clock's 0.5", got)
	}
	if got := Spread(c, 100*time.Millisecond); got != 90*time.Millisecond {
		t.Fatalf("Spread = %v, want 90ms", got)
	}
	if got := IntN(c, 4); got != 2 {
		t.Fatalf("IntN = %d, want 2", got)
	}
	c.next = 0.9999999999
	if got := IntN(c, 4); got != 3 {
		t.Fatalf("IntN near 1 = %d, want 3", got)
	}
	if got := Between(c, time.Second); got >= time.Second {
		t.Fatalf("Between = %v, want below a second", got)
	}
}
