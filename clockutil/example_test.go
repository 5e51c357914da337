package clockutil_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// A test of a leader's callbacks on a fake clock: the leader renews while
// the store answers, and stops leading once it has not renewed for its
// renew deadline. Nothing sleeps; the test steps the clock only while the
// elector waits on it.
func ExampleFake_election() {
	ctx := context.Background()
	clk := clockutil.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memorystore.New()
	started, stopped := make(chan struct{}), make(chan struct{})
	e, _ := election.New(election.Config{Store: store, Name: "scheduler", Identity: "me", Clock: clk,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { close(started); <-ctx.Done() },
			OnStoppedLeading: func() { close(stopped) },
		}})
	ran := make(chan error)
	go func() { ran <- e.Run(ctx) }()
	<-started
	fmt.Println("leading:", e.IsLeader())

	// One renewal: wait until the renewals wait on the clock, then move it
	// to their next timer.
	_ = clk.WaitBlocked(ctx, "renewal")
	clk.StepToNext()
	_ = clk.WaitBlocked(ctx, "renewal") // renewed, and waiting again
	fmt.Println("renewed, valid for:", e.ValidUntil().Sub(clk.Now()))

	// The store becomes unreachable: ten seconds without a confirmed
	// renewal end the term.
	store.FailRequests(errors.New("network unreachable"))
	clk.Step(10 * time.Second)
	<-stopped
	fmt.Println("leading:", e.IsLeader(), "lost:", errors.Is(<-ran, dynalease.ErrLost))
	// Output:
	// leading: true
	// renewed, valid for: 10s
	// leading: false lost: true
}

// A lock whose heartbeats cannot reach the store is lost when its
// validity passes: its Done channel closes and Err says why.
func ExampleFake_lockLoss() {
	ctx := context.Background()
	clk := clockutil.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memorystore.New()
	c, _ := lock.New(lock.Config{Store: store, Identity: "me", Clock: clk, LeaseDuration: 20 * time.Second})
	defer c.Close(ctx)
	l, _ := c.Acquire(ctx, "customer-42")
	fmt.Println("held:", l.IsHeld())

	store.FailRequests(errors.New("network unreachable"))
	clk.Step(20 * time.Second) // past the lease minus its safety margin
	<-l.Done()
	var lost *dynalease.LostError
	fmt.Println("held:", l.IsHeld(), "expired:", errors.As(l.Err(), &lost) && lost.Reason == dynalease.Expired)
	// Output:
	// held: true
	// held: false expired: true
}
