package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
)

// Review issue, bug 9: Close ends the Acquire calls still under way with
// ErrClosed, at once, instead of letting them poll until their budget:
// one polling another owner's lock, and one waiting in process for a lock
// this client holds.
func TestCloseEndsAcquiresUnderWayWithErrClosed(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("theirs", "other", "r0", lease)
	_, polling := f.acquireAsync("theirs")
	f.waitIdle("acquire")
	f.freeRun()
	f.acquire("mine")
	_, waiting := f.acquireAsync("mine")
	closed := make(chan error, 1)
	go func() { closed <- f.c.Close(context.Background()) }()
	for name, errs := range map[string]chan error{"polling": polling, "waiting in process": waiting} {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s Acquire = %v, want ErrClosed", name, err)
			}
		case <-time.After(patience):
			t.Fatalf("%s Acquire still running after Close", name)
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v", err)
	}
}

// Review issue, bug 10: Release of a lock whose validity has passed
// (heartbeats failed, or the process paused) still sends a release
// conditioned on owner and RVN, so that others need not wait a lease when
// nobody has taken the row; it reports the expiry, and sends nothing the
// second time.
func TestReleaseOfAnExpiredLockStillReleasesTheRow(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k")
	f.fc.Step(validity)
	waitDone(t, l)
	f.store.ResetCalls()
	err := l.Release(context.Background())
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("Release = %v, want the dynalease.Expired LostError", err)
	}
	if row := f.item("k"); !row.Released {
		t.Fatalf("row %+v not released", row.Record)
	}
	f.wantOps(faulty.OpUpdate)
	if err := l.Release(context.Background()); !errors.As(err, &lost) {
		t.Fatalf("second Release = %v", err)
	}
	f.wantOps()
}

// A lock that Close released ends with an error that says so: it matches
// ErrClosed as well as ErrNotHeld, in Err and in its context's cause, so
// work cut short by it can tell a closed client from a lost lock.
func TestALockReleasedByCloseEndsWithErrClosed(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k")
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	if err := f.c.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	waitDone(t, l)
	select {
	case <-ctx.Done():
	case <-time.After(patience):
		t.Fatal("the lock's context did not end with it")
	}
	for what, err := range map[string]error{"Err": l.Err(), "the context's cause": context.Cause(ctx)} {
		if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotHeld) || errors.Is(err, dynalease.ErrLost) {
			t.Errorf("%s = %v, want an error matching ErrClosed and ErrNotHeld, not ErrLost", what, err)
		}
	}
	if err := l.Release(context.Background()); !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Release after Close = %v, want ErrNotHeld and ErrClosed", err)
	}
	if err := l.Heartbeat(context.Background()); !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Heartbeat after Close = %v, want ErrNotHeld and ErrClosed", err)
	}
}

// The reads of a closed client fail with ErrClosed, without a request,
// like its acquisitions.
func TestAClosedClientReadsNothing(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("k", "other", "r1", lease)
	if err := f.c.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	f.store.ResetCalls()
	ctx := context.Background()
	_, getErr := f.c.Get(ctx, "k")
	_, listErr := f.c.List(ctx, "")
	_, partErr := f.c.List(ctx, "k")
	_, permErr := f.c.Permits(ctx, "p", 2)
	_, acqErr := f.c.TryAcquire(ctx, "k")
	for what, err := range map[string]error{"Get": getErr, "List": listErr, "List of a partition": partErr, "Permits": permErr, "TryAcquire": acqErr} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed client = %v, want ErrClosed", what, err)
		}
	}
	f.wantOps()
}
