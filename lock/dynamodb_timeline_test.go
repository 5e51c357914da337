package lock_test

// Timelines of two clients on one lock, on the real clock: waiting,
// handover, crash, takeover and theft, and mutual exclusion under load.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
)

type acquired struct {
	l   *lock.Lock
	err error
	at  time.Time
}

func acquireAsync(ctx context.Context, c *ddbClient, key string, opts ...lock.AcquireOption) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(ctx, key, opts...)
		ch <- acquired{l, err, time.Now()}
	}()
	return ch
}

// watchValidity follows a lock until it ends and reports the last
// ValidUntil it showed and when Done closed.
type validityWatch struct {
	lastValid time.Time
	doneAt    time.Time
}

func watchValidity(l *lock.Lock) <-chan validityWatch {
	ch := make(chan validityWatch, 1)
	go func() {
		var w validityWatch
		for {
			if v := l.ValidUntil(); !v.IsZero() {
				w.lastValid = v
			}
			select {
			case <-l.Done():
				w.doneAt = time.Now()
				ch <- w
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return ch
}

func TestDynamoDBWaiterGetsTheLockRightAfterRelease(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	// The waiter must wait out the holder's heartbeats for well past the
	// holder's lease; that lease (4 s, a heartbeat every 250 ms) survives
	// stalls of a busy machine of up to 3.6 s.
	const holderLease = 4 * time.Second
	first := e.newTimedClient(lock.WithLeaseDuration(holderLease), lock.WithRequestTimeout(time.Second))
	second := e.newTimedClient()
	ctx := t.Context()
	l1 := mustAcquire(t, first, "k")

	if _, err := second.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrLocked", err)
	}
	second.ft.Reset()
	got := acquireAsync(ctx, second, "k", lock.WithAdditionalWait(time.Minute))
	// The holder heartbeats: the waiter waits well past the lease.
	select {
	case a := <-got:
		t.Fatalf("Acquire returned (lock %t, error %v) while the holder heartbeats", a.l != nil, a.err)
	case <-time.After(2 * holderLease):
	}
	if !l1.IsHeld() || ended(l1) {
		t.Fatalf("holder lost its lock: %v", l1.Err())
	}
	if n := second.ft.Count("UpdateItem"); n != 1 {
		t.Errorf("the waiter sent %d writes while the RVN kept changing, want 1 (its join of the queue)", n)
	}
	// One read per refresh period would be 66; a loaded machine delays
	// polls, so only a waiter that hardly polls at all fails this.
	if n := second.ft.Count("GetItem"); n < int(2*holderLease/(testRefresh*6/5))/3 {
		t.Errorf("the waiter read %d times in %v, want about one read per refresh period %v", n, 2*holderLease, testRefresh)
	}

	released := time.Now()
	mustRelease(t, l1)
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("Acquire after Release: %v", a.err)
		}
		if lag := a.at.Sub(released); lag > testRefresh*6/5+slack {
			t.Errorf("waiter got the lock %v after the Release, want within about a refresh period (%v)", lag, testRefresh)
		}
		if str(e.item("k"), "ownerName") != second.Identity() || !a.l.IsHeld() {
			t.Error("the waiter's lock is not in the row")
		}
	case <-time.After(patience):
		t.Fatal("waiter never got the released lock")
	}
}

