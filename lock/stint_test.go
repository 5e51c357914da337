package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

// The switch between the two modes, and the bound it gives a waiter: the
// holder's stint begins when it first sees a waiter (here at its first
// release, whose expectation of an empty queue is refused); while it
// lasts, each Release with a waiter queued marks the row released and
// keeps the queue, and the holder's next Acquire takes the row back in one
// write; the first Release once the stint has passed hands the lock to the
// queue's head. The head thus waits, from the holder's next write after it
// joined, at most the stint plus one hold for the hand-over (and confirms
// it within a poll: see TestAWaiterJoinsTheQueueAndConfirmsAHandOver); the
// releaser, asking again, queues behind it.
func TestReleasesWithinTheStintKeepTheLockThenHandItOver(t *testing.T) {
	const (
		stint = 3 * time.Second
		hold  = 400 * time.Millisecond
	)
	f := newFixture(t, WithHeartbeatPeriod(0), WithStint(stint))
	f.store.HideConflictRows(false)
	l := f.acquire("k")
	w1 := f.join("w1", 7*time.Second)
	var start time.Time // when the lock first saw w1
	kept := 0
	for {
		f.fc.Step(hold)
		f.store.ResetCalls()
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if kept == 0 {
			// The lock's row showed no waiter: the release expects none,
			// is refused, and written again over the row its refusal
			// carries. The stint begins: w1 has waited no time yet as
			// this client can tell, so the row is kept.
			start = f.now()
			f.wantOps(faulty.OpUpdate, faulty.OpUpdate)
		} else {
			f.wantOps(faulty.OpUpdate)
		}
		it := f.item("k")
		if f.now().Sub(start) >= stint {
			if it.Released || it.HolderIdentity != "w1" || it.HandedTo != w1.Ticket {
				t.Fatalf("release %v after the stint began: row %+v, want handed to w1", f.now().Sub(start), it.Record)
			}
			wantQueue(t, it)
			break
		}
		if !it.Released || it.HolderIdentity != ownerName || it.HandedTo != "" {
			t.Fatalf("release %v into the stint: row %+v, want released and kept", f.now().Sub(start), it.Record)
		}
		wantQueue(t, it, "w1")
		kept++
		acquisitions := it.Acquisitions
		l = f.acquire("k")
		f.wantOps(faulty.OpUpdate) // taken back without a read, conditioned on the released RVN
		it = f.item("k")
		if it.Released || it.RVN != l.RVN() || it.Acquisitions != acquisitions+1 {
			t.Fatalf("row taken back: %+v, want held by the lock, one more acquisition", it.Record)
		}
		wantQueue(t, it, "w1")
	}
	if waited, holds := f.now().Sub(start), int((stint+hold-1)/hold); waited > stint+hold || kept != holds {
		t.Fatalf("handed over %v after the stint began, after %d releases kept; want at most %v, %d releases", waited, kept, stint+hold, holds)
	}
	// Asking again, the releaser waits behind the head it handed to.
	f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), ownerName)
}

// Without a stint (Config.Stint negative), every release with a waiter
// queued hands the lock over.
func TestANegativeStintHandsOverAtEveryRelease(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0), WithStint(-1))
	l := f.acquire("k")
	w1 := f.join("w1", 7*time.Second)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := f.item("k"); it.HandedTo != w1.Ticket {
		t.Fatalf("row after the release: %+v, want handed to w1", it.Record)
	}
}

// The queue's head takes a row that its releaser kept for a stint, and did
// not take back, at its next poll: by a write conditioned on the row's RVN
// that takes its own entry out of the queue.
func TestTheQueuesHeadTakesARowKeptForAStint(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("k", "other", "r1", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	it := f.item("k")
	it.Record = resourcelock.Record{HolderIdentity: "other", RVN: "kept", LeaseDuration: lease, Released: true}
	rows.MustRaw(f.mem).PutItem(it)
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		f.wantOps(faulty.OpGet, faulty.OpUpdate)
		it := f.item("k")
		if it.Released || it.RVN != l.RVN() || it.HolderIdentity != ownerName {
			t.Fatalf("row after the head took it: %+v", it.Record)
		}
		wantQueue(t, it)
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
		t.Fatalf("the head did not take the kept row; calls %s", summarize(f.ops()))
	}
}

