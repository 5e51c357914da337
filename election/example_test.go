package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/resourcelock"
)

// This example elects a leader over the in-memory store, as a unit test of
// code built on election would; with dynamodbstore.NewLease in place of
// the store the code is the same.
func Example_memory() {
	store := resourcelock.NewMemoryStore()
	lease, err := resourcelock.NewLease(store, resourcelock.Key{Partition: "scheduler"}, "replica-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := election.New(election.Config{
		Lease:         lease,
		LeaseDuration: 300 * time.Millisecond,
		RenewDeadline: 200 * time.Millisecond,
		RetryPeriod:   50 * time.Millisecond,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				fmt.Println("started leading")
				cancel() // the work is done; a real leader works until ctx ends
				<-ctx.Done()
			},
			OnStoppedLeading: func() { fmt.Println("stopped leading") },
		},
		ReleaseOnCancel: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = e.Run(ctx)
	fmt.Println("Run:", err)
	rec, err := lease.Get(context.Background())
	fmt.Println("released:", rec.Released, err)
	// Output:
	// started leading
	// stopped leading
	// Run: context canceled
	// released: true <nil>
}
