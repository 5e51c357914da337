package schedule

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// skewedClock is the real clock read off by an offset: the wall clock of
// an instance whose clock is wrong (its leases run on the monotonic clock).
type skewedClock struct {
	timing.Clock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// started is one run as the fleet test saw it.
type fleetRun struct {
	instance string
	slot     time.Time
	attempt  int
	at       time.Time // real time
}

// TestAFleetWithSkewedClocksStartsEachSlotOnce runs three instances whose
// wall clocks are 400 ms behind, right, and 400 ms ahead, on one store and
// the real clock, with a slot every second. Whatever the machine's speed:
// no slot starts twice, none starts after a later one, and none starts
// more than the largest skew ahead before its time.
func TestAFleetWithSkewedClocksStartsEachSlotOnce(t *testing.T) {
	const skew = 400 * time.Millisecond
	store := memorystore.New()
	every, err := Every(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		runs []fleetRun
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, offset := range []time.Duration{-skew, 0, skew} {
		id := []string{"behind", "right", "ahead"}[i]
		wall := skewedClock{Clock: timing.Real(), offset: offset}
		c, err := lock.New(lock.Config{Store: store, Identity: id, LeaseDuration: 2 * time.Second,
			HeartbeatPeriod: 400 * time.Millisecond, RefreshPeriod: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		job := Job{Name: "fleet", Schedule: every, Run: func(ctx context.Context, r Run) error {
			mu.Lock()
			runs = append(runs, fleetRun{instance: id, slot: r.Slot, attempt: r.Attempt, at: time.Now()})
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			return nil
		}}
		s, err := New(Config{Locks: c, WallClock: wall}, job)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Run(ctx)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(runs) == 0 {
		t.Fatal("no slot ran in 5 s")
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].at.Before(runs[j].at) })
	seen := map[int64]fleetRun{}
	for i, r := range runs {
		key := run(r.slot, r.attempt)
		if prev, twice := seen[key]; twice {
			t.Errorf("slot %v attempt %d started twice: on %s and %s", r.slot, r.attempt, prev.instance, r.instance)
		}
		seen[key] = r
		if i > 0 && !r.slot.After(runs[i-1].slot) {
			t.Errorf("slot %v started on %s after slot %v", r.slot, r.instance, runs[i-1].slot)
		}
		if early := r.slot.Sub(r.at); early > skew+50*time.Millisecond {
			t.Errorf("slot %v started %v early on %s, more than the skew %v", r.slot, early, r.instance, skew)
		}
	}
	for _, r := range runs {
		t.Logf("slot %s attempt %d on %s, %v after its time", r.slot.Format("15:04:05"), r.attempt, r.instance, r.at.Sub(r.slot).Round(time.Millisecond))
	}
}
