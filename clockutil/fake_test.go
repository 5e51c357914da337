package clockutil

import (
	"context"
	"errors"
	"testing"
	"time"
)

var epoch = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func TestTimersFireInTheOrderOfTheirTimesOnceReached(t *testing.T) {
	f := NewFake(epoch)
	var order []string
	late := f.NewTimer(3 * time.Second)
	f.AfterFunc(2*time.Second, func() { order = append(order, "func at "+f.Since(epoch).String()) })
	early := f.After(time.Second)
	f.Step(999 * time.Millisecond)
	select {
	case <-early:
		t.Fatal("a timer fired before its time")
	default:
	}
	f.Step(2 * time.Second)
	if got := <-early; !got.Equal(epoch.Add(2999 * time.Millisecond)) {
		t.Fatalf("the timer received %v", got)
	}
	if len(order) != 1 || order[0] != "func at 2.999s" {
		t.Fatalf("AfterFunc ran %v, want once, reading the clock after the step", order)
	}
	select {
	case <-late.C():
		t.Fatal("the 3 s timer fired at 2.999 s")
	default:
	}
	if d, ok := f.Next(); !ok || d != time.Millisecond {
		t.Fatalf("Next = %v, %v; want 1ms", d, ok)
	}
	if d, ok := f.StepToNext(); !ok || d != time.Millisecond {
		t.Fatalf("StepToNext = %v, %v; want 1ms", d, ok)
	}
	<-late.C()
	if _, ok := f.StepToNext(); ok {
		t.Fatal("StepToNext moved with no timer set")
	}
}

func TestStoppedAndResetTimers(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop must report true once, then false")
	}
	f.Step(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it set")
	}
	f.Step(time.Second)
	<-tm.C()
}

func TestATickerKeepsOneTickAndGoesOn(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Second)
	f.Step(5 * time.Second)
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("a ticker kept more than one tick")
	default:
	}
	if d, ok := f.Next(); !ok || d != time.Second {
		t.Fatalf("the ticker's next tick is in %v, want 1s", d)
	}
	tk.Stop()
	if _, ok := f.Next(); ok {
		t.Fatal("a stopped ticker is still set")
	}
}

func TestWaitBlockedWaitsForTheNamedLoop(t *testing.T) {
	f := NewFake(epoch)
	f.Blocking("heartbeat")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.WaitBlocked(ctx, "acquire"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitBlocked of a loop that never blocked = %v", err)
	}
	if err := f.WaitBlocked(context.Background(), "heartbeat"); err != nil {
		t.Fatalf("WaitBlocked of a loop that blocked before = %v", err)
	}
	done := make(chan error)
	go func() { done <- f.WaitBlocked(context.Background(), "heartbeat") }()
	select {
	case <-done:
		t.Fatal("WaitBlocked returned twice for one Blocking")
	case <-time.After(20 * time.Millisecond):
	}
	f.Blocking("heartbeat")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
