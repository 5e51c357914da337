package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

var errReset = errors.New("connection reset by peer")

func TestAcquireUncontendedIsOneRequest(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("customer-7", WithData([]byte("payload")))
	f.wantOps(faulty.OpCreate)
	if !l.IsHeld() || l.Key() != "customer-7" || string(l.Data()) != "payload" || f.c.Identity() != ownerName {
		t.Fatalf("lock %+v", l)
	}
	if got, want := l.ValidUntil(), epoch.Add(validity); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", got, want)
	}
	it := f.item("customer-7")
	if it.HolderIdentity != ownerName || it.LeaseDuration != lease || string(it.Data) != "payload" || it.Released {
		t.Fatalf("row %+v", it)
	}
}

func TestHeartbeatsEveryPeriodWithOneWrite(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	f.wantOps(faulty.OpCreate)
	rvn := l.RVN()
	for i := 0; i < 4; i++ {
		f.fc.Step(period)
		f.waitIdle("heartbeat")
		f.wantOps(faulty.OpUpdate)
		if l.RVN() == rvn || f.item("k").RVN != l.RVN() {
			t.Fatalf("heartbeat %d did not write a fresh RVN", i)
		}
		rvn = l.RVN()
		if got := l.ValidUntil(); !got.After(f.now()) || got.After(f.now().Add(validity)) {
			t.Fatalf("heartbeat %d: ValidUntil %v not within a validity of now %v", i, got, f.now())
		}
	}
	if !l.IsHeld() {
		t.Fatal("lost while heartbeating")
	}
}

func TestLostWhenNoHeartbeatIsConfirmed(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	f.store.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	f.store.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	f.freeRun()
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	for i := 1; i <= 3; i++ { // heartbeats due by 5, 10 and 15 s all fail
		f.fc.Step(period)
		eventually(t, "a failed heartbeat", func() bool { return f.store.Count(faulty.OpGet) >= i })
	}
	f.fc.Step(validity - 3*period - time.Millisecond)
	if !l.IsHeld() {
		t.Fatal("lost before its validity ran out")
	}
	f.fc.Step(time.Millisecond)
	if l.IsHeld() {
		t.Fatal("IsHeld true at ValidUntil")
	}
	waitDone(t, l)
	var lost *dynalease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Expired || !errors.Is(lost, errReset) || !errors.Is(l.Err(), dynalease.ErrLost) {
		t.Fatalf("Err = %v, want dynalease.Expired caused by the heartbeat error", l.Err())
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), dynalease.ErrLost) {
		t.Fatalf("lock context cause %v", context.Cause(ctx))
	}
	if err := l.Release(context.Background()); !errors.As(err, &lost) {
		t.Fatalf("Release of a lost lock = %v, want its LostError", err)
	}
}

func TestVerifiedLossIsReportedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		reason dynalease.LostReason
	}{
		{"stolen", func(f *fixture) { f.putForeign("k", "thief", "x", lease) }, dynalease.Stolen},
		{"released elsewhere", func(f *fixture) {
			rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"}, Record: resourcelock.Record{HolderIdentity: "other", RVN: "x", LeaseDuration: lease, Released: true}})
		}, dynalease.ReleasedElsewhere},
		{"deleted", func(f *fixture) { rows.MustRaw(f.mem).DeleteItem(resourcelock.Key{Partition: "k"}) }, dynalease.Deleted},
		{"force-released keeping the RVN", func(f *fixture) {
			it := f.item("k")
			it.Released = true
			rows.MustRaw(f.mem).PutItem(it)
		}, dynalease.ReleasedElsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			l := f.acquire("k")
			f.store.ResetCalls()
			tc.change(f)
			f.fc.Step(period)
			f.waitIdle("heartbeat")
			f.wantOps(faulty.OpUpdate, faulty.OpGet)
			waitDone(t, l)
			var lost *dynalease.LostError
			if !errors.As(l.Err(), &lost) || lost.Reason != tc.reason {
				t.Fatalf("Err = %v, want %v", l.Err(), tc.reason)
			}
			if tc.reason == dynalease.Stolen && lost.HolderIdentity != "thief" {
				t.Fatalf("holder %q", lost.HolderIdentity)
			}
			if l.IsHeld() {
				t.Fatal("still held")
			}
		})
	}
}

func TestAmbiguousHeartbeatThatLandedIsAdopted(t *testing.T) {
	for _, err := range []error{errReset, fmt.Errorf("SDK retry: %w", resourcelock.ErrConflict)} {
		t.Run(err.Error(), func(t *testing.T) {
			f := newFixture(t)
			l := f.acquire("k")
			f.store.ResetCalls()
			f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: err})
			f.fc.Step(period)
			f.waitIdle("heartbeat")
			f.wantOps(faulty.OpUpdate, faulty.OpGet)
			if !l.IsHeld() || l.RVN() != f.item("k").RVN {
				t.Fatal("a landed heartbeat was not adopted")
			}
			if got, want := l.ValidUntil(), f.now().Add(validity); !got.Equal(want) {
				t.Fatalf("ValidUntil = %v, want %v", got, want)
			}
		})
	}
}

