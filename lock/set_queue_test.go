package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// putSet stores the rows of keys as one set held by owner with rvn,
// keeping the first row's queue.
func (f *fixture) putSet(owner, rvn string, l time.Duration, keys ...string) {
	for i, k := range keys {
		it := rows.Item{Key: resourcelock.Key{Partition: k},
			Record: resourcelock.Record{HolderIdentity: owner, RVN: rvn, LeaseDuration: l, AcquisitionID: "acq-" + owner}}
		if i == 0 {
			if cur, ok := rows.MustRaw(f.mem).Item(it.Key); ok {
				it.Queue = cur.Queue
			}
		}
		rows.MustRaw(f.mem).PutItem(it)
	}
}

// joinKey queues a waiter of another client on key, as its Acquire would.
func (f *fixture) joinKey(key, identity string, l time.Duration) rows.Waiter {
	f.t.Helper()
	w := rows.Waiter{Ticket: "ticket-" + identity, Identity: identity, Lease: l}
	if _, err := rows.MustOpen(f.mem).Join(context.Background(), resourcelock.Key{Partition: key}, w); err != nil {
		f.t.Fatalf("Join %s: %v", identity, err)
	}
	return w
}

// handFirstToMe writes the set's rows as its holder's release would with
// this client at the head of the first key's queue: the first key handed
// to it, the others released.
func (f *fixture) handFirstToMe(rvn string, keys ...string) {
	f.t.Helper()
	first := f.item(keys[0])
	if len(first.Queue) == 0 || first.Queue[0].Identity != ownerName {
		f.t.Fatalf("queue %+v does not start with this client", first.Queue)
	}
	head := first.Queue[0]
	first.Record = resourcelock.Record{HolderIdentity: ownerName, RVN: rvn, LeaseDuration: head.Lease, HandedTo: head.Ticket}
	first.Queue = first.Queue[1:]
	rows.MustRaw(f.mem).PutItem(first)
	for _, k := range keys[1:] {
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: k},
			Record: resourcelock.Record{HolderIdentity: "other", RVN: rvn, LeaseDuration: lease, Released: true}})
	}
}

// A set waiter joins the queue of the set's first key, reads the set once
// a poll meanwhile, and confirms a hand-over of that key at its next read,
// long before the holder's lease would have let it take over: one write
// of its own over every key, conditioned on the handed RVN of the first
// and on the others being free.
func TestASetWaiterQueuesOnItsFirstKeyAndConfirmsAHandOver(t *testing.T) {
	f := newFixture(t)
	keys := []string{"a", "b", "c"}
	f.putSet("other", "r0", lease, keys...)
	locks, errs := f.acquireSetAsync(keys)
	f.waitIdle("acquire")
	f.wantOps(faulty.OpWriteMany, faulty.OpGetMany, faulty.OpJoin)
	wantQueue(t, f.item("a"), ownerName)
	for i := range 3 { // the holder renews; the waiter only reads
		f.putSet("other", "r"+string(rune('1'+i)), lease, keys...)
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
		f.wantOps(faulty.OpGetMany)
	}
	start := f.now()
	f.handFirstToMe("handed", keys...)
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		f.waitIdle("heartbeat")
		f.wantOps(faulty.OpGetMany, faulty.OpWriteMany)
		if rvn := f.wantMembers(false, keys...); rvn != l.RVN() {
			t.Fatalf("rows carry %s, the lock %s", rvn, l.RVN())
		}
		if it := f.item("a"); it.HandedTo != "" {
			t.Fatalf("the first key still carries the hand-over: %+v", it.Record)
		}
		wantQueue(t, f.item("a"))
		if waited := f.now().Sub(start); waited > maxPoll {
			t.Fatalf("confirmed %v after the hand-over, want within a poll", waited)
		}
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	case <-time.After(patience):
		t.Fatalf("the hand-over was never confirmed; calls %s", summarize(f.ops()))
	}
}