func TestDynamoDBCrashedHolderIsTakenOverOnlyAfterItsLockEnded(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	first, second := e.newTimedClient(), e.newTimedClient()
	ctx := t.Context()
	l1 := mustAcquire(t, first, "k")
	time.Sleep(2 * testHeartbeat) // a few heartbeats

	// The first client "crashes": none of its writes reach DynamoDB any more.
	silence := first.ft.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Delay(time.Hour)})
	watch := watchValidity(l1)
	start := time.Now()
	got := acquireAsync(ctx, second, "k", lock.WithAdditionalWait(5*time.Second))

	var a acquired
	select {
	case a = <-got:
		if a.err != nil {
			t.Fatalf("Acquire of a crashed holder's lock: %v", a.err)
		}
	case <-time.After(patience):
		t.Fatal("the crashed holder's lock was never taken over")
	}
	// Taken over after about the lease, counted from the waiter's first read.
	if d := a.at.Sub(start); d < testLease || d > testLease+testTimeout+slack {
		t.Errorf("takeover %v after the waiter started, want about the lease %v", d, testLease)
	}
	// Not before the first's lock became invalid, on this process's one
	// monotonic clock: its Done closed, and its last ValidUntil passed
	// before the takeover write left.
	if !ended(l1) {
		t.Fatal("the second client holds the lock while the first's has not ended")
	}
	w := <-watch
	takeover := second.lastSent("UpdateItem", a.at)
	if !w.doneAt.Before(a.at) || !w.lastValid.Before(takeover) {
		t.Errorf("first lock valid until %v and ended at %v; second's takeover write left at %v, returned at %v (times since start)",
			w.lastValid.Sub(start), w.doneAt.Sub(start), takeover.Sub(start), a.at.Sub(start))
	}
	if w.doneAt.After(w.lastValid.Add(slack)) {
		t.Errorf("first lock ended %v after its validity", w.doneAt.Sub(w.lastValid))
	}
	lost := lostError(t, l1.Err())
	if lost.Reason != dynalease.Expired || lost.Cause == nil || !strings.Contains(lost.Cause.Error(), "UpdateItem") {
		t.Errorf("first lock's Err = %v (reason %v, cause %v), want dynalease.Expired with the failed UpdateItem as cause", lost, lost.Reason, lost.Cause)
	}
	if l1.IsHeld() || !l1.ValidUntil().IsZero() {
		t.Error("the ended lock still looks held")
	}

	// Back from the "crash", the first client changes nothing: its lock stays
	// ended (dynalease.Expired), its heartbeat sends nothing, and its release sends
	// one write conditioned on its own RVN, which the server refuses (the
	// row is the second client's now).
	silence.Remove()
	before := first.ft.Count("UpdateItem") + first.ft.Count("DeleteItem")
	err := l1.Heartbeat(ctx)
	if lost := lostError(t, err); lost.Reason != dynalease.Expired {
		t.Errorf("Heartbeat of the expired lock = %v, want dynalease.Expired", err)
	}
	if err := l1.Release(ctx); err == nil {
		t.Error("Release of the expired lock succeeded")
	}
	time.Sleep(2 * testHeartbeat)
	if n := first.ft.Count("UpdateItem") + first.ft.Count("DeleteItem") - before; n != 1 {
		t.Errorf("the first client wrote %d times after its lock ended, want 1 (its conditional release)", n)
	}
	if it := e.item("k"); str(it, "ownerName") != second.Identity() || !a.l.IsHeld() || ended(a.l) {
		t.Errorf("second lock disturbed: row owner %q, held %v, err %v", str(it, "ownerName"), a.l.IsHeld(), a.l.Err())
	}
}

func TestDynamoDBStolenLockIsDetectedByTheNextHeartbeat(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	// A long lease keeps the first lock valid through the whole theft, so
	// that the outcome is dynalease.Stolen, not dynalease.Expired, however slow the machine.
	const longLease = 20 * time.Second
	// A short request timeout makes the silenced heartbeat give up, and
	// its read-back go out, soon (the lease stays long).
	first := e.newTimedClient(lock.WithLeaseDuration(longLease), lock.WithRequestTimeout(time.Second))
	second := e.newTimedClient()
	ctx := t.Context()
	l1 := mustAcquire(t, first, "k")
	time.Sleep(testHeartbeat)

	// The first client is cut off, reads included, so it cannot learn
	// anything; meanwhile its row vanishes (DynamoDB's TTL, an operator)
	// and the second client takes the lock at once.
	silenced := time.Now()
	sw := first.ft.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Delay(time.Hour)})
	sr := first.ft.Add(faulthttp.Rule{Op: "GetItem", Fault: faulthttp.Delay(time.Hour)})
	e.remove("k")
	second.ft.Reset()
	l2 := mustAcquire(t, second, "k")
	second.wantCounts(t, "Acquire of a vanished row", map[string]int{"UpdateItem": 1})

	// At least one heartbeat and its read-back failed meanwhile; that alone
	// ends nothing.
	// (A wait for a state, not a timing: on a busy machine it takes long.)
	eventually(t, 3*patience, "a silenced heartbeat and its read-back", func() bool { return sw.Hits() >= 1 && sr.Hits() >= 1 })
	if !l1.IsHeld() || ended(l1) {
		t.Fatalf("the first lock ended while silenced for %v (validity %v): %v", time.Since(silenced), longLease-longLease/10, l1.Err())
	}
	validUntil := l1.ValidUntil()
	sw.Remove()
	sr.Remove()

	select {
	case <-l1.Done():
	case <-time.After(patience):
		t.Fatal("the stolen lock was never found lost")
	}
	detected := time.Now()
	if !detected.Before(validUntil) {
		t.Fatalf("loss found at %v, after the lock's validity (%v): the test's timing did not work out", detected.Sub(silenced), validUntil.Sub(silenced))
	}
	lost := lostError(t, l1.Err())
	if lost.Reason != dynalease.Stolen || lost.HolderIdentity != second.Identity() {
		t.Errorf("Err = %v (reason %v, holder %q), want dynalease.Stolen by %q", lost, lost.Reason, lost.HolderIdentity, second.Identity())
	}
	if l1.IsHeld() {
		t.Error("the stolen lock still looks held")
	}
	if err := l1.Release(ctx); !errors.As(err, new(*dynalease.LostError)) {
		t.Errorf("Release of the stolen lock = %v, want its LostError", err)
	}
	time.Sleep(testHeartbeat)
	it := e.item("k")
	if str(it, "ownerName") != second.Identity() || str(it, "isReleased") != "" || !l2.IsHeld() || ended(l2) {
		t.Errorf("the thief's lock was disturbed: row %v, held %v, err %v", it, l2.IsHeld(), l2.Err())
	}
}

