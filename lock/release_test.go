package lock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

func TestReleaseMarksTheRowReleased(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k", WithData([]byte("d")))
	f.store.ResetCalls()
	if err := l.Release(context.Background(), ReleaseWithData([]byte("final"))); err != nil {
		t.Fatal(err)
	}
	f.wantOps(faulty.OpUpdate)
	it := f.item("k")
	if !it.Released || it.HolderIdentity != ownerName || string(it.Data) != "final" {
		t.Fatalf("row after release %+v", it)
	}
	waitDone(t, l)
	if !errors.Is(l.Err(), ErrNotHeld) || l.IsHeld() || !l.ValidUntil().IsZero() {
		t.Fatalf("after release: Err=%v IsHeld=%v", l.Err(), l.IsHeld())
	}
	if err := l.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	if err := l.Heartbeat(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Heartbeat after Release = %v, want ErrNotHeld", err)
	}
	f.wantOps()
}

func TestReleaseDeletesWithDeleteOnRelease(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k", WithDeleteOnRelease())
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.wantOps(faulty.OpRemove)
	if _, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: "k"}); ok {
		t.Fatal("row not deleted")
	}
	l2 := f.acquire("k2")
	if err := l2.Release(context.Background(), ReleaseDelete(true)); err != nil {
		t.Fatal(err)
	}
	if _, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: "k2"}); ok {
		t.Fatal("ReleaseDelete(true) kept the row")
	}
}

func TestReleaseOfALockLostMeanwhileTouchesNothing(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	l := f.acquire("k")
	f.putForeign("k", "thief", "x", lease) // taken over behind our back
	err := l.Release(context.Background())
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.Stolen || lost.HolderIdentity != "thief" {
		t.Fatalf("Release = %v, want dynalease.Stolen by thief", err)
	}
	if it := f.item("k"); it.HolderIdentity != "thief" || it.Released || it.RVN != "x" {
		t.Fatalf("someone else's row was changed: %+v", it)
	}
	if !errors.As(l.Err(), &lost) {
		t.Fatalf("Err after a failed release = %v", l.Err())
	}
}

func TestAmbiguousReleaseThatLandedSucceeds(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	f.store.ResetCalls()
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errReset})
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	f.wantOps(faulty.OpUpdate, faulty.OpGet)
	if !f.item("k").Released {
		t.Fatal("not released")
	}
}

func TestReleaseThatDidNotLandSaysSo(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})
	err := l.Release(context.Background())
	if err == nil || errors.Is(err, dynalease.ErrLost) || !errors.Is(err, errReset) {
		t.Fatalf("Release = %v, want the write's error", err)
	}
	if f.item("k").Released || l.IsHeld() {
		t.Fatal("row released, or lock still held locally")
	}
}

// TestReleaseRacingAHeartbeat releases while a heartbeat is in flight: the
// release waits for it and is conditioned on the RVN it wrote, so there is
// neither a false loss nor a row left held.
func TestReleaseRacingAHeartbeat(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	block, unblock := gate()
	entered := make(chan faulty.Op, 1)
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block})
	f.freeRun()
	f.fc.Step(period)
	<-entered
	f.store.OnCall(nil)
	released := make(chan error, 1)
	go func() { released <- l.Release(context.Background()) }()
	select {
	case err := <-released:
		t.Fatalf("Release returned %v while a heartbeat was in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	unblock()
	if err := <-released; err != nil {
		t.Fatalf("Release = %v", err)
	}
	if !f.item("k").Released || !errors.Is(l.Err(), ErrNotHeld) {
		t.Fatalf("row %+v, Err %v", f.item("k"), l.Err())
	}
}

func TestReentrantAcquireRaisesTheHoldCount(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k", WithReentrant())
	again, err := f.c.Acquire(context.Background(), "k", WithReentrant())
	if err != nil || again != l {
		t.Fatalf("reentrant Acquire = %v, %v; want the same lock", again, err)
	}
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil || !l.IsHeld() {
		t.Fatalf("first Release: %v; held %v", err, l.IsHeld())
	}
	f.wantOps()
	if err := again.Release(context.Background()); err != nil || l.IsHeld() {
		t.Fatalf("second Release: %v; held %v", err, l.IsHeld())
	}
	f.wantOps(faulty.OpUpdate)
}

func TestNonReentrantAcquireWaitsInProcess(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("k")
	f.store.ResetCalls()
	locks, errs := f.acquireAsync("k")
	time.Sleep(20 * time.Millisecond)
	f.wantOps() // waiting in process, not polling DynamoDB
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case l2 := <-locks:
		if l2 == l || !l2.IsHeld() {
			t.Fatal("the waiter got the released lock")
		}
		f.wantOps(faulty.OpUpdate, faulty.OpCreate)
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(patience):
		t.Fatal("the waiter never acquired")
	}
	// A reentrant request of a lock taken without WithReentrant also waits.
	if _, err := f.c.TryAcquire(context.Background(), "k", WithReentrant()); !errors.Is(err, ErrLocked) {
		t.Fatalf("reentrant Acquire of a non-reentrant lock = %v, want ErrLocked", err)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	f := newFixture(t)
	a := f.acquire("a", WithReentrant())
	if _, err := f.c.Acquire(context.Background(), "a", WithReentrant()); err != nil {
		t.Fatal(err)
	}
	b := f.acquire("b", WithDeleteOnRelease())
	f.freeRun()
	if err := f.c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.IsHeld() || b.IsHeld() || !f.item("a").Released {
		t.Fatal("Close left a lock held")
	}
	if _, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: "b"}); ok {
		t.Fatal("Close did not honour WithDeleteOnRelease")
	}
	if _, err := f.c.Acquire(context.Background(), "c"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v", err)
	}
}

