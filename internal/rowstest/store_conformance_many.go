package rowstest

import (
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/setlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// runManyConformance runs the subtests of many rows: the store's, and
// those of the kernel's set of keys over it.
func runManyConformance(t *testing.T, newStore func(t *testing.T) rows.Store) {
	tests := []struct {
		name string
		run  func(*testing.T, rows.Store)
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

func testManyGet(t *testing.T, s rows.Store) {
	a, b, missing := storeKey("many-a"), storeKey("many-b"), storeKey("many-missing")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, "a's"), rows.WriteOptions{})
	ib := mustCreate(t, s, b, heldBy("y", 2*time.Second, ""), rows.WriteOptions{})
	found, err := s.GetMany(ctx(t), []resourcelock.Key{a, missing, b})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(found) != 2 {
		t.Fatalf("GetMany returned %d found, want 2 (the missing one absent)", len(found))
	}
	ia.Data = nil // GetMany reads records without their data
	wantStoreItem(t, "GetMany's a", found[a], ia)
	wantStoreItem(t, "GetMany's b", found[b], ib)
}

func testManyAllOrNothing(t *testing.T, s rows.Store) {
	held, free := storeKey("many-held"), storeKey("many-free")
	h := mustCreate(t, s, held, heldBy("x", time.Second, ""), rows.WriteOptions{})
	err := s.WriteMany(ctx(t), []rows.Write{
		{Key: free, Kind: rows.WriteCreate, Record: heldBy("me", time.Second, "")},
		{Key: held, Kind: rows.WriteCreate, Record: heldBy("me", time.Second, "")},
	})
	wantConflict(t, "WriteMany over a held row", err)
	wantNoItem(t, "the free row, after the WriteMany refused", s, free)
	wantStoredItem(t, "the held row, after the WriteMany refused", s, held, h)

	// The same with the condition on the other row.
	err = s.WriteMany(ctx(t), []rows.Write{
		{Key: held, Kind: rows.WriteUpdate, Expect: asHolder(h), Record: heldBy("x", time.Second, "")},
		{Key: free, Kind: rows.WriteUpdate, Expect: resourcelock.Precondition{RVN: "nope"}, Record: heldBy("x", time.Second, "")},
	})
	wantConflict(t, "WriteMany updating a missing row", err)
	wantStoredItem(t, "the held row, after the second WriteMany refused", s, held, h)
}

func testManyKinds(t *testing.T, s rows.Store) {
	c, u, r := storeKey("many-create"), storeKey("many-update"), storeKey("many-remove")
	iu := mustCreate(t, s, u, heldBy("me", time.Second, "kept"), rows.WriteOptions{})
	ir := mustCreate(t, s, r, heldBy("me", time.Second, ""), rows.WriteOptions{})
	rc, ru := heldBy("me", 3*time.Second, ""), heldBy("me", 3*time.Second, "")
	if err := s.WriteMany(ctx(t), []rows.Write{
		{Key: c, Kind: rows.WriteCreate, Record: rc},
		{Key: u, Kind: rows.WriteUpdate, Expect: asHolder(iu), Record: ru, Options: rows.WriteOptions{KeepData: true}},
		{Key: r, Kind: rows.WriteRemove, Expect: asHolder(ir)},
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
func testManyQueues(t *testing.T, s rows.Store) {
	a, b := storeKey("many-queue-a"), storeKey("many-queue-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), rows.WriteOptions{})
	ib := mustCreate(t, s, b, heldBy("x", time.Second, ""), rows.WriteOptions{})
	w1 := rows.Waiter{Ticket: "t1", Identity: "w1", Lease: time.Second}
	w2 := rows.Waiter{Ticket: "t2", Identity: "w2", Lease: 2 * time.Second}
	for _, w := range []rows.Waiter{w1, w2} {
		if _, err := s.Join(ctx(t), a, w); err != nil {
			t.Fatalf("Join: %v", err)
		}
	}
	bw := rows.Waiter{Ticket: "tb", Identity: "wb", Lease: time.Second}
	if _, err := s.Join(ctx(t), b, bw); err != nil {
		t.Fatalf("Join: %v", err)
	}
	// Only the first key's queue is read.
	found, err := s.GetMany(ctx(t), []resourcelock.Key{a, b})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if q := found[a].Queue; len(q) != 2 || q[0] != w1 || q[1] != w2 {
		t.Fatalf("GetMany's queue of a, named first: %+v, want w1 and w2", q)
	}
	if len(found[b].Queue) != 0 {
		t.Fatalf("GetMany's queue of b, named second: %+v, want none read", found[b].Queue)
	}
	if found, err = s.GetMany(ctx(t), []resourcelock.Key{b, a}); err != nil || len(found[a].Queue) != 0 || len(found[b].Queue) != 1 || found[b].Queue[0] != bw {
		t.Fatalf("GetMany naming b first: a's queue %+v, b's %+v, %v; want b's alone", found[a].Queue, found[b].Queue, err)
	}
	ib = mustGetItem(t, s, b)

	// A hand-over of a to w1 conditioned on a queue starting with w2 is
	// refused, and b is left as it was.
	hand := heldBy("w1", w1.Lease, "")
	hand.HandedTo = w1.Ticket
	release := releasedBy("x")
	writes := func(d *rows.Dequeue) []rows.Write {
		return []rows.Write{
			{Key: a, Kind: rows.WriteUpdate, Expect: asHolder(ia), Record: hand, Options: rows.WriteOptions{Dequeue: d}},
			{Key: b, Kind: rows.WriteUpdate, Expect: asHolder(ib), Record: release},
		}
	}
	wantConflict(t, "WriteMany dequeuing the wrong ticket", s.WriteMany(ctx(t), writes(&rows.Dequeue{Tickets: []string{"t2"}})))
	wantConflict(t, "WriteMany expecting an empty queue", s.WriteMany(ctx(t), writes(&rows.Dequeue{All: true})))
	wantStoredItem(t, "b, after the refused WriteMany", s, b, ib)
	if err := s.WriteMany(ctx(t), writes(&rows.Dequeue{Tickets: []string{"t1"}})); err != nil {
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

func testManyInvalid(t *testing.T, s rows.Store) {
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
		writes := make([]rows.Write, len(keys))
		for i, k := range keys {
			writes[i] = rows.Write{Key: k, Kind: rows.WriteCreate, Record: heldBy("me", time.Second, "")}
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

func mustSet(t *testing.T, s rows.Store, keys ...resourcelock.Key) *setlease.Set {
	t.Helper()
	return mustSetAs(t, s, "me", keys...)
}

// mustSetAs returns the set of keys written as identity.
func mustSetAs(t *testing.T, s rows.Store, identity string, keys ...resourcelock.Key) *setlease.Set {
	t.Helper()
	set, err := setlease.New(s, keys, identity)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return set
}

func testSetHeldWhole(t *testing.T, s rows.Store) {
	a, b := storeKey("set-a"), storeKey("set-b")
	set := mustSet(t, s, b, a, b) // sorted, without the duplicate
	if len(set.Keys()) != 2 {
		t.Fatalf("Keys: %v, want two", set.Keys())
	}
	if _, err := set.Get(ctx(t)); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get of a set of missing found: %v, want ErrNotFound", err)
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

func testSetTakeoverMixed(t *testing.T, s rows.Store) {
	held, released, missing := storeKey("set-held"), storeKey("set-released"), storeKey("set-missing")
	h := mustCreate(t, s, held, heldBy("java", 3*time.Second, ""), rows.WriteOptions{})
	r := mustCreate(t, s, released, heldBy("x", time.Second, ""), rows.WriteOptions{})
	mustUpdate(t, s, released, asHolder(r), releasedBy("x"), rows.WriteOptions{})
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

func testSetTakeoverMoved(t *testing.T, s rows.Store) {
	a, b := storeKey("set-moved-a"), storeKey("set-moved-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), rows.WriteOptions{})
	set := mustSet(t, s, a, b)
	seen, err := set.Get(ctx(t))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	// x renews a: the composite seen is out of date.
	mustUpdate(t, s, a, asHolder(ia), heldBy("x", time.Second, ""), rows.WriteOptions{})
	_, err = set.Update(ctx(t), asTakeover(seen), heldBy("me", time.Second, ""))
	wantConflict(t, "a takeover after a member was renewed", err)
	wantNoItem(t, "the missing member, after the refused takeover", s, b)
	// b created meanwhile by another: the composite that saw it missing is out of date too.
	ia = mustGetItem(t, s, a)
	mustUpdate(t, s, a, asHolder(ia), releasedBy("x"), rows.WriteOptions{})
	seen, _ = set.Get(ctx(t))
	mustCreate(t, s, b, heldBy("y", time.Second, ""), rows.WriteOptions{})
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
func testSetFence(t *testing.T, s rows.Store) {
	a, b := storeKey("fence-a"), storeKey("fence-b")
	ia := mustCreate(t, s, a, heldBy("x", time.Second, ""), rows.WriteOptions{})
	var err error
	for range 2 {
		if ia, err = s.Fence(ctx(t), a, "x", ia.AcquisitionID); err != nil {
			t.Fatalf("Fence of a: %v", err)
		}
	}
	before := rows.Token(ia.Record)
	mustUpdate(t, s, a, asHolder(ia), releasedBy("x"), rows.WriteOptions{})

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
	token := rows.Token(fenced.Record)
	if token <= before {
		t.Fatalf("the set's token %#x is not above member a's earlier token %#x", token, before)
	}
	for _, k := range []resourcelock.Key{a, b} {
		if it := mustGetItem(t, s, k); rows.Token(it.Record) != token {
			t.Fatalf("member %s carries token %#x, want the set's %#x", k, rows.Token(it.Record), token)
		}
	}
	// A renewal keeps the token.
	renewed, err := set.Update(ctx(t), resourcelock.Precondition{RVN: r.RVN, HolderIdentity: "me"}, heldBy("me", time.Second, ""))
	if err != nil || rows.Token(renewed.Record) != token {
		t.Fatalf("renewal: token %#x, %v; want the set's %#x kept", rows.Token(renewed.Record), err, token)
	}
	read, err := set.Get(ctx(t))
	if err != nil || rows.Token(read.Record) != token {
		t.Fatalf("Get: token %#x, %v; want %#x", rows.Token(read.Record), err, token)
	}
	if _, err := set.Update(ctx(t), asHolder(read), releasedBy("me")); err != nil {
		t.Fatalf("release: %v", err)
	}
	// A later acquisition of b alone, fenced, gets a higher token.
	ib, err := s.Create(ctx(t), b, heldBy("y", time.Second, ""), rows.WriteOptions{})
	if err != nil {
		t.Fatalf("Create of b: %v", err)
	}
	if ib, err = s.Fence(ctx(t), b, "y", ib.AcquisitionID); err != nil {
		t.Fatalf("Fence of b: %v", err)
	}
	if rows.Token(ib.Record) <= token {
		t.Fatalf("b's later token %#x is not above the set's %#x", rows.Token(ib.Record), token)
	}
}

// A set's waiter queues on its first member; the holder's release hands
// that member to it and frees the others in one write; the waiter's fold
// is then a hand-over to it, which its takeover confirms. A waiter finds
// nothing to join while the first member is free.
func testSetQueue(t *testing.T, s rows.Store) {
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
	w := rows.Waiter{Ticket: "tw", Identity: "w", Lease: 3 * time.Second}
	joined, err := waiter.Join(ctx(t), w)
	if err != nil || record.Place(joined, w.Ticket) != 0 || joined.HolderIdentity != "h" {
		t.Fatalf("Join: %s queue %+v, %v; want held by h with the waiter first in the queue", formatStoreItem(joined), joined.Queue, err)
	}

	// The release hands the first member over, conditioned on the queue.
	hand := releasedBy("h")
	hand.Released, hand.HolderIdentity, hand.LeaseDuration, hand.HandedTo = false, w.Identity, w.Lease, w.Ticket
	if _, err := holder.UpdateDequeue(ctx(t), asHolder(held), hand, &rows.Dequeue{All: true}); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("a release expecting an empty queue: %v, want ErrConflict", err)
	}
	if _, err := holder.UpdateDequeue(ctx(t), asHolder(held), hand, &rows.Dequeue{Tickets: []string{w.Ticket}}); err != nil {
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
	mustCreate(t, s, d, heldBy("x", time.Second, ""), rows.WriteOptions{})
	other := mustSet(t, s, c, d)
	if _, err := other.Get(ctx(t)); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if other.Joinable(w) {
		t.Fatal("Joinable with the first member missing, want false")
	}
}
