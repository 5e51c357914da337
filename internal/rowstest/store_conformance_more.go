package rowstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Fence gives a row held under an acquisition a generation, and tokens of
// a key grow with every acquisition, across a deletion of the row.
func testStoreFence(t *testing.T, s rows.Store) {
	if !s.CanFence() {
		_, err := s.Fence(ctx(t), storeKey("fence"), "a", "x")
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Fatalf("Fence on a store that cannot fence = %v, want dynalease.ErrInvalid", err)
		}
		return
	}
	k := storeKey("fence")
	first := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	if !rows.NeedsFence(first.Record) {
		t.Fatalf("a new row needs no fence: %s", formatStoreItem(first))
	}
	fenced, err := s.Fence(ctx(t), k, "a", first.AcquisitionID)
	if err != nil {
		t.Fatalf("Fence of a row held by this acquisition: %v", err)
	}
	tok1 := rows.Token(fenced.Record)
	if tok1 <= 0 || fenced.RVN != first.RVN || fenced.HolderIdentity != "a" {
		t.Fatalf("fenced row %s, token %d", formatStoreItem(fenced), tok1)
	}
	if got := mustGetItem(t, s, k); rows.Token(got.Record) != tok1 {
		t.Fatalf("stored token %d, want %d", rows.Token(got.Record), tok1)
	}
	// The next acquisition counts on from the fenced row: no new
	// generation, a larger token.
	second := mustUpdate(t, s, k, asTakeover(fenced), heldBy("b", time.Second, ""), rows.WriteOptions{})
	if rows.NeedsFence(second.Record) || rows.Token(second.Record) <= tok1 {
		t.Fatalf("takeover of a fenced row: token %d, want above %d without a new fence", rows.Token(second.Record), tok1)
	}
	// A row deleted and created again starts a new counter; its fence gives
	// a generation above every earlier one.
	if err := s.Remove(ctx(t), k, asHolder(second)); err != nil {
		t.Fatal(err)
	}
	third := mustCreate(t, s, k, heldBy("c", time.Second, ""), rows.WriteOptions{})
	refenced, err := s.Fence(ctx(t), k, "c", third.AcquisitionID)
	if err != nil {
		t.Fatalf("Fence after the row was deleted: %v", err)
	}
	if rows.Token(refenced.Record) <= rows.Token(second.Record) {
		t.Fatalf("token after a deletion %d, want above %d", rows.Token(refenced.Record), rows.Token(second.Record))
	}
}

// Fence is conditioned on the holder and its acquisition: another
// acquisition, another holder or a missing row get ErrConflict.
func testStoreFenceConflict(t *testing.T, s rows.Store) {
	if !s.CanFence() {
		t.Skip("the store cannot fence")
	}
	k := storeKey("fence-conflict")
	if _, err := s.Fence(ctx(t), k, "a", "none"); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Fence of a missing row = %v, want ErrConflict", err)
	}
	it := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	if _, err := s.Fence(ctx(t), k, "b", it.AcquisitionID); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Fence by another holder = %v, want ErrConflict", err)
	}
	if _, err := s.Fence(ctx(t), k, "a", "another-acquisition"); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Fence of another acquisition = %v, want ErrConflict", err)
	}
	if got := mustGetItem(t, s, k); !rows.NeedsFence(got.Record) {
		t.Fatalf("a refused Fence changed the row: %s", formatStoreItem(got))
	}
}

// A request under a cancelled context returns an error matching
// context.Canceled and writes nothing.
func testStoreCancelled(t *testing.T, s rows.Store) {
	k := storeKey("cancelled")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(done, k, heldBy("a", time.Second, ""), rows.WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create under a cancelled context = %v, want context.Canceled", err)
	}
	wantNoItem(t, "after a cancelled Create", s, k)
	it := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	if _, err := s.Update(done, k, asHolder(it), heldBy("a", time.Second, "x"), rows.WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update under a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.Remove(done, k, asHolder(it)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Remove under a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.Get(done, k); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get under a cancelled context = %v, want context.Canceled", err)
	}
	wantStoredItem(t, "after cancelled writes", s, k, it)
}

// Keys that differ only in their sort key value are leases of their own,
// and Scan of a partition returns each.
func testStoreSortKeys(t *testing.T, s rows.Store) {
	a := resourcelock.Key{Partition: "p", Sort: "a"}
	b := resourcelock.Key{Partition: "p", Sort: "b"}
	other := resourcelock.Key{Partition: "q", Sort: "a"}
	ia := mustCreate(t, s, a, heldBy("x", time.Second, "a"), rows.WriteOptions{})
	ib := mustCreate(t, s, b, heldBy("y", time.Second, "b"), rows.WriteOptions{})
	mustCreate(t, s, other, heldBy("z", time.Second, "q"), rows.WriteOptions{})
	if _, err := s.Create(ctx(t), a, heldBy("w", time.Second, ""), rows.WriteOptions{}); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Create over a held row with a sort key = %v, want ErrConflict", err)
	}
	mustUpdate(t, s, b, asHolder(ib), releasedBy("y"), rows.WriteOptions{})
	wantStoredItem(t, "the sibling row", s, a, ia)
	got := scanStore(t, s, "p")
	if len(got) != 2 || got[a].RVN != ia.RVN || !got[b].Released {
		t.Fatalf("Scan of partition p = %v", got)
	}
}

// Errors that waiting cannot fix are classified as such.
func testStorePermanent(t *testing.T, s rows.Store) {
	k := storeKey("unreachable")
	_, getErr := s.Get(ctx(t), k)
	_, createErr := s.Create(ctx(t), k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	for what, err := range map[string]error{"Get": getErr, "Create": createErr} {
		if !resourcelock.Permanent(err) {
			t.Errorf("%s on an unreachable store = %v: not permanent", what, err)
		}
	}
}
