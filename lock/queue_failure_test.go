package lock

import (
	"context"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
)

// A fair waiter behind the queue's head (place 1 here) whose takeover of a
// dead holder's row is throttled, the read settling it showing the row
// unchanged, waits a poll before trying again, as an unfair waiter does
// (a hot loop against a throttling table before).
func TestThrottledTakeoverBehindTheHeadWaitsAPoll(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "dead", "r0", lease)
	f.join("deadwaiter", lease) // dead too, at the head
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	f.store.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errThrottled})
	f.fc.Step(lease)
	select {
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
	case <-time.After(5 * time.Second):
		t.Fatalf("never waited after a throttled takeover: %s", summarize(f.ops()))
	}
	if n := f.store.Count(faulty.OpUpdate); n > 1 {
		t.Fatalf("%d takeovers sent without waiting a poll", n)
	}
}

// So does a throttled confirmation of a hand-over (the waiter's entry is
// already out of the queue: place -1).
func TestThrottledConfirmationWaitsAPoll(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	_, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.store.ResetCalls()
	f.handToMe("handed")
	f.store.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errThrottled})
	f.fc.Step(maxPoll)
	select {
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-f.idle:
	case <-time.After(5 * time.Second):
		t.Fatalf("never waited after a throttled confirmation: %s", summarize(f.ops()))
	}
	if n := f.store.Count(faulty.OpUpdate); n > 1 {
		t.Fatalf("%d confirmations sent without waiting a poll", n)
	}
}

// A confirmation whose write and settling read both fail is sent again a
// poll later, not once the handed RVN has stayed unchanged for the head's
// lease (which cost every waiter a lease for one failed request before).
func TestAFailedConfirmationIsRetriedAPollLater(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.handToMe("handed")
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errThrottled})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{})                  // the read that sees the hand-over
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errThrottled}) // the read settling the confirmation
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

// A waiter that gives up after it has seen a hand-over to it (its entry
// already out of the queue) passes the lock on, so that the next waiter
// need not wait out its lease.
func TestAWaiterThatGivesUpAfterSeeingAHandOverPassesItOn(t *testing.T) {
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
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errThrottled})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errThrottled})
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

// A Join whose answer was lost may land twice (the Store contract allows
// it); a waiter that gives up removes every entry of its own, or the
// second would later be handed the lock and cost the others a lease.
func TestAWaiterThatGivesUpLeavesNoDuplicateEntry(t *testing.T) {
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
	if _, err := rows.MustOpen(f.mem).Join(context.Background(), keyK, me); err != nil { // the retry that landed too
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
