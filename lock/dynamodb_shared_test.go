package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// eventuallyDDB polls cond every 20 ms until it holds, failing after a
// minute: for a state another goroutine's requests reach, not for timing.
func eventuallyDDB(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queueLength returns how many waiters the row of key has queued.
func (e *ddbEnv) queueLength(key string) int {
	e.t.Helper()
	q, ok := e.item(key)["dynaleaseQueue"].(*types.AttributeValueMemberL)
	if !ok {
		return 0
	}
	return len(q.Value)
}

// Readers of several clients hold one key at once; a writer that waits
// for them holds back new readers, takes the key once the readers that
// held released, and keeps readers out while it holds. Every step is a
// state reached, not a time.
func TestDynamoDBReadersShareAKeyAndAWaitingWriterComesNext(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	var readers []*lock.Lock
	for range 5 {
		l, err := e.newClient().TryAcquireShared(ctx, "cfg")
		if err != nil {
			t.Fatalf("TryAcquireShared while others read: %v", err)
		}
		readers = append(readers, l)
	}
	writer := e.newClient()
	if _, err := writer.TryAcquire(ctx, "cfg"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a writer's TryAcquire while five read: %v, want ErrLocked", err)
	}
	got := make(chan *lock.Lock, 1)
	go func() {
		l, err := writer.Acquire(ctx, "cfg", lock.WithAdditionalWait(time.Minute))
		if err != nil {
			t.Errorf("writer Acquire: %v", err)
		}
		got <- l
	}()
	eventuallyDDB(t, "the writer queued", func() bool { return e.queueLength("cfg") == 1 })
	late := e.newClient()
	if _, err := late.TryAcquireShared(ctx, "cfg"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a new reader while a writer waits: %v, want ErrLocked", err)
	}
	for i, l := range readers {
		if !l.IsHeld() {
			t.Fatalf("reader %d lost its hold while the writer waited: %v", i, l.Err())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("reader %d Release: %v", i, err)
		}
	}
	w := <-got
	if w == nil {
		t.FailNow()
	}
	if _, err := late.TryAcquireShared(ctx, "cfg"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a reader while the writer holds: %v, want ErrLocked", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := late.TryAcquireShared(ctx, "cfg")
	if err != nil {
		t.Fatalf("a reader after the writer: %v", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A reader that stops renewing (its process paused) is waited out by a
// writer: the writer takes the row only after the reader's hold ended by
// the reader's own clock, and the reader's next heartbeat finds it lost.
func TestDynamoDBAWriterWaitsOutASilentReader(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	silent := e.newTimedClient(lock.WithHeartbeatPeriod(0)) // never renews on its own
	r, err := silent.AcquireShared(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	validUntil := r.ValidUntil()
	w, err := e.newTimedClient().Acquire(ctx, "cfg", lock.WithAdditionalWait(time.Minute))
	if err != nil {
		t.Fatalf("writer Acquire: %v", err)
	}
	if took := time.Now(); took.Before(validUntil) {
		t.Fatalf("the writer took the row at %v, before the silent reader's hold ended (%v)", took, validUntil)
	}
	var lost *dynalease.LostError
	if err := r.Heartbeat(ctx); !errors.As(err, &lost) && !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("the silent reader's heartbeat after the writer took the row: %v, want lost", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Ten clients read (four in five times) or write a key at random, holding
// briefly: a writer never holds with another writer or any reader. The
// test counts overlaps, not time: on a busy machine a request may time out
// (5 s) and leave a waiter's entry in the queue, which costs the others up
// to a lease (1 min) each, so the waits' budgets and the test's deadline
// are far above what the holds take and only catch a wait that never ends.
func TestDynamoDBReadersAndWritersNeverOverlap(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	const clients, rounds = 10, 8
	var readers, writers, badOverlaps, mostReaders atomic.Int32
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range clients {
		c := e.newClient()
		wg.Go(func() {
			for range rounds {
				shared := rand.IntN(5) > 0
				var l *lock.Lock
				var err error
				if shared {
					l, err = c.AcquireShared(ctx, "k", lock.WithAdditionalWait(10*time.Minute))
				} else {
					l, err = c.Acquire(ctx, "k", lock.WithAdditionalWait(10*time.Minute))
				}
				if err != nil {
					t.Errorf("client %d (shared %v): %v", i, shared, err)
					return
				}
				if shared {
					n := readers.Add(1)
					for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
					}
					if writers.Load() > 0 {
						badOverlaps.Add(1)
					}
				} else if writers.Add(1) > 1 || readers.Load() > 0 {
					badOverlaps.Add(1)
				}
				time.Sleep(10 * time.Millisecond)
				if shared {
					readers.Add(-1)
				} else {
					writers.Add(-1)
				}
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("client %d: Release: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := badOverlaps.Load(); n > 0 {
		t.Fatalf("%d holds overlapped a writer's", n)
	}
	t.Logf("at most %d readers at once", mostReaders.Load())
}

// An upgradeable reader becomes the writer without releasing, once the
// other reader released, and holds new readers back while it waits.
func TestDynamoDBAnUpgradeableReaderBecomesTheWriter(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	a, b := e.newClient(), e.newClient()
	up, err := a.TryAcquireShared(ctx, "cfg", lock.WithUpgradeable())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquireShared(ctx, "cfg", lock.WithUpgradeable()); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a second upgradeable reader: %v, want ErrLocked", err)
	}
	other, err := b.TryAcquireShared(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	got, errs := make(chan *lock.Lock, 1), make(chan error, 1)
	go func() {
		w, err := up.Upgrade(ctx, lock.WithAdditionalWait(time.Minute))
		if err != nil {
			errs <- err
			return
		}
		got <- w
	}()
	eventuallyDDB(t, "the upgrade queued", func() bool { return e.queueLength("cfg") == 1 })
	if _, err := e.newClient().TryAcquireShared(ctx, "cfg"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a new reader while the upgrade waits: %v, want ErrLocked", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if owner := str(e.item("cfg"), "ownerName"); owner != a.Identity() || !w.IsHeld() || !errors.Is(up.Err(), lock.ErrNotHeld) {
			t.Fatalf("after the upgrade: row owner %q, writer held %v, shared lock %v", owner, w.IsHeld(), up.Err())
		}
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
	case err := <-errs:
		t.Fatalf("Upgrade: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Upgrade did not return")
	}
}
