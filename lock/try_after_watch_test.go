package lock

import (
	"context"
	"errors"
	"testing"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// freeing is how a watched holder gives its row up between two tries.
var freeing = []struct {
	name string
	free func(f *fixture, key string)
}{
	{"released with a new RVN", func(f *fixture, key string) {
		// This library's release: the row kept, marked released, with a
		// fresh RVN.
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: key},
			Record: resourcelock.Record{HolderIdentity: "other", RVN: "r-released", LeaseDuration: lease, Released: true}})
	}},
	{"released with its RVN kept", func(f *fixture, key string) {
		// The AWS Java client's release, and a forced one. (Coverage, not
		// a regression case: the takeover conditioned on r1 lands.)
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: key},
			Record: resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: lease, Released: true}})
	}},
	{"deleted", func(f *fixture, key string) { f.mem.Delete(key) }},
}

func TestTryAcquireTakesARowFreedAfterAWatchOlderThanTheLease(t *testing.T) {
	for _, fr := range freeing {
		t.Run(fr.name, func(t *testing.T) {
			f := newFixture(t)
			f.putForeign("k", "other", "r1", lease)
			if _, err := f.c.TryAcquire(context.Background(), "k"); err == nil {
				t.Fatal("TryAcquire took a held lock")
			}
			fr.free(f, "k")
			// The watch of r1 is older than its holder's lease: the next
			// try takes the expired branch, whose takeover is refused.
			f.fc.Step(lease)
			l, err := f.c.TryAcquire(context.Background(), "k")
			if err != nil {
				t.Fatalf("TryAcquire of a row freed since it was watched: %v", err)
			}
			f.waitIdle("heartbeat")
			if it := f.item("k"); it.HolderIdentity != ownerName || it.Released || it.RVN != l.RVN() {
				t.Fatalf("row after the try: held by %q, released %t, RVN %s; want ours (%s)", it.HolderIdentity, it.Released, it.RVN, l.RVN())
			}
		})
	}
}

func TestTryAcquireSetTakesRowsFreedAfterAWatchOlderThanTheLease(t *testing.T) {
	for _, fr := range freeing {
		t.Run(fr.name, func(t *testing.T) {
			f := newFixture(t)
			f.putForeign("b", "other", "r1", lease)
			if _, err := f.c.TryAcquireSet(context.Background(), []string{"a", "b"}); err == nil {
				t.Fatal("TryAcquireSet took a set with a held member")
			}
			f.wantMissing("a")
			fr.free(f, "b")
			f.fc.Step(lease)
			l, err := f.c.TryAcquireSet(context.Background(), []string{"a", "b"})
			if err != nil {
				t.Fatalf("TryAcquireSet of members freed since they were watched: %v", err)
			}
			f.waitIdle("heartbeat")
			if rvn := f.wantMembers(false, "a", "b"); rvn != l.RVN() {
				t.Fatalf("members carry RVN %s, the lock %s", rvn, l.RVN())
			}
		})
	}
}

// The same refused takeover never takes a row that is not free: a deleted
// row with WithAcquireOnlyIfExists is an error and stays missing; a row
// released with a waiter in its queue is the queue's.
func TestTryAcquireAfterAWatchOlderThanTheLeaseLeavesRowsThatAreNotFree(t *testing.T) {
	t.Run("deleted, only if it exists", func(t *testing.T) {
		f := newFixture(t)
		f.putForeign("k", "other", "r1", lease)
		if _, err := f.c.TryAcquire(context.Background(), "k", WithAcquireOnlyIfExists()); err == nil {
			t.Fatal("TryAcquire took a held lock")
		}
		f.mem.Delete("k")
		f.fc.Step(lease)
		if _, err := f.c.TryAcquire(context.Background(), "k", WithAcquireOnlyIfExists()); !errors.Is(err, resourcelock.ErrNotFound) {
			t.Fatalf("TryAcquire of a deleted row with WithAcquireOnlyIfExists = %v, want ErrNotFound", err)
		}
		if it, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: "k"}); ok {
			t.Fatalf("the row was created: %+v", it.Record)
		}
	})
	t.Run("released with a queue", func(t *testing.T) {
		f := newFixture(t)
		f.putForeign("k", "other", "r1", lease)
		if _, err := f.c.TryAcquire(context.Background(), "k"); err == nil {
			t.Fatal("TryAcquire took a held lock")
		}
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"},
			Record: resourcelock.Record{HolderIdentity: "other", RVN: "r2", LeaseDuration: lease, Released: true},
			Queue:  []rows.Waiter{{Ticket: "t1", Identity: "waiter", Lease: lease}}})
		f.fc.Step(lease)
		if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
			t.Fatalf("TryAcquire of a row released to its queue = %v, want ErrLocked", err)
		}
		if it := f.item("k"); it.RVN != "r2" || !it.Released {
			t.Fatalf("row %+v, want it left as released to its queue", it.Record)
		}
	})
}
