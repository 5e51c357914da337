package rowstest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// waiter returns a queue entry for identity with a fresh ticket.
func waiter(identity string) rows.Waiter {
	return rows.Waiter{Ticket: uuid.NewString(), Identity: identity, Lease: 1500 * time.Millisecond}
}

// mustJoin appends w to the queue at k.
func mustJoin(t *testing.T, s rows.Store, k resourcelock.Key, w rows.Waiter) rows.Item {
	t.Helper()
	it, err := s.Join(ctx(t), k, w)
	if err != nil {
		t.Fatalf("Join %s: %v", w.Identity, err)
	}
	return it
}

func wantQueue(t *testing.T, what string, it rows.Item, want ...rows.Waiter) {
	t.Helper()
	if !slices.Equal(it.Queue, want) {
		t.Fatalf("%s: queue %+v, want %+v", what, it.Queue, want)
	}
}

func testStoreQueueJoin(t *testing.T, s rows.Store) {
	k := storeKey("queue")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	b, c := waiter("b"), waiter("c")
	got := mustJoin(t, s, k, b)
	wantQueue(t, "after one Join", got, b)
	got = mustJoin(t, s, k, c)
	wantQueue(t, "after two Joins, oldest first", got, b, c)
	want := first
	want.Queue = []rows.Waiter{b, c}
	wantStoreItem(t, "Join's answer (the record untouched)", got, want)
	wantStoredItem(t, "after Joins", s, k, want)
	if record.Place(got, c.Ticket) != 1 || record.Place(got, "nobody") != -1 {
		t.Fatalf("Place: c at %d, a missing ticket at %d; want 1 and -1", record.Place(got, c.Ticket), record.Place(got, "nobody"))
	}

	_, err := s.Join(ctx(t), storeKey("queue-missing"), b)
	if !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Join of a missing row: %v, want ErrNotFound", err)
	}
	// Released with waiters queued, the row is not free: it still takes
	// joins. Once nobody waits, it is free, and refuses them.
	rel := mustUpdate(t, s, k, asHolder(got), releasedBy("a"), rows.WriteOptions{})
	d := waiter("d")
	got = mustJoin(t, s, k, d)
	wantQueue(t, "a Join of a released row with waiters", got, b, c, d)
	for _, w := range []rows.Waiter{b, c, d} {
		if got, err = s.Leave(ctx(t), k, w.Ticket, 0); err != nil {
			t.Fatalf("Leave %s: %v", w.Identity, err)
		}
	}
	rel.Queue = nil
	wantStoreItem(t, "after every waiter left", got, rel)
	_, err = s.Join(ctx(t), k, waiter("e"))
	wantConflict(t, "Join of a free row", err)
	if cur, ok := rows.CurrentItem(err); ok && !sameStoreItem(cur, rel) {
		t.Fatalf("Join's conflict carries %s, want %s", formatStoreItem(cur), formatStoreItem(rel))
	}
	for what, w := range map[string]rows.Waiter{
		"no ticket":   {Identity: "x", Lease: time.Second},
		"no identity": {Ticket: "t", Lease: time.Second},
		"no lease":    {Ticket: "t", Identity: "x"},
	} {
		if _, err := s.Join(ctx(t), k, w); !errors.Is(err, dynalease.ErrInvalid) {
			t.Fatalf("Join of a waiter with %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
}

func testStoreQueueKept(t *testing.T, s rows.Store) {
	k := storeKey("queue-kept")
	cur := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	b := waiter("b")
	mustJoin(t, s, k, b)
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("a", time.Second, "renewed"), rows.WriteOptions{})
	wantQueue(t, "after a renewal", cur, b)
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("c", time.Second, ""), rows.WriteOptions{})
	wantQueue(t, "after a takeover", cur, b)
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("c"), rows.WriteOptions{})
	wantQueue(t, "after a release", cur, b)
	// Released with a waiter queued, the row is the queue's: Create is
	// refused, a write conditioned on its RVN lands.
	_, err := s.Create(ctx(t), k, heldBy("d", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Create over a released row with a waiter", err)
	if got, ok := rows.CurrentItem(err); ok && !sameStoreItem(got, cur) {
		t.Fatalf("Create's conflict carries %s, want %s", formatStoreItem(got), formatStoreItem(cur))
	}
	_, err = s.Create(ctx(t), k, heldBy("d", time.Second, ""), rows.WriteOptions{OnlyIfExists: true})
	wantConflict(t, "Create (OnlyIfExists) over a released row with a waiter", err)
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("d", time.Second, ""), rows.WriteOptions{})
	wantQueue(t, "after a takeover of the released row", cur, b)
	mustUpdate(t, s, k, asHolder(cur), releasedBy("d"), rows.WriteOptions{})
	if left, err := s.Leave(ctx(t), k, b.Ticket, 0); err != nil || !left.Free() {
		t.Fatalf("Leave of the last waiter of a released row: %v, free %t", err, left.Free())
	}
	cur = mustCreate(t, s, k, heldBy("e", time.Second, ""), rows.WriteOptions{})
	wantQueue(t, "after a Create over the free row", cur)
}

