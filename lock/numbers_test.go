package lock

import (
	"context"
	"errors"
	"testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// ledger returns the options of an acquisition that advances the row's
// "run" to n, only from below n.
func ledger(n int64) []AcquireOption {
	return []AcquireOption{WithNumbers(map[string]int64{"run": n}), WithBelow(map[string]int64{"run": n})}
}

func TestAnAcquisitionAdvancesTheRowsLedger(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l := f.acquire("job", ledger(1)...)
	if got := f.item("job").Numbers["run"]; got != 1 {
		t.Fatalf("run after the acquisition = %d, want 1", got)
	}
	if err := l.Release(ctx, ReleaseWithNumbers(map[string]int64{"done": 1})); err != nil {
		t.Fatal(err)
	}
	it := f.item("job")
	if !it.Released || it.Numbers["run"] != 1 || it.Numbers["done"] != 1 {
		t.Fatalf("row after the release: %+v", it)
	}

	// The free row cannot be taken from below a bound it has reached:
	// Acquire gives up at once instead of waiting.
	if _, err := f.c.Acquire(ctx, "job", ledger(1)...); !errors.Is(err, ErrNotBelow) {
		t.Fatalf("Acquire below a bound reached = %v, want ErrNotBelow", err)
	}
	if got := f.item("job"); !got.Released || got.Numbers["run"] != 1 {
		t.Fatalf("a refused acquisition changed the row: %+v", got)
	}
	l = f.acquire("job", ledger(2)...)
	if got := f.item("job").Numbers; got["run"] != 2 || got["done"] != 1 {
		t.Fatalf("numbers after the second acquisition = %v", got)
	}
	// Renewals keep the ledger and are not conditioned on it.
	if err := l.Heartbeat(ctx); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	if got := f.item("job").Numbers["run"]; got != 2 {
		t.Fatalf("run after a heartbeat = %d, want 2", got)
	}
}

func TestAHeldRowPastTheBoundEndsTheWaitAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.mem.PutItem(resourcelock.Item{Key: resourcelock.Key{Partition: "job"},
		Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: lease},
		Numbers: map[string]int64{"run": 5}})
	// No clock step: the wait must end on its first read.
	if _, err := f.c.Acquire(ctx, "job", ledger(5)...); !errors.Is(err, ErrNotBelow) {
		t.Fatalf("Acquire of a row held past the bound = %v, want ErrNotBelow", err)
	}
	if _, err := f.c.TryAcquire(ctx, "job", ledger(6)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire of a row held below the bound = %v, want ErrLocked", err)
	}
}

func TestReleaseWithNumbersNeedsAKeptRow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l := f.acquire("job", WithDeleteOnRelease())
	err := l.Release(ctx, ReleaseWithNumbers(map[string]int64{"done": 1}))
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("ReleaseWithNumbers of a deleted row = %v, want ErrInvalid", err)
	}
	if !l.IsHeld() {
		t.Fatal("a refused Release ended the lock")
	}
	if _, err := f.c.Acquire(ctx, "other", WithBelow(map[string]int64{"": 1})); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("WithBelow with an empty name = %v, want ErrInvalid", err)
	}
}
