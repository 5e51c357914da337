package lock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

var keyK = resourcelock.Key{Partition: "k"}

// join queues a waiter of another client on key k, as its Acquire would.
func (f *fixture) join(identity string, l time.Duration) rows.Waiter {
	f.t.Helper()
	w := rows.Waiter{Ticket: "ticket-" + identity, Identity: identity, Lease: l}
	if _, err := rows.MustOpen(f.mem).Join(context.Background(), keyK, w); err != nil {
		f.t.Fatalf("Join %s: %v", identity, err)
	}
	return w
}

// handTo writes the row of k as a release by its holder handing the lock
// to the queue's head would, which must be me.
func (f *fixture) handToMe(rvn string) {
	f.t.Helper()
	it := f.item("k")
	if len(it.Queue) == 0 || it.Queue[0].Identity != ownerName {
		f.t.Fatalf("queue %+v does not start with this client", it.Queue)
	}
	head := it.Queue[0]
	it.Record = resourcelock.Record{HolderIdentity: ownerName, RVN: rvn, LeaseDuration: head.Lease, HandedTo: head.Ticket}
	it.Queue = it.Queue[1:]
	rows.MustRaw(f.mem).PutItem(it)
}

func wantQueue(t *testing.T, it rows.Item, identities ...string) {
	t.Helper()
	var got []string
	for _, w := range it.Queue {
		got = append(got, w.Identity)
	}
	if !slices.Equal(got, identities) {
		t.Fatalf("queue %v, want %v", got, identities)
	}
}

// A waiter joins the row's queue once, and confirms a hand-over to it at
// its next read, long before the holder's lease would have let it take
// over: by a write of its own, conditioned on the handed RVN.
func TestAWaiterJoinsTheQueueAndConfirmsAHandOver(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	wantQueue(t, f.item("k"), ownerName)
	for range 3 { // the holder renews; the waiter only reads
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: keyK, Queue: f.item("k").Queue,
			Record: resourcelock.Record{HolderIdentity: "other", RVN: "r" + f.now().String(), LeaseDuration: lease}})
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
		f.wantOps(faulty.OpGet)
	}
	start := f.now()
	f.handToMe("handed")
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		it := f.item("k")
		if it.RVN != l.RVN() || it.RVN == "handed" || it.HandedTo != "" || it.HolderIdentity != ownerName {
			t.Fatalf("row after the confirmation: %+v (lock RVN %s)", it.Record, l.RVN())
		}
		wantQueue(t, it)
		if waited := f.now().Sub(start); waited > maxPoll {
			t.Fatalf("confirmed %v after the hand-over, want within a poll", waited)
		}
		f.wantOps(faulty.OpGet, faulty.OpUpdate)
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-time.After(patience):
		t.Fatalf("the hand-over was never confirmed; calls %s", summarize(f.ops()))
	}
}

// A release with waiters queued hands the lock to the first of them, in
// the one write that ends this client's hold; a waiter that joined after
// the holder last saw the row is not skipped: the release, conditioned on
// the queue as the holder knew it, is refused and written again. (No
// stint here: see the stint's tests.)
func TestReleaseHandsTheLockToTheQueuesHead(t *testing.T) {
	f := newFixture(t, WithStint(-1))
	l := f.acquire("k")
	w1 := f.join("w1", 7*time.Second)
	f.join("w2", 8*time.Second)
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("the lock did not end with its release")
	}
	f.wantOps(faulty.OpUpdate, faulty.OpGet, faulty.OpUpdate)
	it := f.item("k")
	if it.Released || it.HolderIdentity != "w1" || it.HandedTo != w1.Ticket || it.LeaseDuration != w1.Lease {
		t.Fatalf("row after the release: %+v, want handed to w1 with its lease", it.Record)
	}
	wantQueue(t, it, "w2")

	// Asking again, the releaser queues behind those already waiting.
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), "w2", ownerName)
	select {
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	default:
	}
}

