package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// This example moves money between two accounts under one lock on both,
// taken all at once: a transfer the other way round, taking the same two
// keys in the opposite order, cannot deadlock with it.
func ExampleClient_AcquireSet() {
	ctx := context.Background()
	store := memorystore.New()
	teller, _ := lock.New(lock.Config{Store: store, Identity: "teller-1"})
	other, _ := lock.New(lock.Config{Store: store, Identity: "teller-2"})
	defer teller.Close(ctx)
	defer other.Close(ctx)

	l, err := teller.AcquireSet(ctx, []string{"account-7", "account-3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", l.Keys())

	// Another teller wants account-3 and account-9: it takes neither
	// while account-3 is held.
	_, err = other.TryAcquireSet(ctx, []string{"account-9", "account-3"})
	fmt.Println("teller-2:", errors.Is(err, lock.ErrLocked))
	_, err = other.TryAcquire(ctx, "account-9")
	fmt.Println("account-9 still free:", err == nil)

	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// holding [account-3 account-7]
	// teller-2: true
	// account-9 still free: true
}

// This example lets at most two workers call a payment provider at once.
func ExampleClient_AcquirePermit() {
	ctx := context.Background()
	store := memorystore.New()
	var workers []*lock.Client
	for _, name := range []string{"w1", "w2", "w3"} {
		c, _ := lock.New(lock.Config{Store: store, Identity: name})
		defer c.Close(ctx)
		workers = append(workers, c)
	}
	p1, _ := workers[0].TryAcquirePermit(ctx, "payment-provider", 2)
	p2, _ := workers[1].TryAcquirePermit(ctx, "payment-provider", 2)
	_, err := workers[2].TryAcquirePermit(ctx, "payment-provider", 2)
	fmt.Println("third worker:", errors.Is(err, lock.ErrLocked))

	if err := p1.Release(ctx); err != nil {
		fmt.Println(err)
	}
	p3, err := workers[2].TryAcquirePermit(ctx, "payment-provider", 2)
	fmt.Println("after a release:", err == nil, p3.Key() != p2.Key())
	// Output:
	// third worker: true
	// after a release: true true
}