func testStoreQueueLeave(t *testing.T, s rows.Store) {
	k := storeKey("queue-leave")
	mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	b, c, d := waiter("b"), waiter("c"), waiter("d")
	for _, w := range []rows.Waiter{b, c, d} {
		mustJoin(t, s, k, w)
	}
	_, err := s.Leave(ctx(t), k, c.Ticket, 0)
	wantConflict(t, "Leave at an index holding another ticket", err)
	if cur, ok := rows.CurrentItem(err); ok {
		wantQueue(t, "the row Leave's conflict carries", cur, b, c, d)
	}
	_, err = s.Leave(ctx(t), k, c.Ticket, 5)
	wantConflict(t, "Leave past the queue's end", err)
	got, err := s.Leave(ctx(t), k, c.Ticket, 1)
	if err != nil {
		t.Fatalf("Leave: %v", err)
	}
	wantQueue(t, "after Leave", got, b, d)
	wantQueue(t, "stored after Leave", mustGetItem(t, s, k), b, d)
	if _, err := s.Leave(ctx(t), k, "", 0); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Leave of an empty ticket: %v, want dynalease.ErrInvalid", err)
	}
}

func testStoreQueueHandOver(t *testing.T, s rows.Store) {
	k := storeKey("queue-handover")
	cur := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	stale, b, c := waiter("a"), waiter("b"), waiter("c")
	for _, w := range []rows.Waiter{stale, b, c} {
		mustJoin(t, s, k, w)
	}
	hand := heldBy(b.Identity, b.Lease, "")
	hand.HandedTo = b.Ticket
	for what, d := range map[string]*rows.Dequeue{
		"tickets not at the queue's head": {Tickets: []string{b.Ticket}},
		"a queue that is longer":          {Tickets: []string{stale.Ticket, b.Ticket}, All: true},
		"an empty queue":                  {All: true},
	} {
		_, err := s.Update(ctx(t), k, asHolder(cur), hand, rows.WriteOptions{Dequeue: d})
		wantConflict(t, "hand-over expecting "+what, err)
	}
	got, err := s.Update(ctx(t), k, asHolder(cur), hand, rows.WriteOptions{Dequeue: &rows.Dequeue{Tickets: []string{stale.Ticket, b.Ticket}}})
	if err != nil {
		t.Fatalf("hand-over: %v", err)
	}
	want := storedItem(k, hand, 1)
	want.AcquisitionID = "" // a hand-over clears the acquisition
	want.Queue = []rows.Waiter{c}
	wantStoreItem(t, "hand-over's answer", got, want)
	wantStoredItem(t, "after the hand-over", s, k, want)

	// The waiter confirms with a takeover conditioned on the handed RVN,
	// which counts an acquisition and clears the hand-over.
	mine := heldBy(b.Identity, b.Lease, "")
	got = mustUpdate(t, s, k, asTakeover(got), mine, rows.WriteOptions{})
	want = storedItem(k, mine, 2)
	want.Queue = []rows.Waiter{c}
	wantStoreItem(t, "confirmed", got, want)

	// The last waiter leaves; a release expecting an empty queue lands,
	// on a row whose queue is empty or was never there.
	got, err = s.Leave(ctx(t), k, c.Ticket, 0)
	if err != nil {
		t.Fatalf("Leave of the last waiter: %v", err)
	}
	all := &rows.Dequeue{All: true}
	if _, err := s.Update(ctx(t), k, asHolder(got), releasedBy(b.Identity), rows.WriteOptions{Dequeue: all}); err != nil {
		t.Fatalf("release expecting an empty queue: %v", err)
	}
	k2 := storeKey("queue-none")
	cur = mustCreate(t, s, k2, heldBy("a", time.Second, ""), rows.WriteOptions{})
	if _, err := s.Update(ctx(t), k2, asHolder(cur), releasedBy("a"), rows.WriteOptions{Dequeue: all}); err != nil {
		t.Fatalf("release expecting an empty queue, on a row that never had one: %v", err)
	}
}

func testStoreQueueFull(t *testing.T, s rows.Store) {
	k := storeKey("queue-full")
	mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	for i := range record.MaxQueueLength {
		mustJoin(t, s, k, waiter(fmt.Sprintf("w%d", i)))
	}
	_, err := s.Join(ctx(t), k, waiter("one-too-many"))
	wantConflict(t, fmt.Sprintf("Join to a queue of %d", record.MaxQueueLength), err)
}