// A set's release with waiters queued on its first key hands that key to
// the first of them and frees the others, in one write; the releaser asking
// again queues behind those already waiting. A release that expected the
// queue empty is refused, read and written again.
func TestReleasingASetHandsItsFirstKeyToTheQueuesHead(t *testing.T) {
	f := newFixture(t)
	keys := []string{"a", "b"}
	l, err := f.c.AcquireSet(context.Background(), keys)
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	f.waitIdle("heartbeat")
	w1 := f.joinKey("a", "w1", 7*time.Second)
	f.joinKey("a", "w2", 8*time.Second)
	f.store.ResetCalls()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	f.wantOps(faulty.OpWriteMany, faulty.OpGetMany, faulty.OpWriteMany)
	a, b := f.item("a"), f.item("b")
	if a.Released || a.HolderIdentity != "w1" || a.HandedTo != w1.Ticket || a.LeaseDuration != w1.Lease {
		t.Fatalf("first key after the release: %+v, want handed to w1 with its lease", a.Record)
	}
	wantQueue(t, a, "w2")
	if !b.Released || b.HandedTo != "" || b.HolderIdentity != ownerName {
		t.Fatalf("second key after the release: %+v, want released by this client", b.Record)
	}

	// Asking again, the releaser queues behind those already waiting.
	_, errs := f.acquireSetAsync(keys)
	f.waitIdle("acquire")
	wantQueue(t, f.item("a"), "w2", ownerName)
	select {
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	default:
	}
	f.wantMissingHolder("b", ownerName)
}

// wantMissingHolder checks that the row of key is not held by owner.
func (f *fixture) wantMissingHolder(key, owner string) {
	f.t.Helper()
	if it, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: key}); ok && !it.Released && it.HolderIdentity == owner {
		f.t.Fatalf("row %q is held by %s: a waiting set took part of its keys", key, owner)
	}
}

// A set handed its first key while another of its keys is held waits for
// that key, never holding part of the set, and takes them all within a
// poll of that key's release. It does not join the first key's queue
// again meanwhile (it would then take the entries of later waiters out
// with its own).
func TestASetHandedItsFirstKeyWaitsForItsOtherKeys(t *testing.T) {
	f := newFixture(t)
	keys := []string{"a", "b"}
	f.putSet("other", "r0", lease, keys...)
	locks, errs := f.acquireSetAsync(keys)
	f.waitIdle("acquire")
	f.joinKey("a", "later", lease)
	f.handFirstToMe("handed", keys...)
	f.putForeign("b", "x", "x0", lease) // b taken before the confirmation
	f.store.ResetCalls()
	for i := range 5 {
		f.putForeign("b", "x", "x"+string(rune('1'+i)), lease) // x renews
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
		f.wantOps(faulty.OpGetMany)
		wantQueue(t, f.item("a"), "later")
		if it := f.item("a"); it.RVN != "handed" {
			t.Fatalf("the first key was written while b is held: %+v", it.Record)
		}
	}
	b := f.item("b")
	b.Released = true
	rows.MustRaw(f.mem).PutItem(b)
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		f.waitIdle("heartbeat")
		if rvn := f.wantMembers(false, keys...); rvn != l.RVN() {
			t.Fatalf("rows carry %s, the lock %s", rvn, l.RVN())
		}
		wantQueue(t, f.item("a"), "later")
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	case <-time.After(patience):
		t.Fatalf("the set was never taken; calls %s", summarize(f.ops()))
	}
}

// A set whose first key is free while another key is held has no queue to
// join, and polls without joining; once the first key is held, it joins
// its queue, however many polls it made before.
func TestASetJoinsOnceItsFirstKeyIsHeld(t *testing.T) {
	f := newFixture(t)
	f.putForeign("b", "x", "x0", lease)
	_, errs := f.acquireSetAsync([]string{"a", "b"})
	f.waitIdle("acquire")
	f.store.ResetCalls()
	for i := range 5 {
		f.putForeign("b", "x", "x"+string(rune('1'+i)), lease) // x renews
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
		f.wantOps(faulty.OpGetMany)
	}
	f.putForeign("a", "y", "y0", lease)
	f.fc.Step(maxPoll)
	f.waitIdle("acquire")
	f.wantOps(faulty.OpGetMany, faulty.OpJoin)
	wantQueue(t, f.item("a"), ownerName)
	select {
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	default:
	}
}

// acquireSetCtx is acquireSetAsync with a context the test cancels.
func (f *fixture) acquireSetCtx(ctx context.Context, keys []string, opts ...AcquireOption) (chan *Lock, chan error) {
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquireSet(ctx, keys, opts...)
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	return locks, errs
}

// A set waiter that gives up leaves the first key's queue.
func TestASetWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	f := newFixture(t)
	keys := []string{"a", "b"}
	f.putSet("other", "r0", lease, keys...)
	ctx, cancel := context.WithCancel(context.Background())
	_, errs := f.acquireSetCtx(ctx, keys)
	f.waitIdle("acquire")
	f.joinKey("a", "w2", lease)
	wantQueue(t, f.item("a"), ownerName, "w2")
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireSet = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("AcquireSet did not give up")
	}
	wantQueue(t, f.item("a"), "w2")
}