func TestGetAndListNeverTakeALock(t *testing.T) {
	f := newFixture(t)
	f.acquire("a", WithData([]byte("x")))
	f.putForeign("b", "other", "r", 6*time.Second)
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "bad"}})
	info, err := f.c.Get(context.Background(), "b")
	if err != nil || info.HolderIdentity != "other" || info.RVN != "r" || info.LeaseDuration != 6*time.Second {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	if _, err := f.c.Get(context.Background(), "none"); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get of a missing lock = %v", err)
	}
	all, err := f.c.List(context.Background(), "")
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d rows, %v", len(all), err)
	}
	if all[0].Key != "a" || string(all[0].Data) != "x" || all[1].Key != "b" {
		t.Fatalf("List = %+v", all)
	}
	if it := f.item("b"); it.HolderIdentity != "other" || it.RVN != "r" {
		t.Fatal("Get or List changed a row")
	}
}

func TestHeartbeatsUseBoundedGoroutines(t *testing.T) {
	f := newFixture(t, WithHeartbeatConcurrency(4))
	before := runtime.NumGoroutine()
	var locks []*Lock
	for i := 0; i < 500; i++ {
		l, err := f.c.Acquire(context.Background(), "k"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	f.freeRun()
	for i := 0; i < 3; i++ {
		f.fc.Step(period)
		want := 500 * (i + 1)
		eventually(t, "every lock heartbeaten", func() bool { return f.store.Count(faulty.OpUpdate) >= want })
		if n := runtime.NumGoroutine() - before; n > 4+1+10 {
			t.Fatalf("%d goroutines for 500 locks", n)
		}
	}
	for _, l := range locks {
		if !l.IsHeld() {
			t.Fatal("a lock was lost")
		}
	}
}

// Bug 5 of the engine issue: with the table not answering, Close and
// Release return by their context's deadline instead of taking a request
// timeout per write per lock (here the fake clock never moves, so without
// the fix they would never return). Close releases in parallel and names
// every lock it could not release.
func TestCloseAndReleaseReturnByTheDeadline(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	var locks []*Lock
	for i := range 5 {
		locks = append(locks, f.acquire(fmt.Sprint("k", i)))
	}
	never := make(chan struct{})
	f.store.Inject(faulty.OpUpdate, -1, faulty.Fault{Block: never})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- locks[0].Release(ctx) }()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Release = %v, want the deadline's error", err)
		}
	case <-time.After(patience):
		t.Fatal("Release did not return by its deadline")
	}
	if locks[0].IsHeld() {
		t.Fatal("a lock whose release was not confirmed still counts as held")
	}

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go func() { done <- f.c.Close(ctx) }()
	select {
	case err := <-done:
		for _, l := range locks[1:] {
			if !strings.Contains(fmt.Sprint(err), fmt.Sprintf("%q", l.Key())) {
				t.Errorf("Close = %v, does not name %s", err, l.Key())
			}
			if l.IsHeld() {
				t.Errorf("%s still held after Close", l.Key())
			}
		}
	case <-time.After(patience):
		t.Fatal("Close did not return by its deadline")
	}
	close(never)
}

// A reentrant Acquire during the final Release of the lock does not get
// the lock being released: it waits for the release and takes the lock
// anew (found in review).
func TestReentrantAcquireDuringTheFinalReleaseWaits(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k", WithReentrant())
	block, entered := make(chan struct{}), make(chan faulty.Op, 10)
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block})
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	released := make(chan error, 1)
	go func() { released <- l.Release(context.Background()) }()
	<-entered // the release write is under way
	got := make(chan *Lock, 1)
	go func() {
		again, err := f.c.Acquire(context.Background(), "k", WithReentrant())
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- again
	}()
	select {
	case again := <-got:
		t.Fatalf("a reentrant Acquire returned the lock being released (same: %v)", again == l)
	case <-time.After(50 * time.Millisecond):
	}
	f.store.OnCall(nil)
	close(block)
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case again := <-got:
		if again == l || !again.IsHeld() {
			t.Fatalf("the Acquire after the release got the old lock or one not held")
		}
	case <-time.After(patience):
		t.Fatal("the Acquire after the release never returned")
	}
}
