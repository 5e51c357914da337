package setlease

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// A set whose acquiring write's answer was lost learns its acquisition
// from the rows (a read: Get), its fencing token included, so that its
// holder's renewals carry that token on: a renewal never changes a token.
// Before, the renewal's answer carried none, and the lock's Token turned
// to 0 in the middle of a hold (make chaos: stale guarded writes).
func TestASetSettledByAReadKeepsItsTokenThroughRenewals(t *testing.T) {
	ctx := context.Background()
	store := memorystore.New()
	keys := []resourcelock.Key{{Partition: "a"}, {Partition: "b"}}
	rec := func(rvn string, released bool) resourcelock.Record {
		return resourcelock.Record{RVN: rvn, LeaseDuration: time.Minute, Released: released}
	}
	// An earlier acquisition, fenced, then released: the rows carry a
	// generation.
	s1, err := New(rows.MustOpen(store), keys, "me")
	if err != nil {
		t.Fatal(err)
	}
	r1 := uuid.NewString()
	if _, err := s1.Create(ctx, rec(r1, false)); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Fence(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Update(ctx, resourcelock.Precondition{RVN: r1, HolderIdentity: "me"}, rec(uuid.NewString(), true)); err != nil {
		t.Fatal(err)
	}
	// This acquisition's answer is lost: its Set learns nothing from the
	// write (here: it is sent, and its answer dropped), only from a read.
	s2, err := New(rows.MustOpen(store), keys, "me")
	if err != nil {
		t.Fatal(err)
	}
	r2 := uuid.NewString()
	s2.mu.Lock()
	s2.written, s2.acquiring = remember(s2.written, r2), remember(s2.acquiring, r2)
	s2.mu.Unlock()
	if err := rows.MustOpen(store).WriteMany(ctx, fill([]rows.Write{{Kind: rows.WriteCreate, Key: keys[0]}, {Kind: rows.WriteCreate, Key: keys[1]}}, mustPrepare(t, rec(r2, false), "me"), s2.opts.At(time.Now()), nil)); err != nil {
		t.Fatal(err)
	}
	read, err := s2.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	token := rows.Token(read.Record)
	if token == 0 || read.RVN != r2 {
		t.Fatalf("the read shows %+v (token %d), want this acquisition with a token", read.Record, token)
	}
	renewed, err := s2.Update(ctx, resourcelock.Precondition{RVN: r2, HolderIdentity: "me"}, rec(uuid.NewString(), false))
	if err != nil {
		t.Fatal(err)
	}
	if got := rows.Token(renewed.Record); got != token {
		t.Fatalf("the renewal's answer carries token %d, want the acquisition's %d", got, token)
	}
}

func mustPrepare(t *testing.T, rec resourcelock.Record, identity string) resourcelock.Record {
	t.Helper()
	rec, err := keylease.FillHolder(identity, rec, false)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
