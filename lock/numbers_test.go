package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

// withLedger returns the options of an acquisition that advances the row's
// "run" to n, only from below n.
func withLedger(n int64) []AcquireOption {
	return []AcquireOption{takeLedger(map[string]int64{"run": n}, map[string]int64{"run": n})}
}

func TestAnAcquisitionAdvancesTheRowsLedger(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l := f.acquire("job", withLedger(1)...)
	if got := f.item("job").Numbers["run"]; got != 1 {
		t.Fatalf("run after the acquisition = %d, want 1", got)
	}
	if err := l.Release(ctx, closeLedger(map[string]int64{"done": 1})); err != nil {
		t.Fatal(err)
	}
	it := f.item("job")
	if !it.Released || it.Numbers["run"] != 1 || it.Numbers["done"] != 1 {
		t.Fatalf("row after the release: %+v", it)
	}

	// The free row cannot be taken from below a bound it has reached:
	// Acquire gives up at once instead of waiting.
	if _, err := f.c.Acquire(ctx, "job", withLedger(1)...); !errors.Is(err, ledger.ErrNotBelow) {
		t.Fatalf("Acquire below a bound reached = %v, want ErrNotBelow", err)
	}
	if got := f.item("job"); !got.Released || got.Numbers["run"] != 1 {
		t.Fatalf("a refused acquisition changed the row: %+v", got)
	}
	l = f.acquire("job", withLedger(2)...)
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
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "job"},
		Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: lease},
		Numbers: map[string]int64{"run": 5}})
	// No clock step: the wait must end on its first read.
	if _, err := f.c.Acquire(ctx, "job", withLedger(5)...); !errors.Is(err, ledger.ErrNotBelow) {
		t.Fatalf("Acquire of a row held past the bound = %v, want ErrNotBelow", err)
	}
	if _, err := f.c.TryAcquire(ctx, "job", withLedger(6)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire of a row held below the bound = %v, want ErrLocked", err)
	}
}

func TestReleaseWithNumbersNeedsAKeptRow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l := f.acquire("job", WithDeleteOnRelease())
	err := l.Release(ctx, closeLedger(map[string]int64{"done": 1}))
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("ReleaseWithNumbers of a deleted row = %v, want ErrInvalid", err)
	}
	if !l.IsHeld() {
		t.Fatal("a refused Release ended the lock")
	}
	if _, err := f.c.Acquire(ctx, "other", takeLedger(nil, map[string]int64{"": 1})); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("WithBelow with an empty name = %v, want ErrInvalid", err)
	}
}

// A create left in doubt by an earlier, cancelled Acquire with its own
// numbers landed, and its release failed. A later acquisition of the same
// client with a lower bound finds that row its own: it must not write its
// numbers over the earlier call's (the ledger would go back), but release
// the row and win it under its own bound, which refuses it.
func TestARowAnEarlierCallLeftIsNotTakenPastTheBound(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("found late %v", late), func(t *testing.T) { earlierCallsRow(t, late) })
	}
}

func earlierCallsRow(t *testing.T, late bool) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	block, entered := make(chan struct{}), make(chan faulty.Op, 10)
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Block: block, Land: true}) // lands when cancelled
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})            // the orphan's release fails
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "job", withLedger(5)...)
		errs <- err
	}()
	<-entered
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	f.store.OnCall(nil)
	if it := f.item("job"); it.Released || it.Numbers["run"] != 5 {
		t.Fatalf("the cancelled call's row: %+v", it)
	}
	if late {
		// Found only after its validity: it must still not be renewed
		// with this call's numbers.
		f.fc.Step(2 * lease)
	}
	if _, err := f.c.TryAcquire(context.Background(), "job", withLedger(3)...); !errors.Is(err, ledger.ErrNotBelow) {
		t.Fatalf("TryAcquire(run 3) over a row left with run 5 = %v, want ErrNotBelow", err)
	}
	if it := f.item("job"); !it.Released || it.Numbers["run"] != 5 {
		t.Fatalf("row after the refused acquisition: released %v, numbers %v; want released with run 5", it.Released, it.Numbers)
	}
	// A higher bound takes it.
	l, err := f.c.TryAcquire(context.Background(), "job", withLedger(6)...)
	if err != nil {
		t.Fatalf("TryAcquire(run 6) = %v", err)
	}
	if got := f.item("job").Numbers["run"]; got != 6 || !l.IsHeld() {
		t.Fatalf("run = %d after taking it with 6", got)
	}
}

func TestLedgerOptionsAreRefusedWhereTheyCannotHold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"permit": func() error { _, err := f.c.TryAcquirePermit(ctx, "sem", 2, withLedger(1)...); return err },
		"set": func() error {
			_, err := f.c.TryAcquireSet(ctx, []string{"a", "b"}, takeLedger(map[string]int64{"run": 1}, nil))
			return err
		},
		"reentrant": func() error {
			_, err := f.c.TryAcquire(ctx, "job", append(withLedger(1), WithReentrant())...)
			return err
		},
		"reentrant, numbers only": func() error {
			_, err := f.c.TryAcquire(ctx, "job", takeLedger(map[string]int64{"run": 1}, nil), WithReentrant())
			return err
		},
		"get": func() error { _, err := f.c.Get(ctx, "job", takeLedger(nil, map[string]int64{"run": 1})); return err },
	} {
		if err := call(); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s with the ledger's options = %v, want ErrInvalid", name, err)
		}
	}
}

func TestNumbersAreRefusedOnAClientWithATTL(t *testing.T) {
	f := newFixture(t, WithTTL(2*minTTLSlack))
	if _, err := f.c.TryAcquire(context.Background(), "job", withLedger(1)...); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("WithNumbers on a client with a TTL = %v, want ErrInvalid", err)
	}
	if got := ledger.Lock[AcquireOption, ReleaseOption, Info, *Client]().Timing(f.c).TTL; got != 2*minTTLSlack {
		t.Fatalf("the ledger's TTL = %v", got)
	}
}

// TestARowReadPastTheBoundEndsTheWaitWithoutAWrite: a waiter whose poll
// reads the row released past its bound (the run it waited for finished
// the slot) gives up on that read: no write of its could be admitted, so
// none is sent.
func TestARowReadPastTheBoundEndsTheWaitWithoutAWrite(t *testing.T) {
	f := newFixture(t)
	key := resourcelock.Key{Partition: "job"}
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: key,
		Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: lease},
		Numbers: map[string]int64{"run": 5}})
	bounds := map[string]int64{"run": 6, "done": 5}
	locks, errs := f.acquireAsync("job", takeLedger(map[string]int64{"run": 6}, bounds))
	f.waitIdle("acquire")
	f.store.ResetCalls()
	// The run finishes its slot: the row released with "done" at the bound.
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: key,
		Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r2", LeaseDuration: lease, Released: true},
		Numbers: map[string]int64{"run": 5, "done": 5}})
	f.fc.Step(maxPoll)
	select {
	case err := <-errs:
		if !errors.Is(err, ledger.ErrNotBelow) {
			t.Fatalf("Acquire = %v, want ErrNotBelow", err)
		}
	case l := <-locks:
		t.Fatalf("Acquire took the row past its bound: %+v", l)
	case <-time.After(patience):
		t.Fatalf("Acquire did not return; calls %v", f.ops())
	}
	f.wantOps(faulty.OpGet)
}
