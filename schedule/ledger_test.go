package schedule

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/clocktest"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

const (
	testLease   = 20 * time.Second
	testRefresh = time.Second
	jobKey      = DefaultKeyPrefix + "j"
)

// instances returns lock clients named by ids on one memory store and one
// fake clock, which steps by the refresh period each time an Acquire
// blocks on it (the only loop these tests leave waiting).
func instances(t *testing.T, ids ...string) (*memorystore.Store, *clocktesting.FakeClock, []*lock.Client) {
	t.Helper()
	mem := memorystore.New()
	fc := clocktesting.NewFakeClock(t0)
	clk := &clocktest.Clock{FakeClock: fc, OnBlock: func(loop string) {
		if loop == "acquire" {
			go fc.Step(2 * testRefresh) // past a jittered poll
		}
	}}
	var cs []*lock.Client
	for _, id := range ids {
		c, err := lock.New(lock.Config{Store: mem, Identity: id, Clock: clk, LeaseDuration: testLease,
			HeartbeatPeriod: 5 * time.Second, RefreshPeriod: testRefresh})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		cs = append(cs, c)
	}
	return mem, fc, cs
}

func start(t *testing.T, c *lock.Client, slot time.Time, attempt int) (*lock.Lock, error) {
	t.Helper()
	numbers, below := startWrites(slot, attempt)
	return c.Acquire(context.Background(), jobKey, ledgered.Take(numbers, below))
}

func mustStart(t *testing.T, c *lock.Client, slot time.Time, attempt int) *lock.Lock {
	t.Helper()
	l, err := start(t, c, slot, attempt)
	if err != nil {
		t.Fatalf("start of %v attempt %d: %v", slot, attempt, err)
	}
	return l
}

func wantRefused(t *testing.T, what string, l *lock.Lock, err error) {
	t.Helper()
	if !errors.Is(err, ledger.ErrNotBelow) {
		t.Fatalf("%s: %v (lock %v), want ledger.ErrNotBelow", what, err, l != nil)
	}
}

func TestTheLedgerStartsEachSlotOnce(t *testing.T) {
	_, _, cs := instances(t, "a", "b")
	a, b := cs[0], cs[1]
	s1, s2 := t0, t0.Add(time.Minute)

	la := mustStart(t, a, s1, 1)
	l, err := start(t, b, s1, 1)
	wantRefused(t, "a second start of the same attempt, while the first runs", l, err)

	if err := la.Release(context.Background(), ledgered.Close(doneWrites(s1, Succeeded))); err != nil {
		t.Fatal(err)
	}
	l, err = start(t, b, s1, 1)
	wantRefused(t, "a second start of the same attempt, after the first finished", l, err)
	l, err = start(t, b, s1, 2)
	wantRefused(t, "a retry of a finished slot", l, err)

	lb := mustStart(t, b, s2, 1)
	if err := lb.Release(context.Background(), ledgered.Close(doneWrites(s2, Failed))); err != nil {
		t.Fatal(err)
	}
	l, err = start(t, a, s1, 1)
	wantRefused(t, "an earlier slot after a later one started", l, err)

	info, err := a.Get(context.Background(), jobKey)
	if err != nil {
		t.Fatal(err)
	}
	if led := ledgerOf(ledgered.Numbers(info)); !led.slot.Equal(s2) || led.attempt != 1 || !led.done.Equal(s2) || led.outcome != Failed {
		t.Fatalf("ledger %+v", led)
	}
}

func TestARetryTakesOverARunThatDied(t *testing.T) {
	mem, fc, cs := instances(t, "a")
	a := cs[0]
	// A run of slot t0, attempt 1, whose holder died: its row stays held.
	rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
		Record:  resourcelock.Record{HolderIdentity: "dead", RVN: "r1", LeaseDuration: testLease},
		Numbers: map[string]int64{runAttribute: run(t0, 1)}})
	begin := fc.Now()
	l := mustStart(t, a, t0, 2)
	if waited := fc.Since(begin); waited < testLease {
		t.Fatalf("the retry took the dead run's lock after %v, before its lease %v", waited, testLease)
	}
	info, err := a.Get(context.Background(), jobKey)
	if err != nil {
		t.Fatal(err)
	}
	if led := ledgerOf(ledgered.Numbers(info)); led.attempt != 2 || !led.slot.Equal(t0) {
		t.Fatalf("ledger after the retry %+v", led)
	}
	_ = l.Release(context.Background(), ledgered.Close(doneWrites(t0, Succeeded)))
}
