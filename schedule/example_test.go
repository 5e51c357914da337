package schedule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/schedule"
)

// Every instance of a fleet runs the same jobs on its own lock client; each
// slot runs on one of them. Here two instances share an in-memory store
// (use dynamodbstore.New for a DynamoDB table) and run a job due every
// second until the first slot has run.
func Example() {
	store := memorystore.New()
	every, err := schedule.Every(time.Second)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan schedule.Run, 2)
	done := make(chan struct{})
	for _, instance := range []string{"host-a", "host-b"} {
		locks, err := lock.New(lock.Config{Store: store, Identity: instance})
		if err != nil {
			panic(err)
		}
		defer locks.Close(context.Background())
		s, err := schedule.New(schedule.Config{Locks: locks}, schedule.Job{
			Name:     "report",
			Schedule: every,
			Run: func(ctx context.Context, r schedule.Run) error {
				ran <- r
				return nil
			},
		})
		if err != nil {
			panic(err)
		}
		go func() {
			_ = s.Run(ctx)
			done <- struct{}{}
		}()
	}
	r := <-ran
	cancel()
	<-done
	<-done
	fmt.Println(r.Job, "ran its slot once, attempt", r.Attempt)
	// Output: report ran its slot once, attempt 1
}
