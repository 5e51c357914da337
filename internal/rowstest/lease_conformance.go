package rowstest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// runLeaseConformance runs resourcelocktest's Interface suite on the
// leases of one key of store (sortKey: with a sort key value) that the
// kernel writes through, one per identity, and the checks of what such a
// lease refuses before sending anything.
func runLeaseConformance(t *testing.T, newStore func(t *testing.T) rows.Store, sortKey bool) {
	newLeases := func(t *testing.T) func(string) resourcelock.Interface {
		store := newStore(t)
		key := resourcelock.Key{Partition: uuid.NewString()}
		if sortKey {
			key = resourcelock.Key{Partition: "group", Sort: uuid.NewString()}
		}
		return func(id string) resourcelock.Interface {
			// Called from the suite's goroutines too, so no t.Fatal.
			l, err := keylease.New(store, key, id)
			if err != nil {
				panic(err)
			}
			return keylease.AsInterface(l)
		}
	}
	resourcelocktest.RunInterfaceConformance(t, newLeases)
	t.Run("InvalidWritesSendNothing", func(t *testing.T) { testInvalidWritesSendNothing(t, newLeases(t)) })
}

var wallClock = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)

// rec returns a record for a write with a fresh RVN.
func rec(lease time.Duration, data string) resourcelock.Record {
	r := resourcelock.Record{
		RVN:           uuid.NewString(),
		LeaseDuration: lease,
		AcquireTime:   wallClock,
		RenewTime:     wallClock.Add(time.Second),
	}
	if data != "" {
		r.Data = []byte(data)
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("%s: got %v, want ErrConflict", what, err)
	}
}

func testInvalidWritesSendNothing(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	bad := map[string]resourcelock.Record{
		"no RVN":         {LeaseDuration: time.Second},
		"zero lease":     {RVN: uuid.NewString()},
		"negative lease": {RVN: uuid.NewString(), LeaseDuration: -time.Second},
		"data too large": {RVN: uuid.NewString(), LeaseDuration: time.Second, Data: bytes.Repeat([]byte{1}, record.MaxDataBytes+1)},
	}
	for what, r := range bad {
		if _, err := a.Create(ctx(t), r); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("Create with %s: %v, want dynalease.ErrInvalid", what, err)
		}
		if _, err := a.Update(ctx(t), resourcelock.Precondition{RVN: "x"}, r); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("Update with %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	if _, err := a.Update(ctx(t), resourcelock.Precondition{}, rec(time.Second, "")); !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("Update without precondition RVN: %v, want dynalease.ErrInvalid", err)
	}
	if _, err := a.Get(ctx(t)); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("an invalid write created a record: %v", err)
	}
	max := rec(time.Second, strings.Repeat("d", record.MaxDataBytes))
	if _, err := a.Create(ctx(t), max); err != nil {
		t.Fatalf("Create with exactly MaxDataBytes of data: %v", err)
	}
}

// race runs f concurrently n times and returns how many calls succeeded.
func race(t *testing.T, n int, f func(i int) error) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := f(i)
			if err != nil && !errors.Is(err, resourcelock.ErrConflict) {
				t.Errorf("racer %d: %v", i, err)
			}
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return wins
}

const racers = 8

func racerName(i int) string { return "racer-" + string(rune('a'+i)) }
