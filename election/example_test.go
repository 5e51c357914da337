package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// This example elects a leader over the in-memory store, as a unit test of
// code built on election would; with dynamodbstore.New's store in place of
// memorystore.New's the code is the same.
func Example_memory() {
	store := memorystore.New()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := election.New(election.Config{
		Store:         store,
		Name:          "scheduler",
		Identity:      "replica-a",
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
	rec, err := rows.MustOpen(store).Get(context.Background(), resourcelock.Key{Partition: "scheduler"})
	fmt.Println("released:", rec.Released, err)
	// Output:
	// started leading
	// stopped leading
	// Run: context canceled
	// released: true <nil>
}