// A release with nobody else queued marks the row released in one write,
// taking the releaser's own stale entries out of the queue's head.
func TestReleaseWithAnEmptyQueueMarksTheRowReleased(t *testing.T) {
	f := newFixture(t, WithStint(-1))
	l := f.acquire("k")
	f.join(ownerName, lease) // an entry of an earlier wait of this client
	f.store.ResetCalls()
	f.store.HideConflictRows(false)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	f.wantOps(faulty.OpUpdate, faulty.OpUpdate) // refused on the queue, its answer carrying the row
	it := f.item("k")
	if !it.Released || it.HandedTo != "" {
		t.Fatalf("row after the release: %+v, want released", it.Record)
	}
	wantQueue(t, it)
}

// A head handed the lock that never confirms (it died) delays the others
// by its lease, timed from when they first saw the handed RVN; the next
// waiter then takes over, leaving the queue in the same write.
func TestAHandOverNobodyConfirmsIsTakenOverAfterTheHeadsLease(t *testing.T) {
	f := newFixture(t)
	const headLease = 7 * time.Second
	f.putForeign("k", "holder", "r0", lease)
	f.join("dead", headLease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), "dead", ownerName)
	// The holder hands the lock to the dead waiter.
	it := f.item("k")
	it.Record = resourcelock.Record{HolderIdentity: "dead", RVN: "handed", LeaseDuration: headLease, HandedTo: "ticket-dead"}
	it.Queue = it.Queue[1:]
	rows.MustRaw(f.mem).PutItem(it)
	var seen time.Time
	for {
		f.fc.Step(maxPoll)
		select {
		case l := <-locks:
			if sent := f.item("k").AcquireTime; seen.IsZero() || sent.Sub(seen) < headLease {
				t.Fatalf("took over %v after first seeing the hand-over, want at least the head's lease %v", sent.Sub(seen), headLease)
			}
			it := f.item("k")
			if it.RVN != l.RVN() || it.HandedTo != "" {
				t.Fatalf("row after the takeover: %+v", it.Record)
			}
			wantQueue(t, it)
			if n := f.store.Count(faulty.OpLeave); n != 0 {
				t.Fatalf("%d Leave requests: the takeover should have taken the entry out", n)
			}
			return
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-f.idle:
		}
		if seen.IsZero() && f.store.Count(faulty.OpGet) > 1 {
			seen = f.now()
		}
		if f.now().Sub(epoch) > 3*lease {
			t.Fatal("the dead head's hand-over was never taken over")
		}
	}
}

// An AWS Java client's acquire rewrites the whole row, queue included: the
// waiter, finding its entry gone, joins again.
func TestAWaiterWhoseEntryVanishedJoinsAgain(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	f.putForeign("k", "java-host", "r1", lease) // no queue
	f.fc.Step(maxPoll)
	f.waitIdle("acquire")
	f.wantOps(faulty.OpGet, faulty.OpJoin)
	wantQueue(t, f.item("k"), ownerName)
}

// A waiter that gives up leaves the queue, so that no hand-over waits for
// it.
func TestAWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	f.join("w1", lease)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "k")
		errs <- err
	}()
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), "w1", ownerName)
	f.join("w2", lease)
	rows.MustOpen(f.mem).Leave(context.Background(), keyK, "ticket-w1", 0) //nolint:errcheck // set-up
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("Acquire did not end with its context")
	}
	wantQueue(t, f.item("k"), "w2")
}

// A confirmation whose answer was lost is settled by a read, like every
// write in doubt: the lock is handed out once, with its validity from the
// send.
func TestAConfirmationWhoseAnswerWasLostIsSettled(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.store.ResetCalls()
	f.handToMe("handed")
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errReset})
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		if it := f.item("k"); it.RVN != l.RVN() || it.HandedTo != "" {
			t.Fatalf("row %+v, lock RVN %s", it.Record, l.RVN())
		}
		f.wantOps(faulty.OpGet, faulty.OpUpdate, faulty.OpGet)
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-time.After(patience):
		t.Fatal("never acquired")
	}
}

