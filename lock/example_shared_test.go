package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// This example reads a tenant's schema under shared holds, two readers at
// once, while a migration waits for them; then one reader upgrades to
// the writer without releasing.
func ExampleClient_AcquireShared() {
	ctx := context.Background()
	store := memorystore.New()
	planner, _ := lock.New(lock.Config{Store: store, Identity: "planner"})
	reporter, _ := lock.New(lock.Config{Store: store, Identity: "reporter"})
	migrator, _ := lock.New(lock.Config{Store: store, Identity: "migrator"})
	defer planner.Close(ctx)
	defer reporter.Close(ctx)
	defer migrator.Close(ctx)

	a, err := planner.AcquireShared(ctx, "schema/tenant-7", lock.WithUpgradeable())
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := reporter.AcquireShared(ctx, "schema/tenant-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	info, _ := migrator.Get(ctx, "schema/tenant-7")
	fmt.Println("readers:", len(info.Readers))
	_, err = migrator.TryAcquire(ctx, "schema/tenant-7")
	fmt.Println("the migration waits:", errors.Is(err, lock.ErrLocked))

	// The reporter is done; the planner decides to write after all.
	_ = b.Release(ctx)
	w, err := a.Upgrade(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("planner writes:", w.IsHeld(), "and reads no more:", errors.Is(a.Err(), lock.ErrNotHeld))
	_ = w.Release(ctx)
	// Output:
	// readers: 2
	// the migration waits: true
	// planner writes: true and reads no more: true
}
