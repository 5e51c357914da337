package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// newBubbleClient returns a lock client on store for a synctest bubble:
// the real clock, which the bubble fakes, so that time moves only when
// every goroutine of the test waits.
func newBubbleClient(t *testing.T, store *memorystore.Store, identity string, heartbeats bool) *lock.Client {
	t.Helper()
	cfg := lock.Config{Store: store, Identity: identity, LeaseDuration: 20 * time.Second}
	if !heartbeats {
		cfg.ManualHeartbeats = true
	}
	c, err := lock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// An upgrade waits out a co-reader that went silent, with heartbeats on
// (the default): the upgrader's own heartbeats, which give the row new
// RVNs, do not restart its watch of the other readers.
func TestAnUpgradeWaitsOutASilentCoReaderWithHeartbeatsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		a := newBubbleClient(t, store, "a", true)
		b := newBubbleClient(t, store, "b", false) // b crashes holding: it never renews
		up, err := a.AcquireShared(ctx, "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AcquireShared(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w, err := up.Upgrade(ctx, lock.WithAdditionalWait(time.Minute))
		if err != nil {
			t.Fatalf("Upgrade beside a silent reader, after %v: %v", time.Since(start), err)
		}
		if waited := time.Since(start); waited > 20*time.Second+3*time.Second {
			t.Fatalf("upgraded after %v, want within the silent reader's lease (20s) and a few polls", waited)
		}
		if !w.IsHeld() || w.Shared() {
			t.Fatal("the upgrade did not return the writer")
		}
		_ = w.Release(ctx)
	})
}

// An upgrade goes ahead of a writer of its own client that queued for the
// key while the upgradeable reader held it: it never waits for that
// writer's in-process claim, and the writer takes the key after the
// upgraded lock's release.
func TestAnUpgradeGoesAheadOfItsOwnClientsQueuedWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		a := newBubbleClient(t, store, "a", true)
		up, err := a.AcquireShared(ctx, "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		writer := make(chan error, 1)
		go func() {
			w, err := a.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour))
			if err == nil {
				err = w.Release(ctx)
			}
			writer <- err
		}()
		synctest.Wait() // the writer waits for the reader, queued
		start := time.Now()
		w, err := up.Upgrade(ctx)
		if err != nil {
			t.Fatalf("Upgrade beside its own client's queued writer: %v", err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("upgraded after %v, want at once (nobody else reads)", waited)
		}
		time.Sleep(5 * time.Second)
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		if err := <-writer; err != nil {
			t.Fatalf("the queued writer after the upgraded lock's release: %v", err)
		}
		if waited := time.Since(released); waited > 3*time.Second {
			t.Fatalf("the queued writer took the key %v after the release, want within a few polls", waited)
		}
	})
}

// An upgrade's wait ends with its reader: A's upgrade waits behind B; A is
// cut off from the table; B releases and C, a writer, takes the key over
// from A's silent entry (dequeuing A's upgrade); A's reader expires, and
// Upgrade returns at once with the reader's loss, not after waiting C out.
func TestAnUpgradeReturnsWhenItsReaderEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memorystore.New()
		cut := faulty.New(rows.MustOpen(mem))
		a, err := lock.New(lock.Config{Store: rows.Sealed(cut), Identity: "a", LeaseDuration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(ctx)
		b := newBubbleClient(t, mem, "b", true)
		c := newBubbleClient(t, mem, "c", true)
		up, err := a.AcquireShared(ctx, "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		other, err := b.AcquireShared(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		upgrade := make(chan error, 1)
		go func() {
			w, err := up.Upgrade(ctx, lock.WithAdditionalWait(time.Hour))
			if w != nil {
				_ = w.Release(ctx)
			}
			upgrade <- err
		}()
		time.Sleep(3 * time.Second) // the upgrade waits for b, queued
		synctest.Wait()
		for _, op := range []faulty.Op{faulty.OpGet, faulty.OpCreate, faulty.OpUpdate, faulty.OpShare, faulty.OpJoin, faulty.OpLeave} {
			cut.Inject(op, -1, faulty.Fault{Err: errors.New("network unreachable")})
		}
		cutAt := time.Now()
		if err := other.Release(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		defer close(done)
		go func() {
			if w, err := c.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour)); err == nil {
				<-done // c holds the key on
				_ = w.Release(ctx)
			}
		}()
		err = <-upgrade
		var lost *dynalease.LostError
		if !errors.As(err, &lost) || !errors.Is(up.Err(), dynalease.ErrLost) {
			t.Fatalf("Upgrade of a reader that expired: %v (reader: %v), want the reader's loss", err, up.Err())
		}
		if waited := time.Since(cutAt); waited > 20*time.Second {
			t.Fatalf("Upgrade returned %v after the reader was cut off, want once the reader's validity passed (within its 20s lease)", waited)
		}
		cut.Clear()
	})
}

