package election

import (
	"context"
	"sync"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// A standing candidate's polls write its entry at most once per half
// RetryPeriod; the polls in between read.
func TestAStandingCandidateStandsAtMostOncePerHalfRetryPeriod(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	mem := memorystore.New()
	mem.Put(lockName, resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: lease})
	store := faulty.New(rows.MustOpen(mem))
	e, err := New(Config{Store: rows.Sealed(store), Name: lockName, Identity: "a", Stand: true, Clock: fc,
		Callbacks: Callbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}})
	if err != nil {
		t.Fatal(err)
	}
	p := e.cport
	for i, want := range []faulty.Op{faulty.OpStand, faulty.OpGet, faulty.OpGet, faulty.OpStand, faulty.OpGet, faulty.OpGet, faulty.OpStand} {
		store.ResetCalls()
		if _, err := p.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		if calls := store.Calls(); len(calls) != 1 || calls[0].Op != want {
			t.Fatalf("poll %d at %v: requests %v, want one %s", i, fc.Now().Sub(epoch), calls, want)
		}
		fc.Step(DefaultRetryPeriod / 5) // 0.4 s: stands at 0, 1.2 and 2.4 s
	}
}

// A standing leader's reads may run beside each other (a renewal settled
// by a read, and a Guard's loss read): the port's record of its last stand
// is shared safely (this test is for the race detector).
func TestAStandingPortsReadsMayRunAtOnce(t *testing.T) {
	fc := clocktesting.NewFakeClock(epoch)
	mem := memorystore.New()
	mem.Put(lockName, resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: lease})
	e, err := New(Config{Store: mem, Name: lockName, Identity: "a", Stand: true, Clock: fc,
		Callbacks: Callbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}})
	if err != nil {
		t.Fatal(err)
	}
	p := e.cport
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := p.Get(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 50 {
		fc.Step(DefaultRetryPeriod / 5)
	}
	wg.Wait()
}