func TestDynamoDBMutualExclusionUnderLoad(t *testing.T) {
	// Not parallel: it runs alone, so its load does not disturb the timing
	// of the other tests. Its subject is exclusion, not timing: untimed
	// clients, whose locks no stall ends and whose requests (a Release
	// among them) do not time out on a busy machine.
	e := newDDBEnv(t, ddbtest.TableSpec{})
	clients := []*ddbClient{e.newClient(), e.newClient()}
	const goroutines, keys = 8, 4
	const run = 3 * time.Second
	var inside [keys]atomic.Int32
	var taken [2]atomic.Int64
	var heartbeaten atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for ci, c := range clients {
		for g := range goroutines {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(ci), uint64(g)))
				for time.Now().Before(stop) {
					k := rnd.IntN(keys)
					key := fmt.Sprint("key-", k)
					ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
					var l *lock.Lock
					var err error
					if rnd.IntN(4) == 0 {
						l, err = c.TryAcquire(ctx, key)
					} else {
						l, err = c.Acquire(ctx, key)
					}
					cancel()
					if err != nil {
						if !errors.Is(err, lock.ErrLocked) && !errors.Is(err, context.DeadlineExceeded) {
							fail("Acquire(%s) by client %d: %v", key, ci, err)
						}
						continue
					}
					if n := inside[k].Add(1); n != 1 {
						fail("%d holders of %s at once", n, key)
					}
					taken[ci].Add(1)
					hold := time.Duration(rnd.IntN(5)) * time.Millisecond
					if rnd.IntN(10) == 0 {
						hold = 2*testHeartbeat + time.Duration(rnd.IntN(100))*time.Millisecond
						heartbeaten.Add(1)
					}
					time.Sleep(hold)
					if !l.IsHeld() {
						fail("lock %s of client %d not held after %v: %v", key, ci, hold, l.Err())
					}
					inside[k].Add(-1)
					if err := l.Release(context.Background()); err != nil {
						fail("Release(%s) by client %d: %v", key, ci, err)
					}
				}
			})
		}
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("acquisitions: %d and %d; %d held across heartbeats", taken[0].Load(), taken[1].Load(), heartbeaten.Load())
	if taken[0].Load() == 0 || taken[1].Load() == 0 || taken[0].Load()+taken[1].Load() < 20 {
		t.Errorf("too little progress: %d and %d acquisitions", taken[0].Load(), taken[1].Load())
	}
	if heartbeaten.Load() == 0 {
		t.Error("no lock was held across heartbeats")
	}
}

func TestDynamoDBLossIsClassifiedByWhatTheRowShows(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	deleted := mustAcquire(t, c, "deleted")
	released := mustAcquire(t, c, "released")

	e.remove("deleted")
	// Another program took the row (a new RVN) and released it, keeping it.
	e.put(javaItem("released", "java-host", uuid.NewString(), testLease, nil, true))
	for _, tc := range []struct {
		l    *lock.Lock
		want dynalease.LostReason
	}{{deleted, dynalease.Deleted}, {released, dynalease.ReleasedElsewhere}} {
		select {
		case <-tc.l.Done():
		case <-time.After(testHeartbeat + slack):
			t.Fatalf("%s: loss not found by the next heartbeat", tc.l.Key())
		}
		if lost := lostError(t, tc.l.Err()); lost.Reason != tc.want {
			t.Errorf("%s: Err = %v, want reason %v", tc.l.Key(), lost, tc.want)
		}
	}
	if e.item("deleted") != nil || str(e.item("released"), "isReleased") != "1" {
		t.Error("a lost lock's heartbeat rewrote the row")
	}
}
