package resourcelock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/resourcelock"
)

// This example takes a lease in a MemoryStore (the store for unit tests;
// dynamodbstore has the one on a DynamoDB table) and shows the contract:
// every write names the RVN it expects, and a write whose expectation
// fails changes nothing.
func ExampleNewLease() {
	ctx := context.Background()
	store := resourcelock.NewMemoryStore()
	a, _ := resourcelock.NewLease(store, resourcelock.Key{Partition: "scheduler"}, "host-a")
	b, _ := resourcelock.NewLease(store, resourcelock.Key{Partition: "scheduler"}, "host-b")

	rec, err := a.Create(ctx, resourcelock.Record{RVN: "rvn-1", LeaseDuration: 15 * time.Second})
	fmt.Println(rec.HolderIdentity, rec.RVN, err)

	_, err = b.Create(ctx, resourcelock.Record{RVN: "rvn-2", LeaseDuration: 15 * time.Second})
	fmt.Println(errors.Is(err, resourcelock.ErrConflict))

	// A takeover conditioned on the RVN b saw, after watching it unchanged
	// for the holder's lease.
	rec, err = b.Update(ctx, resourcelock.Precondition{RVN: "rvn-1"}, resourcelock.Record{RVN: "rvn-3", LeaseDuration: 15 * time.Second})
	fmt.Println(rec.HolderIdentity, rec.RVN, rec.Acquisitions, err)
	// Output:
	// host-a rvn-1 <nil>
	// true
	// host-b rvn-3 2 <nil>
}
