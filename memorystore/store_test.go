package memorystore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rowstest"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// The memory store keeps the contract as DynamoDB's store does.
func TestMemoryStoreConformance(t *testing.T) {
	newStore := func(*testing.T) rows.Store { return rows.MustOpen(memorystore.New()) }
	rowstest.RunStoreConformance(t, rowstest.StoreSuite{New: newStore, NewWithSortKey: newStore})
}

// While FailRequests is set every request fails with its error and
// changes nothing, a scan of an empty store included; once cleared, they
// are served again.
func TestFailRequestsFailsEveryRequestUntilCleared(t *testing.T) {
	ctx := context.Background()
	mem := memorystore.New()
	r := rows.MustOpen(mem)
	key := resourcelock.Key{Partition: "k"}
	rec := resourcelock.Record{HolderIdentity: "a", RVN: "r1", LeaseDuration: time.Second}
	cut := errors.New("network unreachable")
	mem.FailRequests(cut)
	if err := r.Scan(ctx, "", func(rows.Item, error) error { return nil }); !errors.Is(err, cut) {
		t.Fatalf("Scan of an empty store while failing: %v, want %v", err, cut)
	}
	if _, err := r.Create(ctx, key, rec, rows.WriteOptions{}); !errors.Is(err, cut) {
		t.Fatalf("Create while failing: %v, want %v", err, cut)
	}
	if _, err := r.Get(ctx, key); !errors.Is(err, cut) {
		t.Fatalf("Get while failing: %v, want %v", err, cut)
	}
	if _, ok := mem.Record("k"); ok {
		t.Fatal("a Create refused by FailRequests wrote the record")
	}
	mem.FailRequests(nil)
	if _, err := r.Create(ctx, key, rec, rows.WriteOptions{}); err != nil {
		t.Fatalf("Create once cleared: %v", err)
	}
	if _, err := r.Get(ctx, key); err != nil {
		t.Fatalf("Get once cleared: %v", err)
	}
}