// A row kept for a stint belongs to the queue: a newcomer cannot create
// over it, and joins the queue instead; behind the head, it takes the row
// over only once its RVN has stayed unchanged for the row's lease (a dead
// head), as from any silent holder, and then at once.
func TestANewcomerQueuesBehindARowKeptForAStint(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.store.HideConflictRows(false)
	const rowLease = 6 * time.Second
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: keyK,
		Queue:  []rows.Waiter{{Ticket: "ticket-dead", Identity: "dead", Lease: rowLease}},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "kept", LeaseDuration: rowLease, Released: true}})
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpJoin) // the refused create's answer carries the row
	wantQueue(t, f.item("k"), "dead", ownerName)
	for {
		f.fc.Step(maxPoll)
		select {
		case l := <-locks:
			// Second in the queue of a kept row, it does not yield to the
			// head (a live head would have taken the row a lease ago).
			if took := f.now().Sub(epoch); took < rowLease || took >= rowLease+refresh {
				t.Fatalf("took the kept row over %v after first seeing it, want its lease %v and no yield", took, rowLease)
			}
			it := f.item("k")
			if it.RVN != l.RVN() || it.Released {
				t.Fatalf("row after the takeover: %+v", it.Record)
			}
			wantQueue(t, it)
			return
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-f.idle:
		}
		if f.now().Sub(epoch) > 3*lease {
			t.Fatal("the kept row was never taken over")
		}
	}
}

// Within a stint, a release takes this client's own stale entries (of an
// earlier wait) out of the queue's head, conditioned on them: with nobody
// else queued the row is then free, never kept for a stale entry.
func TestAReleaseWithinTheStintTakesItsOwnStaleEntriesOut(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.store.HideConflictRows(false)
	l := f.acquire("k")
	f.join(ownerName, lease)
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	f.wantOps(faulty.OpUpdate, faulty.OpUpdate) // refused on the queue, its answer carrying the row
	it := f.item("k")
	if !it.Free() {
		t.Fatalf("row after the release: %+v, queue %+v; want free", it.Record, it.Queue)
	}
}

// A holder that takes its key back again and again within its stint keeps
// one identity, but each taking back is a new acquisition: a queued
// waiter's budget starts again at each, as when the lock changes hands,
// so a waiter does not give up while the stint goes on, however long it
// lasts against the waiter's budget (the holder's lease, by default).
func TestAQueuedWaiterWaitsOnThroughAStintLongerThanItsBudget(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	const rowLease = 5 * time.Second
	put := func(acquisitions int64) {
		it, _ := rows.MustRaw(f.mem).Item(keyK)
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: keyK, Queue: it.Queue, Record: resourcelock.Record{
			HolderIdentity: "other", RVN: fmt.Sprintf("r%d", acquisitions), LeaseDuration: rowLease, Acquisitions: acquisitions}})
	}
	put(1)
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	for n := int64(2); f.now().Sub(epoch) < 4*rowLease; n++ {
		put(n) // taken back: a new RVN and acquisition, the same holder
		f.fc.Step(maxPoll)
		select {
		case err := <-errs:
			t.Fatalf("Acquire gave up %v into the holder's stint: %v", f.now().Sub(epoch), err)
		case <-f.idle:
		}
	}
}

// A kept row whose queue starts with a stale entry of this client's
// identity (an earlier wait's, whose Leave failed) is offered to this
// client's new wait: it takes the row, and the stale entry with its own.
func TestAStaleEntryOfThisClientAtTheHeadDoesNotHoldAKeptRowUp(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("k", "other", "r1", lease)
	f.join(ownerName, lease) // the stale entry
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), ownerName, ownerName)
	it := f.item("k")
	it.Record = resourcelock.Record{HolderIdentity: "other", RVN: "kept", LeaseDuration: lease, Released: true}
	rows.MustRaw(f.mem).PutItem(it)
	f.fc.Step(maxPoll)
	select {
	case <-locks:
		wantQueue(t, f.item("k"))
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
		t.Fatalf("the kept row was not taken; calls %s", summarize(f.ops()))
	}
}

