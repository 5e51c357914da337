package gocronlease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/gocronlease"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

func clients(t *testing.T, ids ...string) []*lock.Client {
	t.Helper()
	store := memorystore.New()
	var out []*lock.Client
	for _, id := range ids {
		c, err := lock.New(lock.Config{Store: store, Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		out = append(out, c)
	}
	return out
}

func TestLockerHoldsTheJobsLockWhileARunGoesOn(t *testing.T) {
	cs := clients(t, "a", "b")
	a, b := gocronlease.Locker{Locks: cs[0], Prefix: "gocron/"}, gocronlease.Locker{Locks: cs[1], Prefix: "gocron/"}
	ctx := context.Background()
	held, err := a.Lock(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "report"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("a second Lock while held = %v, want lock.ErrLocked", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := b.Lock(ctx, "report")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	_ = again.Unlock(ctx)
}

// After the instance that won a run finished it and is gone, the next run
// is taken by a survivor, although that survivor last saw the lock held,
// by the winner's run, more than a lease before.
func TestLockerTakesTheNextRunAfterTheWinnerIsGone(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	store := memorystore.New()
	var lockers []gocronlease.Locker
	for _, id := range []string{"winner", "survivor"} {
		c, err := lock.New(lock.Config{Store: store, Identity: id, Clock: fc, ManualHeartbeats: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		lockers = append(lockers, gocronlease.Locker{Locks: c, Prefix: "gocron/"})
	}
	winner, survivor := lockers[0], lockers[1]
	ctx := context.Background()
	run, err := winner.Lock(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := survivor.Lock(ctx, "report"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("Lock while the winner runs = %v, want lock.ErrLocked", err)
	}
	if err := run.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = winner.Locks.Close(ctx)
	fc.Step(lock.DefaultLeaseDuration + time.Minute) // the next run
	next, err := survivor.Lock(ctx, "report")
	if err != nil {
		t.Fatalf("Lock of the next run, the winner gone = %v", err)
	}
	_ = next.Unlock(ctx)
}

type leader struct{ on atomic.Bool }

func (l *leader) IsLeader() bool { return l.on.Load() }

func TestElectorFollowsTheLeader(t *testing.T) {
	var l leader
	e := gocronlease.Elector{Leader: &l}
	if err := e.IsLeader(context.Background()); !errors.Is(err, gocronlease.ErrNotLeader) {
		t.Fatalf("IsLeader while not leading = %v", err)
	}
	l.on.Store(true)
	if err := e.IsLeader(context.Background()); err != nil {
		t.Fatalf("IsLeader while leading = %v", err)
	}
}

// A gocron scheduler with the Locker runs its job under the lock.
func TestGocronRunsUnderTheLocker(t *testing.T) {
	cs := clients(t, "a")
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(gocronlease.Locker{Locks: cs[0], Prefix: "gocron/"}))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan bool, 10)
	if _, err := s.NewJob(gocron.DurationJob(50*time.Millisecond), gocron.NewTask(func() {
		info, err := cs[0].Get(context.Background(), "gocron/tick")
		ran <- err == nil && !info.Released
	}), gocron.WithName("tick")); err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown() }()
	select {
	case held := <-ran:
		if !held {
			t.Fatal("the job ran without holding its lock")
		}
	case <-time.After(time.Minute):
		t.Fatal("the job never ran")
	}
}