// A cancelled upgrade whose write landed unseen: the write is released by
// the wait's cleanup (the upgrade did not happen), which ends the reader
// too (its entry went with that write); Upgrade says both, matching ctx's
// error and the reader's loss.
func TestACancelledUpgradeWhoseWriteLandedUnseenSaysTheReaderEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memorystore.New()
		faults := faulty.New(rows.MustOpen(mem))
		a, err := lock.New(lock.Config{Store: rows.Sealed(faults), Identity: "a", LeaseDuration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		up, err := a.AcquireShared(context.Background(), "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		// The upgrade's write lands once its caller gives up on it.
		faults.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: make(chan struct{}), Land: true})
		ctx, cancel := context.WithCancel(context.Background())
		upgrade := make(chan error, 1)
		go func() {
			w, err := up.Upgrade(ctx)
			if w != nil {
				_ = w.Release(context.Background())
			}
			upgrade <- err
		}()
		synctest.Wait() // the write is under way
		cancel()
		err = <-upgrade
		var lost *dynalease.LostError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &lost) {
			t.Fatalf("a cancelled Upgrade whose write landed: %v; want it to match context.Canceled and the reader's loss", err)
		}
		if up.IsHeld() {
			t.Fatal("the reader is still held after its entry went with the upgrade's write")
		}
		if it, ok := rows.MustRaw(mem).Item(resourcelock.Key{Partition: "k"}); !ok || !it.Free() {
			t.Fatalf("row after the cancelled upgrade: %+v; want it released", it.Record)
		}
	})
}

// With heartbeats on (every reader renews): an upgrade waits for a live
// co-reader, takes the key within a poll of its release, ahead of a writer
// queued before it; the shared lock then ends as released.
func TestAnUpgradeWaitsForALiveCoReaderWithHeartbeatsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		a := newBubbleClient(t, store, "a", true)
		b := newBubbleClient(t, store, "b", true)
		w := newBubbleClient(t, store, "w", true)
		up, err := a.AcquireShared(ctx, "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		other, err := b.AcquireShared(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		writer := make(chan error, 1)
		go func() {
			l, err := w.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour))
			if err == nil {
				err = l.Release(ctx)
			}
			writer <- err
		}()
		time.Sleep(time.Second) // the writer queues first
		upgraded := make(chan *lock.Lock, 1)
		go func() {
			l, err := up.Upgrade(ctx, lock.WithAdditionalWait(time.Hour))
			if err != nil {
				t.Errorf("Upgrade: %v", err)
			}
			upgraded <- l
		}()
		time.Sleep(45 * time.Second) // b renews throughout: no takeover
		select {
		case <-upgraded:
			t.Fatal("the upgrade took the key while a live reader held it")
		default:
		}
		if !up.IsHeld() {
			t.Fatal("the upgrading reader stopped holding while it waits")
		}
		if err := other.Release(ctx); err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		l := <-upgraded
		if l == nil {
			return
		}
		if waited := time.Since(released); waited > 2*time.Second {
			t.Fatalf("upgraded %v after the other reader's release, want within a poll", waited)
		}
		if !errors.Is(up.Err(), lock.ErrNotHeld) || !l.IsHeld() || l.Shared() {
			t.Fatalf("after the upgrade: reader %v, writer held %v", up.Err(), l.IsHeld())
		}
		select {
		case err := <-writer:
			t.Fatalf("the writer queued before the upgrade returned while the upgraded lock holds: %v", err)
		default:
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-writer; err != nil {
			t.Fatalf("the queued writer: %v", err)
		}
	})
}

// With heartbeats on: an upgrade beside a live co-reader gives up after
// the row's lease plus its additional wait, and the shared lock stays
// held, with no queue entry left behind.
func TestAnUpgradeGivesUpBesideALiveCoReaderWithHeartbeatsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		a := newBubbleClient(t, store, "a", true)
		b := newBubbleClient(t, store, "b", true)
		up, err := a.AcquireShared(ctx, "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AcquireShared(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = up.Upgrade(ctx, lock.WithAdditionalWait(2*time.Second))
		if !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("Upgrade beside a live reader: %v, want ErrLocked", err)
		}
		if waited := time.Since(start); waited < 22*time.Second || waited > 25*time.Second {
			t.Fatalf("gave up after %v, want after the row's lease plus the additional wait (22s) and a poll", waited)
		}
		if !up.IsHeld() || up.Heartbeat(ctx) != nil {
			t.Fatal("an upgrade that gave up ended the shared hold")
		}
		if it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "k"}); len(it.Queue) != 0 || len(it.Readers) != 2 {
			t.Fatalf("after the upgrade gave up: queue %+v readers %+v; want no queue, both readers", it.Queue, it.Readers)
		}
	})
}

// An upgrade that gives up with its write in doubt ends its reader before
// the release of that write frees the row: no writer ever holds beside a
// reader that still believes it holds. (The write landed, its answer is
// never seen; the caller cancels; the kernel releases the row; another
// client's writer takes it at once.)
func TestAnAbandonedUpgradeEndsItsReaderBeforeTheRowIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memorystore.New()
		faults := faulty.New(rows.MustOpen(mem))
		a, err := lock.New(lock.Config{Store: rows.Sealed(faults), Identity: "a", LeaseDuration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		x := newBubbleClient(t, mem, "x", true)
		up, err := a.AcquireShared(context.Background(), "k", lock.WithUpgradeable())
		if err != nil {
			t.Fatal(err)
		}
		faults.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: make(chan struct{}), Land: true}) // the upgrade's write
		writerBeside := false
		faults.Inject(faulty.OpUpdate, 1, faulty.Fault{Stall: func() { // the release of it has landed
			if w, err := x.TryAcquire(context.Background(), "k"); err == nil {
				writerBeside = up.IsHeld()
				_ = w.Release(context.Background())
			}
		}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := up.Upgrade(ctx); done <- err }()
		synctest.Wait()
		cancel()
		err = <-done
		if writerBeside {
			t.Fatal("a writer acquired the key while the upgrading reader still believed it held")
		}
		var lost *dynalease.LostError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &lost) {
			t.Fatalf("Upgrade: %v; want ctx's error and the reader's loss", err)
		}
	})
}