// With fairness off the client behaves as the AWS Java lock client: no
// queue, and a release marks the row released whoever waits.
func TestUnfairClientsNeitherQueueNorHandOver(t *testing.T) {
	f := newFixture(t, WithUnfair())
	l := f.acquire("k")
	f.join("w1", lease)
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	f.wantOps(faulty.OpUpdate)
	if it := f.item("k"); !it.Released || it.HolderIdentity != ownerName {
		t.Fatalf("row after an unfair release: %+v", it.Record)
	}
	f.putForeign("k", "other", "r0", lease)
	f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet)
}

// A waiter that gives up after the lock was handed to it, before it read
// the hand-over, passes the lock on to the next waiter instead of making
// everybody wait out its lease.
func TestAWaiterThatGivesUpPassesOnAHandOverToIt(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "k")
		errs <- err
	}()
	f.waitIdle("acquire")
	next := f.join("next", 9*time.Second)
	f.handToMe("handed")
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("Acquire did not end with its context")
	}
	it := f.item("k")
	if it.HolderIdentity != "next" || it.HandedTo != next.Ticket || it.Released {
		t.Fatalf("row after giving up: %+v, want handed on to the next waiter", it.Record)
	}
	wantQueue(t, it)
}

// Two dead waiters in a row cost the others one lease, not two: the live
// waiter behind them takes the lease over once the first hand-over has
// run out, taking the second dead entry out of the queue in the same
// write.
func TestATakeoverRemovesTheDeadEntriesAheadOfIt(t *testing.T) {
	f := newFixture(t)
	const deadLease = 7 * time.Second
	f.putForeign("k", "holder", "r0", lease)
	f.join("dead1", deadLease)
	f.join("dead2", deadLease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), "dead1", "dead2", ownerName)
	it := f.item("k")
	it.Record = resourcelock.Record{HolderIdentity: "dead1", RVN: "handed", LeaseDuration: deadLease, HandedTo: "ticket-dead1"}
	it.Queue = it.Queue[1:]
	rows.MustRaw(f.mem).PutItem(it)
	start := f.now()
	for {
		f.fc.Step(maxPoll)
		select {
		case l := <-locks:
			// When the takeover was sent (the loop may have stepped the
			// clock again before it took the lock from the channel): the
			// acquire time it wrote, which heartbeats keep.
			sent := f.item("k").AcquireTime
			if waited := sent.Sub(start); waited > deadLease+3*maxPoll {
				t.Fatalf("took over %v after the hand-over to the dead waiter, want about its lease %v", waited, deadLease)
			}
			it := f.item("k")
			if it.RVN != l.RVN() {
				t.Fatalf("row %+v, lock RVN %s", it.Record, l.RVN())
			}
			wantQueue(t, it)
			return
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-f.idle:
		}
		if f.now().Sub(start) > 3*lease {
			t.Fatal("never acquired")
		}
	}
}

// A fair waiter keeps waiting while the queue moves: its budget counts
// from the last time the lock changed hands, not from its start.
func TestAFairWaiterWaitsOnWhileTheQueueMoves(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "h0", "r0", lease)
	f.join("w1", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	start := f.now()
	for i := 1; f.now().Sub(start) < 3*lease; i++ {
		// Another holder every 0.6 lease; the queue ahead of this waiter
		// stays (w1 is slow to come back, say).
		it := f.item("k")
		it.Record = resourcelock.Record{HolderIdentity: "h" + string(rune('0'+i)), RVN: "r" + string(rune('0'+i)), LeaseDuration: lease}
		rows.MustRaw(f.mem).PutItem(it)
		for end := f.now().Add(lease * 6 / 10); f.now().Before(end); {
			f.fc.Step(maxPoll)
			select {
			case err := <-errs:
				t.Fatalf("Acquire gave up %v after it started, while the lock kept changing hands: %v", f.now().Sub(start), err)
			case <-locks:
				t.Fatal("acquired without a hand-over")
			case <-f.idle:
			case <-time.After(patience):
				t.Fatal("the waiter stopped reading")
			}
		}
	}
}

