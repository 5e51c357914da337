package lock

import (
	"context"
	"testing"
	"time"

	rlt "github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// Review R1: a fair waiter that is not at the queue's head (place 1 here)
// takes over a dead holder's row; the takeover is throttled once and the
// read that settles it shows the row unchanged. Like the unfair path (and
// TestATakeoverThrottledOnceIsRetriedAfterAPoll), the retry must wait a
// poll: instead, takeover() resets a.tried because place != 0, so
// TakeoverDue stays true, Wait returns 0, and the takeover is sent again at
// once (a hot loop while throttling lasts).
func TestReviewThrottledTakeoverBehindTheHeadWaitsAPoll(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "dead", "r0", lease)
	f.join("deadwaiter", lease) // dead too, at the head
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(rlt.OpCreate, rlt.OpGet, rlt.OpJoin)
	f.store.Inject(rlt.OpUpdate, -1, rlt.Fault{Err: errThrottled})
	f.fc.Step(lease)
	select {
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
	case <-time.After(5 * time.Second):
		t.Fatalf("never waited after a throttled takeover: %s", summarize(f.ops()))
	}
	if n := f.store.Count(rlt.OpUpdate); n > 1 {
		t.Fatalf("%d takeovers sent without waiting a poll", n)
	}
}

// Review R1b: the same for a hand-over confirmation (the waiter's entry is
// already gone from the queue: place -1).
func TestReviewThrottledConfirmationWaitsAPoll(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.store.ResetCalls()
	f.handToMe("handed")
	f.store.Inject(rlt.OpUpdate, -1, rlt.Fault{Err: errThrottled})
	f.fc.Step(maxPoll)
	select {
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
	case <-time.After(5 * time.Second):
		t.Fatalf("never waited after a throttled confirmation: %s", summarize(f.ops()))
	}
	if n := f.store.Count(rlt.OpUpdate); n > 1 {
		t.Fatalf("%d confirmations sent without waiting a poll", n)
	}
}

// Review R2: a confirmation whose write fails (timed out) and whose
// settling read fails too is not sent again until the handed RVN has
// stayed unchanged for the head's lease: every waiter loses a lease for
// one failed request. It should be retried a poll later.
func TestReviewAFailedConfirmationIsRetriedAPollLater(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.handToMe("handed")
	f.store.Inject(rlt.OpUpdate, 1, rlt.Fault{Err: errThrottled})
	f.store.Inject(rlt.OpGet, 1, rlt.Fault{})                  // the read that sees the hand-over
	f.store.Inject(rlt.OpGet, 1, rlt.Fault{Err: errThrottled}) // the read settling the confirmation
	start := f.now()
	for {
		f.fc.Step(maxPoll)
		select {
		case <-locks:
			if waited := f.now().Sub(start); waited > 4*maxPoll {
				t.Fatalf("confirmed %v after the hand-over, want within a few polls", waited)
			}
			return
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-f.idle:
		case <-time.After(5 * time.Second):
			t.Fatalf("stuck: %s", summarize(f.ops()))
		}
		if f.now().Sub(start) > 2*lease {
			t.Fatal("never confirmed")
		}
	}
}

// Review R3: a waiter that gives up after it has seen a hand-over to it
// (its entry already out of the queue: place -1) does not pass it on:
// LeaveQueue returns at once for place < 0, so decline never runs, and
// the next waiter waits out this waiter's lease.
func TestReviewAWaiterThatGivesUpAfterSeeingAHandOverPassesItOn(t *testing.T) {
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
	f.store.Inject(rlt.OpUpdate, 1, rlt.Fault{Err: errThrottled})
	f.store.Inject(rlt.OpGet, 1, rlt.Fault{})
	f.store.Inject(rlt.OpGet, 1, rlt.Fault{Err: errThrottled})
	f.fc.Step(maxPoll)
	f.waitIdle("acquire") // saw the hand-over; its confirmation failed
	cancel()
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not end")
	}
	it := f.item("k")
	if it.HolderIdentity != "next" || it.HandedTo != next.Ticket {
		t.Fatalf("row after giving up: %+v queue %+v, want handed on to the next waiter", it.Record, it.Queue)
	}
}

// Review R4: a Join whose answer was lost may land twice (an SDK retry, or
// the engine joining again after the read settling it failed), and the
// Store contract allows it. A waiter that then gives up removes only the
// first of its entries; the other is later handed the lock, and every
// other waiter waits out this waiter's lease.
func TestReviewAWaiterThatGivesUpLeavesNoDuplicateEntry(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "k")
		errs <- err
	}()
	f.waitIdle("acquire")
	me := f.item("k").Queue[0]
	if _, err := f.mem.Join(context.Background(), keyK, me); err != nil { // the retry that landed too
		t.Fatal(err)
	}
	f.join("next", lease)
	cancel()
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not end")
	}
	wantQueue(t, f.item("k"), "next")
}