// A set waiter that gives up after its first key was handed to it and the
// others freed, before it read that, passes the hand-over on to the next
// waiter, instead of making it wait out a lease: its Leave, refused (the
// hand-over took its entry out), makes it read every key afresh. Here the
// store's refusals carry the row, as DynamoDB's do, which shows the first
// key alone.
func TestASetWaiterThatGivesUpPassesOnAWholeHandOver(t *testing.T) {
	f := newFixture(t)
	f.store.HideConflictRows(false)
	keys := []string{"a", "b"}
	f.putSet("other", "r0", lease, keys...)
	ctx, cancel := context.WithCancel(context.Background())
	_, errs := f.acquireSetCtx(ctx, keys)
	f.waitIdle("acquire")
	w2 := f.joinKey("a", "w2", 7*time.Second)
	f.handFirstToMe("handed", keys...)
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireSet = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("AcquireSet did not give up")
	}
	if a := f.item("a"); a.HolderIdentity != "w2" || a.HandedTo != w2.Ticket || a.Released {
		t.Fatalf("first key after giving up: %+v, want handed on to w2", a.Record)
	}
	wantQueue(t, f.item("a"))
}

// A fair set whose first key is free, so that it has no place in a queue,
// gives up as an unfair waiter does: after the lease of the key that
// holds it up, plus the additional wait, counted from its first sight of
// that holder, however often another key's holders change.
func TestAFairSetWithoutAPlaceGivesUpWhileAnotherKeyChangesHands(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	f.putForeign("b", "x0", "r0", holderLease)
	_, errs := f.acquireSetAsync([]string{"a", "b"}, WithAdditionalWait(2*time.Second))
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		// b changes hands every poll: a takeover, never a free row.
		f.putForeign("b", fmt.Sprint("x", i), fmt.Sprint("r", i), holderLease)
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if waited := f.now().Sub(epoch); waited > 3*(holderLease+2*time.Second) {
				t.Fatalf("still waiting after %v: the holders' changes restart its budget", waited)
			}
			continue
		case err := <-errs:
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("AcquireSet = %v, want ErrLocked", err)
			}
			f.wantMissingHolder("a", ownerName)
			return
		case <-time.After(patience):
			t.Fatal("AcquireSet neither waited nor returned")
		}
	}
}

// A queued set that acquires other than by a hand-over (its first key
// released with the queue left in it, as by an unfair or AWS Java
// client's release) takes its own entry out of that queue.
func TestASetThatTakesItsKeysFreeLeavesTheQueue(t *testing.T) {
	f := newFixture(t)
	keys := []string{"a", "b"}
	f.putSet("other", "r0", lease, keys...)
	locks, errs := f.acquireSetAsync(keys)
	f.waitIdle("acquire")
	wantQueue(t, f.item("a"), ownerName)
	for _, k := range keys {
		it := f.item(k)
		it.Released = true // released by its holder, queue kept
		rows.MustRaw(f.mem).PutItem(it)
	}
	f.fc.Step(maxPoll)
	select {
	case l := <-locks:
		f.waitIdle("heartbeat")
		if rvn := f.wantMembers(false, keys...); rvn != l.RVN() {
			t.Fatalf("rows carry %s, the lock %q: leaving the queue must not change the hold", rvn, l.RVN())
		}
		wantQueue(t, f.item("a"))
		f.fc.Step(period) // a heartbeat, conditioned on the lock's RVN
		f.waitIdle("heartbeat")
		if !l.IsHeld() || f.wantMembers(false, keys...) != l.RVN() {
			t.Fatalf("the heartbeat after leaving the queue failed: held %v, err %v", l.IsHeld(), l.Err())
		}
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	case <-time.After(patience):
		t.Fatalf("the set was never taken; calls %s", summarize(f.ops()))
	}
}

// requestRecorder counts the requests a lock client reports, by operation.
type requestRecorder struct {
	metrics.Nop
	mu  sync.Mutex
	ops map[string]int
}

func (r *requestRecorder) Request(op string, _ metrics.Outcome, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ops == nil {
		r.ops = map[string]int{}
	}
	r.ops[op]++
}

func (r *requestRecorder) count(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops[op]
}

// A set whose first key is free sends no join, and reports none: the
// metrics count requests sent.
func TestASetWithNothingToJoinReportsNoJoin(t *testing.T) {
	rec := &requestRecorder{}
	f := newFixture(t, WithMetrics(rec))
	f.putForeign("b", "x", "x0", lease)
	_, errs := f.acquireSetAsync([]string{"a", "b"})
	f.waitIdle("acquire")
	for i := range 5 {
		f.putForeign("b", "x", fmt.Sprint("x", i+1), lease)
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
	}
	if n := rec.count("join"); n != 0 {
		t.Fatalf("%d joins reported, none sent (requests %v)", n, f.ops())
	}
	select {
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	default:
	}
}
