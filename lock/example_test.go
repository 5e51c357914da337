package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// This example locks one customer while changing it. With lock.New on a
// DynamoDB client in place of the in-memory store, the code is the same.
func Example() {
	ctx := context.Background()
	store := memorystore.New()
	workerA, _ := lock.New(lock.Config{Store: store, Identity: "worker-a"})
	workerB, _ := lock.New(lock.Config{Store: store, Identity: "worker-b"})
	defer workerA.Close(ctx)
	defer workerB.Close(ctx)

	l, err := workerA.Acquire(ctx, "customer-42", lock.WithData([]byte("rebalancing")))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work that must stop when the lock is lost runs under its context.
	work, cancel := l.Context(ctx)
	_ = work
	cancel()

	_, err = workerB.TryAcquire(ctx, "customer-42")
	fmt.Println("worker-b:", errors.Is(err, lock.ErrLocked))

	info, _ := workerB.Get(ctx, "customer-42")
	fmt.Println("held by", info.HolderIdentity, "doing", string(info.Data))

	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	l2, err := workerB.TryAcquire(ctx, "customer-42")
	fmt.Println("worker-b after release:", err == nil && l2.IsHeld())
	// Output:
	// worker-b: true
	// held by worker-a doing rebalancing
	// worker-b after release: true
}
