package resourcelocktest

import (
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/setlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// runManyConformance runs the subtests of many rows: the store's, and
// those of the kernel's set of keys over it.
func runManyConformance(t *testing.T, newStore func(t *testing.T) resourcelock.Store) {
	tests := []struct {
		name string
		run  func(*testing.T, resourcelock.Store)
	}{
		{"GetMany", testManyGet},
		{"WriteManyAllOrNothing", testManyAllOrNothing},
		{"WriteManyKinds", testManyKinds},
		{"ManyQueues", testManyQueues},
		{"ManyRefusedBeforeSending", testManyInvalid},
		{"SetHeldWhole", testSetHeldWhole},
		{"SetTakeoverOfMixedMembers", testSetTakeoverMixed},
		{"SetTakeoverRefusedWhenAMemberMoved", testSetTakeoverMoved},
		{"SetFenceTokenAboveEveryMembers", testSetFence},
		{"SetQueueAndHandOver", testSetQueue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t))
		})
	}
}

func testManyGet(t *testing.T, s resourcelock.Store) {
	a, b, missing := storeKey("many-a"), storeKey("many-b"), storeKey("many-missing")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, "a's"), resourcelock.WriteOptions{})
	ib := mustCreate(t, s, b, heldBy("y", 2*time.Second, ""), resourcelock.WriteOptions{})
	rows, err := s.GetMany(ctx(t), []resourcelock.Key{a, missing, b})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(rows) != 2 {
		t.Fatalf("GetMany returned %d rows, want 2 (the missing one absent)", len(rows))
	}
	ia.Data = nil // GetMany reads records without their data
	wantStoreItem(t, "GetMany's a", rows[a], ia)
	wantStoreItem(t, "GetMany's b", rows[b], ib)
}

