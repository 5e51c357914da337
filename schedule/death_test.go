package schedule

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// hourlyFrom names a slot at first and every hour after it.
type hourlyFrom struct{ first time.Time }

func (h hourlyFrom) Next(t time.Time) time.Time {
	if t.Before(h.first) {
		return h.first
	}
	return h.first.Add((t.Sub(h.first)/time.Hour + 1) * time.Hour)
}

// lateRead is a store whose first read at or after after returns no row
// once until is closed: a read that returned before another instance's
// write landed, its answer delivered late.
type lateRead struct {
	rows.Store
	after time.Time
	until <-chan struct{}
	done  atomic.Bool
}

func (s *lateRead) Get(ctx context.Context, k resourcelock.Key) (rows.Item, error) {
	if !time.Now().Before(s.after) && s.done.CompareAndSwap(false, true) {
		<-s.until
		return rows.Item{}, resourcelock.ErrNotFound
	}
	return s.Store.Get(ctx, k)
}

// Two instances on one store (the real clock, short leases): a's run
// holds the slot and stops mid-run after b, whose read of the ledger came
// back before a's start, has tried the slot and found it started
// elsewhere. b, although it already tried the slot, settles it by policy:
// it runs the slot's second attempt. Nothing here depends on the
// machine's speed: each step waits for the one before.
func TestAnInstanceThatTriedASlotRetriesItsRunThatDied(t *testing.T) {
	store := memorystore.New()
	sched := hourlyFrom{first: time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)}
	started, retried, finished := make(chan string, 2), make(chan Run, 2), make(chan Event, 2)
	elsewhere := make(chan string, 16)
	stops := map[string]context.CancelFunc{}
	ends := map[string]chan error{}
	aStarted := make(chan struct{})
	stores := map[string]rows.Store{"a": rows.MustOpen(store), "b": &lateRead{Store: rows.MustOpen(store), after: sched.first, until: aStarted}}
	for _, id := range []string{"a", "b"} {
		c, err := lock.New(lock.Config{Store: rows.Sealed(stores[id]), Identity: id, LeaseDuration: 2 * time.Second,
			HeartbeatPeriod: 400 * time.Millisecond, RefreshPeriod: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		log := funcr.New(func(_, args string) {
			if strings.Contains(args, "started or finished elsewhere") {
				elsewhere <- id
			}
		}, funcr.Options{Verbosity: 1})
		job := Job{Name: "j", Schedule: sched, StartingDeadline: time.Minute, Retries: 1,
			Run: func(ctx context.Context, r Run) error {
				if r.Attempt == 1 {
					started <- id
					<-ctx.Done()
					return ctx.Err()
				}
				retried <- r
				return nil
			}}
		s, err := New(Config{Locks: c, Log: log, OnEvent: func(e Event) {
			if e.Kind == EventFinished && e.Attempt == 2 {
				finished <- e
			}
		}}, job)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		end := make(chan error, 1)
		stops[id], ends[id] = stop, end
		go func() { end <- s.Run(ctx) }()
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	if id := within(t, started, "the slot's first attempt to start"); id != "a" {
		t.Fatalf("the first attempt started on %s; b's read was held back for a to start it", id)
	}
	close(aStarted)
	if id := within(t, elsewhere, "b to find the slot started"); id != "b" {
		t.Fatalf("%s found the slot started elsewhere", id)
	}
	stops["a"]()
	if err := within(t, ends["a"], "the stopped instance's Run to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of the stopped instance = %v", err)
	}
	r := within(t, retried, "the other instance to retry the slot")
	if !r.Slot.Equal(sched.first) || r.Attempt != 2 {
		t.Fatalf("retried slot %v attempt %d, want %v attempt 2", r.Slot, r.Attempt, sched.first)
	}
	// The run's release writes the ledger before its EventFinished.
	if e := within(t, finished, "the retried run to be settled"); e.Status != Succeeded {
		t.Fatalf("the retried run finished %v, want succeeded", e.Status)
	}
	if it, err := rows.MustOpen(store).Get(context.Background(), resourcelock.Key{Partition: jobKey}); err != nil {
		t.Fatal(err)
	} else if led := ledgerOf(it.Numbers); !led.finished(sched.first) || led.outcome != Succeeded || led.attempt != 2 {
		t.Fatalf("ledger %+v, want slot %v attempt 2 succeeded", led, sched.first)
	}
}

// within returns the next value from ch, or fails the test after a minute.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
		panic("unreachable")
	}
}