func TestAmbiguousHeartbeatThatDidNotLandKeepsValidity(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	before := l.ValidUntil()
	f.store.ResetCalls()
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})
	f.fc.Step(period)
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpUpdate, faulty.OpGet)
	if !l.IsHeld() || !l.ValidUntil().Equal(before) {
		t.Fatalf("ValidUntil %v, want unchanged %v", l.ValidUntil(), before)
	}
}

func TestHeartbeatConfirmedAfterValidityDoesNotResurrect(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	block, unblock := gate()
	entered := make(chan faulty.Op, 1)
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block, IgnoreCancel: true})
	f.freeRun()
	f.fc.Step(period)
	<-entered
	f.store.OnCall(nil)
	f.fc.Step(validity)
	waitDone(t, l)
	unblock() // the heartbeat lands, late
	eventually(t, "the late heartbeat returned", func() bool { return f.store.Count(faulty.OpUpdate) == 1 })
	if l.IsHeld() || !errors.Is(l.Err(), dynalease.ErrLost) {
		t.Fatalf("a heartbeat confirmed after the validity brought the lock back: %v", l.Err())
	}
}

func TestSetDataReplacesAndDeletesData(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	l := f.acquire("k", WithData([]byte("v1")))
	if err := l.SetData(context.Background(), []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if string(l.Data()) != "v2" || string(f.item("k").Data) != "v2" {
		t.Fatal("data not replaced")
	}
	if err := l.Heartbeat(context.Background()); err != nil || string(f.item("k").Data) != "v2" {
		t.Fatalf("a plain heartbeat changed the data: %v", err)
	}
	if err := l.SetData(context.Background(), nil); err != nil || f.item("k").Data != nil || l.Data() != nil {
		t.Fatalf("data not deleted: %v", err)
	}
	f.wantOps(faulty.OpCreate, faulty.OpUpdate, faulty.OpUpdate, faulty.OpUpdate)
}

func TestWithoutBackgroundHeartbeatsTheLockRunsOut(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	l := f.acquire("k")
	f.fc.Step(validity)
	waitDone(t, l)
	var lost *dynalease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Expired || lost.Cause != nil {
		t.Fatalf("Err = %v", l.Err())
	}
	f.wantOps(faulty.OpCreate)
}

func TestSessionMonitorRunsOnceWhenHeartbeatsStall(t *testing.T) {
	f := newFixture(t)
	called := make(chan time.Time, 5)
	const safe = 12 * time.Second
	l := f.acquire("k", WithSessionMonitor(safe, func() { called <- f.now() }))
	f.store.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	f.freeRun()
	f.fc.Step(safe - time.Millisecond)
	select {
	case <-called:
		t.Fatal("session monitor ran before its safe time")
	case <-time.After(20 * time.Millisecond):
	}
	f.fc.Step(time.Millisecond)
	select {
	case at := <-called:
		if at.Before(epoch.Add(safe)) {
			t.Fatalf("ran at %v", at)
		}
	case <-time.After(patience):
		t.Fatal("session monitor never ran")
	}
	f.fc.Step(time.Second)
	select {
	case <-called:
		t.Fatal("session monitor ran twice")
	case <-time.After(20 * time.Millisecond):
	}
	if !l.IsHeld() {
		t.Fatal("the monitor fires before the lock is lost, not after")
	}
}

// timerlessClock is a fake clock whose AfterFunc timers never fire, as when
// the goroutine that would run them has not been scheduled yet (a process
// just resumed after a pause).
type timerlessClock struct{ *clocktesting.FakeClock }

func (c timerlessClock) AfterFunc(time.Duration, func()) clock.Timer {
	return c.FakeClock.NewTimer(1 << 62)
}

// ValidUntil, like IsHeld, reads the clock: once the validity has passed it
// is the zero time, whether or not the lock's own timer has ended it yet.
func TestValidUntilIsZeroOnceTheValidityPassedEvenBeforeTheTimerRuns(t *testing.T) {
	f := newFixture(t)
	c, err := NewFromStore(f.store, WithClock(timerlessClock{f.fc}), WithOwnerName("paused"), WithLeaseDuration(lease),
		WithHeartbeatPeriod(0), WithRefreshPeriod(refresh))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	f.fc.Step(validity - time.Millisecond)
	if got, want := l.ValidUntil(), epoch.Add(validity); !got.Equal(want) || !l.IsHeld() {
		t.Fatalf("before the validity passed: ValidUntil %v (want %v), IsHeld %v", got, want, l.IsHeld())
	}
	f.fc.Step(time.Millisecond)
	if got := l.ValidUntil(); !got.IsZero() || l.IsHeld() {
		t.Fatalf("at the validity, with the lock's timer not yet run: ValidUntil %v, IsHeld %v; want the zero time and false", got, l.IsHeld())
	}
}
