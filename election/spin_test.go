package election_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// renewsBeforeEachRead is a store whose row, held by another leader, is
// renewed (a fresh RVN) just before each read: on a clock that does not
// move during a request, each read shows a new RVN at the instant the
// standby reads.
type renewsBeforeEachRead struct {
	rows.Store
	key   resourcelock.Key
	reads atomic.Int64
}

func (s *renewsBeforeEachRead) Get(ctx context.Context, k resourcelock.Key) (rows.Item, error) {
	if err := s.renew(ctx, k); err != nil {
		return rows.Item{}, err
	}
	return s.Store.Get(ctx, k)
}

// Stand is a standing candidate's read: the leader renews before it too.
func (s *renewsBeforeEachRead) Stand(ctx context.Context, k resourcelock.Key, c rows.Candidate, drop []string) (rows.Item, error) {
	if err := s.renew(ctx, k); err != nil {
		return rows.Item{}, err
	}
	return s.Store.Stand(ctx, k, c, drop)
}

func (s *renewsBeforeEachRead) renew(ctx context.Context, k resourcelock.Key) error {
	s.reads.Add(1)
	cur, err := s.Store.Get(ctx, k)
	if err != nil || cur.Released {
		return nil
	}
	rec := cur.Record
	rec.RVN = uuid.NewString()
	_, err = s.Store.Update(ctx, k, resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: cur.HolderIdentity}, rec, rows.WriteOptions{})
	return err
}

// A standby on the public fake clock over the memory store, whose leader
// renews just before each of its reads, waits on the clock between reads:
// it never spins at one instant, and reads a bounded number of times per
// RetryPeriod.
func TestAStandbyNeverSpinsOnAFakeClock(t *testing.T) {
	t.Run("reading", func(t *testing.T) { testStandbyNeverSpins(t, 0) })
	t.Run("standing", func(t *testing.T) { testStandbyNeverSpins(t, 1) })
}

func testStandbyNeverSpins(t *testing.T, priority int64) {
	const retry = 2 * time.Second
	clk := clockutil.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	key := resourcelock.Key{Partition: "spin"}
	mem := memorystore.New()
	store := &renewsBeforeEachRead{Store: rows.MustOpen(mem), key: key}
	rows.MustRaw(mem).PutItem(rows.Item{Key: key, Record: resourcelock.Record{HolderIdentity: "leader", RVN: "r0", LeaseDuration: 15 * time.Second}})
	e, err := election.New(election.Config{Store: rows.Sealed(store), Name: "spin", Identity: "standby", Clock: clk, Priority: priority,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: retry,
		Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context) { <-ctx.Done() }, OnStoppedLeading: func() {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-ran
	}()
	const periods = 30
	for clk.Since(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) < periods*retry {
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := clk.WaitBlocked(wctx, "election")
		wcancel()
		if err != nil {
			t.Fatalf("the standby never blocked on the clock at %v after %d reads: it spins", clk.Now(), store.reads.Load())
		}
		if _, ok := clk.StepToNext(); !ok {
			t.Fatal("the standby blocked with no timer set")
		}
	}
	t.Logf("%d reads in %d RetryPeriods", store.reads.Load(), periods)
	if n := store.reads.Load(); n > 10*periods {
		t.Fatalf("%d reads in %d RetryPeriods, want at most 10 a period", n, periods)
	}
	if e.IsLeader() {
		t.Fatal("the standby leads beside a live leader")
	}
}