func testManyAllOrNothing(t *testing.T, s resourcelock.Store) {
	held, free := storeKey("many-held"), storeKey("many-free")
	h := mustCreate(t, s, held, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	err := s.WriteMany(ctx(t), []resourcelock.Write{
		{Key: free, Kind: resourcelock.WriteCreate, Record: heldBy("me", time.Second, "")},
		{Key: held, Kind: resourcelock.WriteCreate, Record: heldBy("me", time.Second, "")},
	})
	wantConflict(t, "WriteMany over a held row", err)
	wantNoItem(t, "the free row, after the WriteMany refused", s, free)
	wantStoredItem(t, "the held row, after the WriteMany refused", s, held, h)

	// The same with the condition on the other row.
	err = s.WriteMany(ctx(t), []resourcelock.Write{
		{Key: held, Kind: resourcelock.WriteUpdate, Expect: asHolder(h), Record: heldBy("x", time.Second, "")},
		{Key: free, Kind: resourcelock.WriteUpdate, Expect: resourcelock.Precondition{RVN: "nope"}, Record: heldBy("x", time.Second, "")},
	})
	wantConflict(t, "WriteMany updating a missing row", err)
	wantStoredItem(t, "the held row, after the second WriteMany refused", s, held, h)
}

func testManyKinds(t *testing.T, s resourcelock.Store) {
	c, u, r := storeKey("many-create"), storeKey("many-update"), storeKey("many-remove")
	iu := mustCreate(t, s, u, heldBy("me", time.Second, "kept"), resourcelock.WriteOptions{})
	ir := mustCreate(t, s, r, heldBy("me", time.Second, ""), resourcelock.WriteOptions{})
	rc, ru := heldBy("me", 3*time.Second, ""), heldBy("me", 3*time.Second, "")
	if err := s.WriteMany(ctx(t), []resourcelock.Write{
		{Key: c, Kind: resourcelock.WriteCreate, Record: rc},
		{Key: u, Kind: resourcelock.WriteUpdate, Expect: asHolder(iu), Record: ru, Options: resourcelock.WriteOptions{KeepData: true}},
		{Key: r, Kind: resourcelock.WriteRemove, Expect: asHolder(ir)},
	}); err != nil {
		t.Fatalf("WriteMany: %v", err)
	}
	wantStoredItem(t, "the created row", s, c, storedItem(c, rc, 1))
	want := storedItem(u, ru, 1)
	want.AcquisitionID, want.Data = iu.AcquisitionID, iu.Data // a holder's write keeps both
	wantStoredItem(t, "the updated row", s, u, want)
	wantNoItem(t, "the removed row", s, r)
}

// GetMany returns each row's queue, and a WriteMany's Dequeue conditions
// its row's write on the queue and takes the entries out, all or nothing
// with the other rows.
func testManyQueues(t *testing.T, s resourcelock.Store) {
	a, b := storeKey("many-queue-a"), storeKey("many-queue-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	ib := mustCreate(t, s, b, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	w1 := resourcelock.Waiter{Ticket: "t1", Identity: "w1", Lease: time.Second}
	w2 := resourcelock.Waiter{Ticket: "t2", Identity: "w2", Lease: 2 * time.Second}
	for _, w := range []resourcelock.Waiter{w1, w2} {
		if _, err := s.Join(ctx(t), a, w); err != nil {
			t.Fatalf("Join: %v", err)
		}
	}
	bw := resourcelock.Waiter{Ticket: "tb", Identity: "wb", Lease: time.Second}
	if _, err := s.Join(ctx(t), b, bw); err != nil {
		t.Fatalf("Join: %v", err)
	}
	// Only the first key's queue is read.
	rows, err := s.GetMany(ctx(t), []resourcelock.Key{a, b})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if q := rows[a].Queue; len(q) != 2 || q[0] != w1 || q[1] != w2 {
		t.Fatalf("GetMany's queue of a, named first: %+v, want w1 and w2", q)
	}
	if len(rows[b].Queue) != 0 {
		t.Fatalf("GetMany's queue of b, named second: %+v, want none read", rows[b].Queue)
	}
	if rows, err = s.GetMany(ctx(t), []resourcelock.Key{b, a}); err != nil || len(rows[a].Queue) != 0 || len(rows[b].Queue) != 1 || rows[b].Queue[0] != bw {
		t.Fatalf("GetMany naming b first: a's queue %+v, b's %+v, %v; want b's alone", rows[a].Queue, rows[b].Queue, err)
	}
	ib = mustGetItem(t, s, b)

	// A hand-over of a to w1 conditioned on a queue starting with w2 is
	// refused, and b is left as it was.
	hand := heldBy("w1", w1.Lease, "")
	hand.HandedTo = w1.Ticket
	release := releasedBy("x")
	writes := func(d *resourcelock.Dequeue) []resourcelock.Write {
		return []resourcelock.Write{
			{Key: a, Kind: resourcelock.WriteUpdate, Expect: asHolder(ia), Record: hand, Options: resourcelock.WriteOptions{Dequeue: d}},
			{Key: b, Kind: resourcelock.WriteUpdate, Expect: asHolder(ib), Record: release},
		}
	}
	wantConflict(t, "WriteMany dequeuing the wrong ticket", s.WriteMany(ctx(t), writes(&resourcelock.Dequeue{Tickets: []string{"t2"}})))
	wantConflict(t, "WriteMany expecting an empty queue", s.WriteMany(ctx(t), writes(&resourcelock.Dequeue{All: true})))
	wantStoredItem(t, "b, after the refused WriteMany", s, b, ib)
	if err := s.WriteMany(ctx(t), writes(&resourcelock.Dequeue{Tickets: []string{"t1"}})); err != nil {
		t.Fatalf("WriteMany handing a to w1: %v", err)
	}
	got := mustGetItem(t, s, a)
	if got.HolderIdentity != "w1" || got.HandedTo != "t1" || len(got.Queue) != 1 || got.Queue[0] != w2 {
		t.Fatalf("a after the hand-over: %+v queue %+v, want handed to w1 with w2 left queued", got.Record, got.Queue)
	}
	if got := mustGetItem(t, s, b); !got.Released {
		t.Fatalf("b after the hand-over: %+v, want released", got.Record)
	}
}

func testManyInvalid(t *testing.T, s resourcelock.Store) {
	a := storeKey("many-invalid")
	for what, keys := range map[string][]resourcelock.Key{
		"no keys":       nil,
		"a key twice":   {a, a},
		"too many keys": manyKeys(s.MaxMany() + 1),
		"an empty key":  {a, {}},
	} {
		if _, err := s.GetMany(ctx(t), keys); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("GetMany of %s: %v, want dynalease.ErrInvalid", what, err)
		}
		writes := make([]resourcelock.Write, len(keys))
		for i, k := range keys {
			writes[i] = resourcelock.Write{Key: k, Kind: resourcelock.WriteCreate, Record: heldBy("me", time.Second, "")}
		}
		if err := s.WriteMany(ctx(t), writes); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("WriteMany of %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	wantNoItem(t, "a key of the refused writes", s, a)
}

func manyKeys(n int) []resourcelock.Key {
	keys := make([]resourcelock.Key, n)
	for i := range keys {
		keys[i] = storeKey("many")
	}
	return keys
}

func mustSet(t *testing.T, s resourcelock.Store, keys ...resourcelock.Key) *setlease.Set {
	t.Helper()
	return mustSetAs(t, s, "me", keys...)
}

// mustSetAs returns the set of keys written as identity.
func mustSetAs(t *testing.T, s resourcelock.Store, identity string, keys ...resourcelock.Key) *setlease.Set {
	t.Helper()
	set, err := setlease.New(s, keys, identity)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return set
}

func testSetHeldWhole(t *testing.T, s resourcelock.Store) {
	a, b := storeKey("set-a"), storeKey("set-b")
	set := mustSet(t, s, b, a, b) // sorted, without the duplicate
	if len(set.Keys()) != 2 {
		t.Fatalf("Keys: %v, want two", set.Keys())
	}
	if _, err := set.Get(ctx(t)); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get of a set of missing rows: %v, want ErrNotFound", err)
	}
	r := heldBy("me", 2*time.Second, "")
	got, err := set.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got.RVN != r.RVN || got.AcquisitionID != r.RVN || got.HolderIdentity != "me" || got.Released {
		t.Fatalf("Create returned %s, want the record written, acquired by it", formatStoreItem(got))
	}
	read, err := set.Get(ctx(t))
	if err != nil || read.RVN != r.RVN || read.HolderIdentity != "me" || read.LeaseDuration != 2*time.Second || read.AcquisitionID != r.RVN {
		t.Fatalf("Get of the set just created: %s, %v; want its record", formatStoreItem(read), err)
	}
	for _, k := range []resourcelock.Key{a, b} {
		if it := mustGetItem(t, s, k); it.RVN != r.RVN || it.HolderIdentity != "me" {
			t.Fatalf("member %s: %s, want the set's record", k, formatStoreItem(it))
		}
	}
	if _, err := mustSetAs(t, s, "other", a, b).Create(ctx(t), heldBy("other", time.Second, "")); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Create of a held set: %v, want ErrConflict", err)
	}
	// A renewal by the holder, then a release.
	r2 := heldBy("me", 2*time.Second, "")
	got, err = set.Update(ctx(t), asHolder(read), r2)
	if err != nil || got.AcquisitionID != r.RVN {
		t.Fatalf("renewal: %s, %v; want it to keep the acquisition %s", formatStoreItem(got), err, r.RVN)
	}
	rel := releasedBy("me")
	if _, err := set.Update(ctx(t), resourcelock.Precondition{RVN: r2.RVN, HolderIdentity: "me"}, rel); err != nil {
		t.Fatalf("release: %v", err)
	}
	read, err = set.Get(ctx(t))
	if err != nil || !read.Released || read.RVN != rel.RVN {
		t.Fatalf("Get of the released set: %s, %v; want released with the release's RVN", formatStoreItem(read), err)
	}
}

func testSetTakeoverMixed(t *testing.T, s resourcelock.Store) {
	held, released, missing := storeKey("set-held"), storeKey("set-released"), storeKey("set-missing")
	h := mustCreate(t, s, held, heldBy("java", 3*time.Second, ""), resourcelock.WriteOptions{})
	r := mustCreate(t, s, released, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	mustUpdate(t, s, released, asHolder(r), releasedBy("x"), resourcelock.WriteOptions{})
	set := mustSet(t, s, held, released, missing)
	seen, err := set.Get(ctx(t))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if seen.Released || seen.HolderIdentity != "java" || seen.LeaseDuration != 3*time.Second || seen.RVN == h.RVN {
		t.Fatalf("Get of a set with one member held: %s; want held by java for its 3s lease, with a composite RVN", formatStoreItem(seen))
	}
	// A holder's write on a composite is refused; a takeover on it lands.
	if _, err := mustSetAs(t, s, "java", held, released, missing).Update(ctx(t), resourcelock.Precondition{RVN: seen.RVN, HolderIdentity: "java"}, heldBy("java", time.Second, "")); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("a holder's write on a set of mixed members: %v, want ErrConflict", err)
	}
	mine := heldBy("me", time.Second, "")
	if _, err := set.Update(ctx(t), asTakeover(seen), mine); err != nil {
		t.Fatalf("takeover on the composite RVN: %v", err)
	}
	for _, k := range []resourcelock.Key{held, released, missing} {
		if it := mustGetItem(t, s, k); it.RVN != mine.RVN || it.HolderIdentity != "me" || it.AcquisitionID != mine.RVN {
			t.Fatalf("member %s after the takeover: %s, want the taker's record", k, formatStoreItem(it))
		}
	}
}

func testSetTakeoverMoved(t *testing.T, s resourcelock.Store) {
	a, b := storeKey("set-moved-a"), storeKey("set-moved-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	set := mustSet(t, s, a, b)
	seen, err := set.Get(ctx(t))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	// x renews a: the composite seen is out of date.
	mustUpdate(t, s, a, asHolder(ia), heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	_, err = set.Update(ctx(t), asTakeover(seen), heldBy("me", time.Second, ""))
	wantConflict(t, "a takeover after a member was renewed", err)
	wantNoItem(t, "the missing member, after the refused takeover", s, b)
	// b created meanwhile by another: the composite that saw it missing is out of date too.
	ia = mustGetItem(t, s, a)
	mustUpdate(t, s, a, asHolder(ia), releasedBy("x"), resourcelock.WriteOptions{})
	seen, _ = set.Get(ctx(t))
	mustCreate(t, s, b, heldBy("y", time.Second, ""), resourcelock.WriteOptions{})
	_, err = set.Create(ctx(t), heldBy("me", time.Second, ""))
	wantConflict(t, "a Create after a member was taken", err)
	_, err = set.Update(ctx(t), asTakeover(seen), heldBy("me", time.Second, ""))
	wantConflict(t, "a takeover after a missing member was created", err)
	if it := mustGetItem(t, s, a); !it.Released {
		t.Fatalf("member a after the refused writes: %s, want released", formatStoreItem(it))
	}
}

// A set's token is one generation above every member's, on every member,
// and a later acquisition of any member gets a higher one still.
func testSetFence(t *testing.T, s resourcelock.Store) {
	a, b := storeKey("fence-a"), storeKey("fence-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	var err error
	for range 2 {
		if ia, err = s.Fence(ctx(t), a, "x", ia.AcquisitionID); err != nil {
			t.Fatalf("Fence of a: %v", err)
		}
	}
	before := record.Token(ia.Record)
	mustUpdate(t, s, a, asHolder(ia), releasedBy("x"), resourcelock.WriteOptions{})

	set := mustSet(t, s, a, b)
	r := heldBy("me", time.Second, "")
	got, err := set.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := s.FenceMany(ctx(t), []resourcelock.Key{a, b}, "someone-else", got.AcquisitionID); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("FenceMany by another holder: %v, want ErrConflict", err)
	}
	fenced, err := set.Fence(ctx(t), got.AcquisitionID)
	if err != nil {
		t.Fatalf("Set.Fence: %v", err)
	}
	token := record.Token(fenced.Record)
	if token <= before {
		t.Fatalf("the set's token %#x is not above member a's earlier token %#x", token, before)
	}
	for _, k := range []resourcelock.Key{a, b} {
		if it := mustGetItem(t, s, k); record.Token(it.Record) != token {
			t.Fatalf("member %s carries token %#x, want the set's %#x", k, record.Token(it.Record), token)
		}
	}
	// A renewal keeps the token.
	renewed, err := set.Update(ctx(t), resourcelock.Precondition{RVN: r.RVN, HolderIdentity: "me"}, heldBy("me", time.Second, ""))
	if err != nil || record.Token(renewed.Record) != token {
		t.Fatalf("renewal: token %#x, %v; want the set's %#x kept", record.Token(renewed.Record), err, token)
	}
	read, err := set.Get(ctx(t))
	if err != nil || record.Token(read.Record) != token {
		t.Fatalf("Get: token %#x, %v; want %#x", record.Token(read.Record), err, token)
	}
	if _, err := set.Update(ctx(t), asHolder(read), releasedBy("me")); err != nil {
		t.Fatalf("release: %v", err)
	}
	// A later acquisition of b alone, fenced, gets a higher token.
	ib, err := s.Create(ctx(t), b, heldBy("y", time.Second, ""), resourcelock.WriteOptions{})
	if err != nil {
		t.Fatalf("Create of b: %v", err)
	}
	if ib, err = s.Fence(ctx(t), b, "y", ib.AcquisitionID); err != nil {
		t.Fatalf("Fence of b: %v", err)
	}
	if record.Token(ib.Record) <= token {
		t.Fatalf("b's later token %#x is not above the set's %#x", record.Token(ib.Record), token)
	}
}

// A set's waiter queues on its first member; the holder's release hands
// that member to it and frees the others in one write; the waiter's fold
// is then a hand-over to it, which its takeover confirms. A waiter finds
// nothing to join while the first member is free.
func testSetQueue(t *testing.T, s resourcelock.Store) {
	a, b := storeKey("setq-a"), storeKey("setq-b")
	holder, waiter := mustSetAs(t, s, "h", a, b), mustSetAs(t, s, "w", a, b)
	r := heldBy("h", 2*time.Second, "")
	held, err := holder.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := waiter.Get(ctx(t)); err != nil {
		t.Fatalf("Get: %v", err)
	}
	w := resourcelock.Waiter{Ticket: "tw", Identity: "w", Lease: 3 * time.Second}
	joined, err := waiter.Join(ctx(t), w)
	if err != nil || record.Place(joined, w.Ticket) != 0 || joined.HolderIdentity != "h" {
		t.Fatalf("Join: %s queue %+v, %v; want held by h with the waiter first in the queue", formatStoreItem(joined), joined.Queue, err)
	}

	// The release hands the first member over, conditioned on the queue.
	hand := releasedBy("h")
	hand.Released, hand.HolderIdentity, hand.LeaseDuration, hand.HandedTo = false, w.Identity, w.Lease, w.Ticket
	if _, err := holder.UpdateDequeue(ctx(t), asHolder(held), hand, &resourcelock.Dequeue{All: true}); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("a release expecting an empty queue: %v, want ErrConflict", err)
	}
	if _, err := holder.UpdateDequeue(ctx(t), asHolder(held), hand, &resourcelock.Dequeue{Tickets: []string{w.Ticket}}); err != nil {
		t.Fatalf("hand-over: %v", err)
	}
	if it := mustGetItem(t, s, a); it.HolderIdentity != w.Identity || it.HandedTo != w.Ticket || it.Released || len(it.Queue) != 0 {
		t.Fatalf("first member after the hand-over: %s queue %+v", formatStoreItem(it), it.Queue)
	}
	if it := mustGetItem(t, s, b); !it.Released || it.HandedTo != "" || it.HolderIdentity != "h" {
		t.Fatalf("second member after the hand-over: %s, want released by h", formatStoreItem(it))
	}

	// The waiter sees a hand-over to it, and confirms it.
	seen, err := waiter.Get(ctx(t))
	if err != nil || seen.HolderIdentity != w.Identity || seen.HandedTo != w.Ticket || seen.Released {
		t.Fatalf("the waiter's Get: %s, %v; want a hand-over to it", formatStoreItem(seen), err)
	}
	if waiter.Joinable(w) {
		t.Fatal("Joinable with the first member handed to the waiter, want false")
	}
	mine := heldBy(w.Identity, w.Lease, "")
	if _, err := waiter.Update(ctx(t), resourcelock.Precondition{RVN: seen.RVN}, mine); err != nil {
		t.Fatalf("confirmation: %v", err)
	}
	for _, k := range []resourcelock.Key{a, b} {
		if it := mustGetItem(t, s, k); it.RVN != mine.RVN || it.HandedTo != "" || it.Released {
			t.Fatalf("member %s after the confirmation: %s", k, formatStoreItem(it))
		}
	}

	// With the first member free, there is nothing to join.
	c, d := storeKey("setq-c"), storeKey("setq-d")
	mustCreate(t, s, d, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	other := mustSet(t, s, c, d)
	if _, err := other.Get(ctx(t)); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if other.Joinable(w) {
		t.Fatal("Joinable with the first member missing, want false")
	}
}
