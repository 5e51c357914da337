package schedule

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/clocktest"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// closing is one scheduler on a lock client over a memory store, on a fake
// clock that nothing steps unless a test says so: a loop that sleeps
// where it should have ended never returns.
type closing struct {
	t      *testing.T
	mem    *memorystore.Store
	fc     *clocktesting.FakeClock
	clk    *clocktest.Clock
	c      *lock.Client
	blocks chan string // the loops that block on the clock, in turn
	mu     sync.Mutex
	events []Event
}

func newClosing(t *testing.T, start time.Time, cfg lock.Config) *closing {
	t.Helper()
	h := &closing{t: t, mem: memorystore.New(), fc: clocktesting.NewFakeClock(start), blocks: make(chan string, 64)}
	h.clk = &clocktest.Clock{FakeClock: h.fc, OnBlock: func(loop string) {
		select {
		case h.blocks <- loop:
		default:
		}
	}}
	clk := h.clk
	cfg.Store, cfg.Clock, cfg.Identity, cfg.LeaseDuration, cfg.RefreshPeriod = h.mem, clk, "solo", testLease, testRefresh
	c, err := lock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	h.c = c
	return h
}

// run starts Run of jobs and returns the channel of its result.
func (h *closing) run(jobs ...Job) <-chan error {
	h.t.Helper()
	s, err := New(Config{Locks: h.c, Clock: h.clk, OnEvent: func(e Event) {
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	}}, jobs...)
	if err != nil {
		h.t.Fatal(err)
	}
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		done <- s.Run(context.Background())
		close(returned)
	}()
	h.t.Cleanup(func() {
		select {
		case <-returned:
		case <-time.After(time.Minute):
			h.t.Error("Run never returned")
		}
	})
	return done
}

// ended waits for Run's result; the fake clock never moves meanwhile.
func (h *closing) ended(done <-chan error) error {
	h.t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		h.t.Fatal("Run did not return on a closed client: it waits on a clock that nothing moves")
		return nil
	}
}

// A scheduler on a closed client ends at once with lock.ErrClosed, whatever
// its jobs were doing: one due now, one not due for a minute.
func TestRunOnAClosedClientReturnsErrClosedAtOnce(t *testing.T) {
	h := newClosing(t, t0, lock.Config{})
	if err := h.c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	nop := func(context.Context, Run) error { return nil }
	later := hourlyFrom{first: t0.Add(time.Minute)}
	err := h.ended(h.run(Job{Name: "due", Schedule: minutely(t), Run: nop}, Job{Name: "later", Schedule: later, Run: nop}))
	if !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Run = %v, want lock.ErrClosed", err)
	}
}

// A client closed while the scheduler waits for a job's lock (a slot due
// while another instance's run holds it) ends Run with lock.ErrClosed,
// rather than the slot being tried again every refresh period.
func TestAClientClosedDuringAWaitForTheLockEndsRun(t *testing.T) {
	h := newClosing(t, t0, lock.Config{})
	rows.MustRaw(h.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: testLease}})
	done := h.run(Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }})
	for waiting := false; !waiting; {
		select {
		case loop := <-h.blocks:
			waiting = loop == "acquire"
		case <-time.After(30 * time.Second):
			t.Fatal("the scheduler never waited for the held lock")
		}
	}
	if err := h.c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.ended(done); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Run = %v, want lock.ErrClosed", err)
	}
}

// A run whose lock client is closed under it is told so (its context's
// cause matches lock.ErrClosed), is reported finished with that error, not
// as a lost lock, and Run then ends with lock.ErrClosed. The slot stays
// unfinished in the ledger, for another instance to settle.
func TestARunWhoseClientIsClosedIsReportedClosedNotLost(t *testing.T) {
	h := newClosing(t, t0, lock.Config{})
	cause := make(chan error, 1)
	done := h.run(Job{Name: "j", Schedule: minutely(t), Run: func(ctx context.Context, r Run) error {
		if err := h.c.Close(context.Background()); err != nil {
			t.Errorf("Close = %v", err)
		}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}})
	if err := h.ended(done); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Run = %v, want lock.ErrClosed", err)
	}
	if err := <-cause; !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("the run's context ended with %v, want lock.ErrClosed", err)
	}
	finished := eventsOf(h.events, EventFinished)
	if len(finished) != 1 || !errors.Is(finished[0].Err, lock.ErrClosed) || errors.Is(finished[0].Err, dynalease.ErrLost) {
		t.Fatalf("finished %+v, want one run ended by lock.ErrClosed, not a loss", finished)
	}
	it, ok := rows.MustRaw(h.mem).Item(resourcelock.Key{Partition: jobKey})
	if led := ledgerOf(it.Numbers); !ok || !it.Released || led.slot != t0 || led.finished(t0) {
		t.Fatalf("row %+v, ledger %+v: want it released with slot %v started and unfinished", it.Record, led, t0)
	}
}

// A run whose lock expired (its heartbeats stopped) releases the row when
// it returns, so that the slot is settled at once rather than after the
// lease: here this instance closes it failed (no retries) without waiting.
func TestARunWhoseLockExpiredReleasesItsRow(t *testing.T) {
	h := newClosing(t, t0, lock.Config{ManualHeartbeats: true})
	var expiredAt time.Time
	done := make(chan struct{})
	s, err := New(Config{Locks: h.c, Clock: h.clk, OnEvent: func(e Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, e)
		if e.Kind == EventFinished && e.Status == Failed {
			if d := h.fc.Since(expiredAt); d >= testLease {
				t.Errorf("the slot was closed %v after its run's lock expired, want at once", d)
			}
			close(done)
		}
	}}, Job{Name: "j", Schedule: minutely(t), Run: func(ctx context.Context, r Run) error {
		h.mu.Lock()
		expiredAt = h.fc.Now().Add(testLease)
		h.mu.Unlock()
		h.fc.Step(testLease) // no heartbeat: the lock expires
		<-ctx.Done()
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- s.Run(ctx) }()
	defer func() {
		stop()
		<-ended
	}()
	// A wait for the lock moves the clock on, past a poll: without the
	// release, a lease of them.
	go func() {
		for {
			select {
			case loop := <-h.blocks:
				if loop == "acquire" {
					h.fc.Step(2 * testRefresh)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the slot whose run's lock expired was never closed")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	finished := eventsOf(h.events, EventFinished)
	if len(finished) != 2 || !errors.Is(finished[0].Err, dynalease.ErrLost) {
		t.Fatalf("finished %+v, want the lost run, then the slot closed", finished)
	}
}