// A waiter that gives up with the lock handed to it passes the hand-over
// on as the releaser left it: the data (ReleaseWithData's included), the
// attributes and the TTL stay the releaser's. The waiter never held the
// lock; its own WithData, WithAttributes and TTL belong to a hold it did
// not get.
func TestPassingOnAHandOverKeepsTheReleasersDataAttributesAndTTL(t *testing.T) {
	f := newFixture(t, WithTTL(time.Hour))
	f.putForeign("k", "other", "r0", lease)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "k", WithData([]byte("waiter's")),
			WithAttributes(map[string]any{"app": &types.AttributeValueMemberS{Value: "waiter's"}}))
		errs <- err
	}()
	f.waitIdle("acquire")
	next := f.join("next", 9*time.Second)
	f.handToMe("handed")
	expires := epoch.Add(42 * time.Minute)
	it := f.item("k")
	it.Data = []byte("releaser's")
	it.Attributes = map[string]any{"app": &types.AttributeValueMemberS{Value: "releaser's"}}
	it.Expires = expires
	rows.MustRaw(f.mem).PutItem(it)
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("Acquire did not end with its context")
	}
	it = f.item("k")
	if it.HolderIdentity != "next" || it.HandedTo != next.Ticket || it.Released {
		t.Fatalf("row after giving up: %+v, want handed on to the next waiter", it.Record)
	}
	if string(it.Data) != "releaser's" {
		t.Errorf("data after the pass-on = %q, want the releaser's", it.Data)
	}
	if v, ok := it.Attributes["app"].(*types.AttributeValueMemberS); !ok || v.Value != "releaser's" {
		t.Errorf("attribute app after the pass-on = %#v, want the releaser's", it.Attributes["app"])
	}
	if !it.Expires.Equal(expires) {
		t.Errorf("TTL after the pass-on = %v, want the releaser's %v", it.Expires, expires)
	}
}

// A hand-over to an earlier wait of this client (its entry was stale: the
// call gave up, or the process restarted) is confirmed by the client's
// wait now under way, which takes only its own entry out of the queue: the
// live waiters between keep their places. (Found by the simulator: a
// reader's confirmation took every waiter ahead of it out of the queue.)
func TestConfirmingAHandOverToAnEarlierWaitKeepsTheWaitersBetween(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("k", "other", "r1", lease)
	stale := f.join(ownerName, lease) // an earlier wait of this client's, gone
	f.join("x", lease)                // a live waiter of another client
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	wantQueue(t, f.item("k"), ownerName, "x", ownerName)
	// The holder releases, handing the lock to the queue's head: the stale
	// entry of this client's.
	it := f.item("k")
	it.Record = resourcelock.Record{HolderIdentity: ownerName, RVN: "handed", LeaseDuration: lease, HandedTo: stale.Ticket}
	it.Queue = it.Queue[1:]
	rows.MustRaw(f.mem).PutItem(it)
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		wantQueue(t, f.item("k"), "x")
		mustRelease(t, l)
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
		t.Fatal("the hand-over to this client's earlier wait was not confirmed at the next poll")
	case <-time.After(patience):
		t.Fatal("Acquire did not return")
	}
}

// A waiter whose entry keeps vanishing (here wiped three times, as a Java
// client's whole-row writes do, or takeovers while its process was
// paused) stops joining for a while, and joins again within a lease: it
// never waits without a place for good, which would let every later
// waiter pass it. (Found by the simulator: a paused process's waits lost
// their entries three times and were starved.)
func TestAWaiterWhoseEntryKeepsVanishingJoinsAgainWithinALease(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.putForeign("k", "other", "r1", time.Hour)
	f.acquireAsync("k")
	f.waitIdle("acquire")
	wipe := func() {
		it := f.item("k")
		it.Queue = nil
		rows.MustRaw(f.mem).PutItem(it)
	}
	for range 3 {
		wipe()
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
	}
	wipe()
	joins := f.store.Count(faulty.OpJoin)
	for start := f.now(); f.now().Sub(start) <= lease+2*maxPoll; {
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
		if f.store.Count(faulty.OpJoin) > joins {
			wantQueue(t, f.item("k"), ownerName)
			return
		}
	}
	t.Fatalf("the waiter did not join again within a lease of its entry's last vanishing (%d joins)", joins)
}
