package schedule

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// scriptedGets is a store whose reads (Get) are numbered from 1: script
// runs before the nth is answered, and may answer it itself. A test that
// uses it depends on the order of the scheduler's and the lock client's
// reads, and says which it expects.
type scriptedGets struct {
	rows.Store
	mu     sync.Mutex
	n      int
	script func(n int) (rows.Item, error, bool)
}

func (s *scriptedGets) Get(ctx context.Context, k resourcelock.Key) (rows.Item, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	if it, err, answered := s.script(n); answered {
		return it, err
	}
	return s.Store.Get(ctx, k)
}

// An OverlapSkip job whose previous run's holder finished (released the
// row) and is gone starts its next slot on time, although this instance
// last saw that holder's lock, held, more than a lease before: the
// takeover of the RVN it saw is refused, and the free row is taken in the
// same try rather than skipped as an overlap.
func TestAnOverlapSkipJobStartsTheSlotAfterAHolderThatFinished(t *testing.T) {
	key := resourcelock.Key{Partition: jobKey}
	// Another instance's run of slot t0 holds the row.
	held := func(mem *memorystore.Store) {
		rows.MustRaw(mem).PutItem(rows.Item{Key: key,
			Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: testLease},
			Numbers: map[string]int64{runAttribute: run(t0, 1)}})
	}
	soloStore = func(mem *memorystore.Store) rows.Store {
		return &scriptedGets{Store: rows.MustOpen(mem), script: func(n int) (rows.Item, error, bool) {
			switch n {
			case 1:
				// The first ledger read came back before the other's
				// start: this instance tries slot t0 and finds it
				// started, its holder's RVN r1 noted.
				return rows.Item{}, resourcelock.ErrNotFound, true
			case 2:
				// The other's run finished and released the row; that
				// instance is gone.
				rows.MustRaw(mem).PutItem(rows.Item{Key: key,
					Record: resourcelock.Record{HolderIdentity: "other", RVN: "r2", LeaseDuration: testLease, Released: true},
					Numbers: map[string]int64{runAttribute: run(t0, 1), doneAttribute: t0.UnixMilli(),
						outcomeAttribute: int64(Succeeded)}})
			}
			return rows.Item{}, nil, false
		}}
	}
	t.Cleanup(func() { soloStore = nil }) // safe: no test here runs in parallel
	var slots []time.Time
	job := Job{Name: "j", Schedule: minutely(t), Overlap: OverlapSkip, Run: func(ctx context.Context, r Run) error {
		slots = append(slots, r.Slot)
		return nil
	}}
	events := oneInstanceFrom(t, t0.Add(time.Second), held, nil, func(ev []Event) bool {
		return count(ev, EventFinished)+count(ev, EventSkipped) >= 1
	}, job)
	if skipped := eventsOf(events, EventSkipped); len(skipped) != 0 {
		t.Fatalf("skipped %+v: the lock was free", skipped)
	}
	if next := t0.Add(time.Minute); len(slots) != 1 || !slots[0].Equal(next) {
		t.Fatalf("slots run %v, want %v", slots, next)
	}
}