// Within its stint, the releaser's TryAcquire takes its kept row back too;
// another client's TryAcquire finds it held (it is the queue's).
func TestTryAcquireWithinTheStintTakesTheKeptRowBack(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.store.HideConflictRows(false)
	l := f.acquire("k")
	f.join("w1", lease)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	f.store.ResetCalls()
	l, err := f.c.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryAcquire of the kept row: %v", err)
	}
	f.wantOps(faulty.OpUpdate)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	other, err := NewFromStore(f.store, WithClock(f.fc), WithOwnerName("other"), WithHeartbeatPeriod(0))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if _, err := other.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("another client's TryAcquire of the kept row: %v, want ErrLocked", err)
	}
}

// A stint bounds the wait of the waiters the holder has seen, not its own
// hold: a lock held long with nobody queued keeps its first release after
// a waiter joins unseen for the stint (the waiter has waited no time yet
// as the holder can tell), and hands over at the first release once the
// stint has passed since then. A waiter that a heartbeat showed the holder
// starts the stint at that heartbeat.
func TestAStintCountsFromTheFirstWaiterSeenNotFromTheAcquisition(t *testing.T) {
	const stint = time.Second
	f := newFixture(t, WithHeartbeatPeriod(0), WithStint(stint))
	f.store.HideConflictRows(false)
	l := f.acquire("k")
	f.fc.Step(5 * stint) // held alone, far longer than a stint (within its validity)
	w1 := f.join("w1", 7*time.Second)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := f.item("k"); !it.Released || it.HandedTo != "" {
		t.Fatalf("first release after w1 joined unseen: row %+v, want released and kept for the stint", it.Record)
	}
	l = f.acquire("k") // taken back within the stint
	f.fc.Step(stint)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := f.item("k"); it.HandedTo != w1.Ticket {
		t.Fatalf("release a stint after w1 was first seen: row %+v, want handed to w1", it.Record)
	}

	// Seen by a heartbeat: the stint begins there, not at the acquisition
	// long before, and not at the release after it.
	g := newFixture(t, WithHeartbeatPeriod(0), WithStint(stint))
	l = g.acquire("k")
	g.fc.Step(5 * stint)
	w2 := g.join("w2", 7*time.Second)
	if err := l.Heartbeat(context.Background()); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	g.fc.Step(stint / 2)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := g.item("k"); !it.Released || it.HandedTo != "" {
		t.Fatalf("release half a stint after a heartbeat showed w2: row %+v, want kept", it.Record)
	}
	l = g.acquire("k")
	g.fc.Step(stint / 2)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := g.item("k"); it.HandedTo != w2.Ticket {
		t.Fatalf("release a stint after a heartbeat showed w2: row %+v, want handed to w2", it.Record)
	}
}

// A take-back sent within the stint continues it however late its answer
// comes: it does not begin a new stint, which would let a holder whose
// writes are slow keep the key from its queue for ever.
func TestATakeBackAnsweredAfterTheStintContinuesIt(t *testing.T) {
	const stint = time.Second
	f := newFixture(t, WithHeartbeatPeriod(0), WithStint(stint))
	f.store.HideConflictRows(false)
	l := f.acquire("k")
	w1 := f.join("w1", 7*time.Second)
	if err := l.Release(context.Background()); err != nil { // sees w1: the stint begins
		t.Fatalf("Release: %v", err)
	}
	f.fc.Step(stint * 9 / 10)
	// The take-back is sent within the stint and answered after it.
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Stall: func() { f.fc.Step(stint / 5) }})
	l = f.acquire("k")
	if it := f.item("k"); it.Released || it.RVN != l.RVN() {
		t.Fatalf("take-back: row %+v, want held by the lock", it.Record)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if it := f.item("k"); it.HandedTo != w1.Ticket {
		t.Fatalf("release %v after the stint began: row %+v, want handed to w1", stint*11/10, it.Record)
	}
}
