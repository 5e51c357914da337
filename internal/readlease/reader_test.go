package readlease

import (
	"context"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// A reader already in the queue does not join it again: the kernel, which
// saw a row of readers it may join folded free (without its queue), asks
// again; a second entry would hold the reader's place twice, and the
// kernel stops joining after a few. (Found by the simulator.)
func TestAReaderInTheQueueDoesNotJoinTwice(t *testing.T) {
	mem := memorystore.New()
	key := resourcelock.Key{Partition: "k"}
	rows.MustRaw(mem).PutItem(rows.Item{Key: key, Record: resourcelock.Record{HolderIdentity: "w", RVN: "r1", LeaseDuration: time.Second}})
	r, err := New(rows.MustOpen(mem), key, "me", timing.Real())
	if err != nil {
		t.Fatal(err)
	}
	w := rows.Waiter{Ticket: "t1", Identity: "me", Lease: time.Second}
	if _, err := r.Join(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Join(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if it, _ := rows.MustRaw(mem).Item(key); len(it.Queue) != 1 {
		t.Fatalf("queue after a second join of one wait: %+v, want one entry", it.Queue)
	}
}
