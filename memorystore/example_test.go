package memorystore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// This example shows the contract on a memory store (the store for unit
// tests; dynamodbstore has the one on a DynamoDB table): every write names
// the RVN it expects, and a write whose expectation fails changes nothing.
func Example() {
	ctx := context.Background()
	store := memorystore.New()
	key := resourcelock.Key{Partition: "scheduler"}
	held := func(holder, rvn string) resourcelock.Record {
		return resourcelock.Record{HolderIdentity: holder, RVN: rvn, LeaseDuration: 15 * time.Second}
	}

	it, err := rows.MustOpen(store).Create(ctx, key, held("host-a", "rvn-1"), rows.WriteOptions{})
	fmt.Println(it.HolderIdentity, it.RVN, err)

	_, err = rows.MustOpen(store).Create(ctx, key, held("host-b", "rvn-2"), rows.WriteOptions{})
	fmt.Println(errors.Is(err, resourcelock.ErrConflict))

	// A takeover conditioned on the RVN host-b saw, after watching it
	// unchanged for the holder's lease.
	it, err = rows.MustOpen(store).Update(ctx, key, resourcelock.Precondition{RVN: "rvn-1"}, held("host-b", "rvn-3"), rows.WriteOptions{})
	fmt.Println(it.HolderIdentity, it.RVN, it.Acquisitions, err)
	// Output:
	// host-a rvn-1 <nil>
	// true
	// host-b rvn-3 2 <nil>
}
