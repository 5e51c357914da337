package lock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

func (f *fixture) tryPermit(name string, permits int) (*Lock, error) {
	f.t.Helper()
	l, err := f.c.TryAcquirePermit(context.Background(), name, permits)
	if err == nil && f.c.k.Renews() {
		f.waitIdle("heartbeat")
	}
	return l, err
}

func (f *fixture) mustPermit(name string, permits int) *Lock {
	f.t.Helper()
	l, err := f.tryPermit(name, permits)
	if err != nil {
		f.t.Fatalf("TryAcquirePermit(%q, %d): %v", name, permits, err)
	}
	return l
}

func TestPermitsAreSlotsHeldLikeLocks(t *testing.T) {
	f := newFixture(t)
	held := map[string]*Lock{}
	for range 3 {
		l := f.mustPermit("pay", 3)
		if held[l.Key()] != nil {
			t.Fatalf("two permits on slot %s", l.Key())
		}
		held[l.Key()] = l
	}
	for i := range 3 {
		if held[permitKey("pay", i)] == nil || f.item(permitKey("pay", i)).HolderIdentity != ownerName {
			t.Fatalf("slot %d not held after three permits: %v", i, held)
		}
	}
	f.store.ResetCalls()
	if _, err := f.tryPermit("pay", 3); !errors.Is(err, ErrLocked) {
		t.Fatalf("a fourth of three permits: %v, want ErrLocked", err)
	}
	f.wantOps(faulty.OpGetMany) // one read of the three slots, no write
	if err := held[permitKey("pay", 1)].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.store.ResetCalls()
	if l := f.mustPermit("pay", 3); l.Key() != permitKey("pay", 1) {
		t.Fatalf("the freed permit is slot %s, want slot 1", l.Key())
	}
	f.wantOps(faulty.OpGetMany, faulty.OpCreate)
	infos, err := f.c.Permits(context.Background(), "pay", 3)
	if err != nil || len(infos) != 3 {
		t.Fatalf("Permits: %v, %v; want three rows", infos, err)
	}
}

// A permit whose holder went silent is taken over after its holder's
// lease, watched on this client's clock from the read that first showed
// its RVN; a slot whose holder renews is never taken.
func TestAPermitOfASilentHolderIsTakenOverAfterItsLease(t *testing.T) {
	f := newFixture(t)
	const holderLease = 6 * time.Second
	f.putForeign(permitKey("pay", 0), "live", "l0", holderLease)
	f.putForeign(permitKey("pay", 1), "dead", "d0", holderLease)
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquirePermit(context.Background(), "pay", 2)
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		f.putForeign(permitKey("pay", 0), "live", fmt.Sprint("l", i), holderLease) // renews
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if i > 100 {
				t.Fatal("never took the silent permit over")
			}
			continue
		case l := <-locks:
			if l.Key() != permitKey("pay", 1) {
				t.Fatalf("took slot %s, want the silent holder's slot 1", l.Key())
			}
			if f.now().Before(epoch.Add(holderLease)) {
				t.Fatalf("took the permit over at %v, before the holder's lease of %v", f.now().Sub(epoch), holderLease)
			}
			if f.item(permitKey("pay", 0)).HolderIdentity != "live" {
				t.Fatal("took the live holder's slot")
			}
			return
		case err := <-errs:
			t.Fatalf("AcquirePermit: %v", err)
		case <-time.After(patience):
			t.Fatal("AcquirePermit neither waited nor returned")
		}
	}
}

// A semaphore of more permits than the client's observation cache holds
// still watches each slot from its first read: the silent holder's
// permit is taken over after its lease.
func TestAPermitIsTakenOverWithASmallObservationCache(t *testing.T) {
	f := newFixture(t, WithObservationCacheSize(2))
	const holderLease = 6 * time.Second
	for i := range 3 {
		f.putForeign(permitKey("pay", i), fmt.Sprint("h", i), fmt.Sprint("r", i), holderLease)
	}
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquirePermit(context.Background(), "pay", 3)
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		// Slots 0 and 1 renew; slot 2's holder is silent.
		f.putForeign(permitKey("pay", 0), "h0", fmt.Sprint("r0-", i), holderLease)
		f.putForeign(permitKey("pay", 1), "h1", fmt.Sprint("r1-", i), holderLease)
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if i > 100 {
				t.Fatal("never took the silent permit over")
			}
			continue
		case l := <-locks:
			if l.Key() != permitKey("pay", 2) || f.now().Before(epoch.Add(holderLease)) || f.now().After(epoch.Add(holderLease+2*maxPoll)) {
				t.Fatalf("took slot %s at %v; want slot 2 just after the %v lease", l.Key(), f.now().Sub(epoch), holderLease)
			}
			f.freeRun()
			return
		case err := <-errs:
			t.Fatalf("AcquirePermit: %v", err)
		case <-time.After(patience):
			t.Fatal("AcquirePermit neither waited nor returned")
		}
	}
}

// When the slots cannot be read at all, AcquirePermit gives up with the
// failure, not with ErrLocked: nobody was seen holding a permit.
func TestAcquirePermitWithNoAnswerIsNotLocked(t *testing.T) {
	f := newFixture(t)
	f.store.Inject(faulty.OpGetMany, 1000, faulty.Fault{Err: errReset})
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.AcquirePermit(context.Background(), "pay", 2)
		errs <- err
	}()
	f.waitIdle("acquire")
	for i := 0; i < 100; i++ {
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			continue
		case err := <-errs:
			if err == nil || errors.Is(err, ErrLocked) || !errors.Is(err, errReset) {
				t.Fatalf("AcquirePermit with every read failing: %v, want the failure, not ErrLocked", err)
			}
			if f.now().Before(epoch.Add(lease)) {
				t.Fatalf("gave up after %v, before this client's lease", f.now().Sub(epoch))
			}
			return
		case <-time.After(patience):
			t.Fatal("AcquirePermit neither waited nor returned")
		}
	}
	t.Fatal("never gave up")
}

func TestAcquirePermitGivesUpWhenEveryHolderRenews(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	errs := make(chan error, 1)
	f.putForeign(permitKey("pay", 0), "a", "a0", holderLease)
	go func() {
		_, err := f.c.AcquirePermit(context.Background(), "pay", 1, WithAdditionalWait(time.Second))
		errs <- err
	}()
	f.waitIdle("acquire")
	for i := 1; i < 100; i++ {
		f.putForeign(permitKey("pay", 0), "a", fmt.Sprint("a", i), holderLease)
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			continue
		case err := <-errs:
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("AcquirePermit = %v, want ErrLocked", err)
			}
			if waited := f.now().Sub(epoch); waited < holderLease+time.Second {
				t.Fatalf("gave up after %v, before the holder's lease + the additional wait", waited)
			}
			return
		case <-time.After(patience):
			t.Fatal("AcquirePermit neither waited nor returned")
		}
	}
	t.Fatal("never gave up")
}

// Lowering n keeps the permits held; new acquisitions with the new n use
// only its slots. Raising n admits a new holder at once.
func TestChangingTheNumberOfPermits(t *testing.T) {
	f := newFixture(t)
	held := map[string]*Lock{}
	for range 3 {
		l := f.mustPermit("jobs", 3)
		held[l.Key()] = l
	}
	if _, err := f.tryPermit("jobs", 2); !errors.Is(err, ErrLocked) {
		t.Fatalf("a permit of 2 while slots 0 and 1 are held: %v, want ErrLocked", err)
	}
	if err := held[permitKey("jobs", 2)].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tryPermit("jobs", 2); !errors.Is(err, ErrLocked) {
		t.Fatalf("a permit of 2 after slot 2 was released: %v, want ErrLocked (slot 2 is beyond 2 permits)", err)
	}
	if l := f.mustPermit("jobs", 4); l.Key() != permitKey("jobs", 2) && l.Key() != permitKey("jobs", 3) {
		t.Fatalf("a permit of 4 took slot %s, want 2 or 3", l.Key())
	}
	if err := held[permitKey("jobs", 0)].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := f.mustPermit("jobs", 2); l.Key() != permitKey("jobs", 0) {
		t.Fatalf("a permit of 2 took slot %s, want the freed slot 0", l.Key())
	}
}

func TestAcquirePermitRefusesBadCounts(t *testing.T) {
	f := newFixture(t)
	f.freeRun()
	for _, n := range []int{0, -1, 101} {
		if _, err := f.c.AcquirePermit(context.Background(), "x", n); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("AcquirePermit with %d permits: %v, want dynalease.ErrInvalid", n, err)
		}
	}
	if _, err := f.c.AcquirePermit(context.Background(), "x", 2, WithReentrant()); !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("AcquirePermit WithReentrant: %v, want dynalease.ErrInvalid", err)
	}
	f.wantOps()
}

// Polling TryAcquirePermit takes a dead holder's permit once its RVN has
// stayed unchanged for its lease across the calls, as polling TryAcquire
// does for one key: every slot's watch outlives the call that made it,
// not only the watch of a slot the call tried to take.
func TestRepeatedTryAcquirePermitTakesADeadHoldersPermit(t *testing.T) {
	f := newFixture(t)
	f.freeRun()
	const holderLease = 6 * time.Second
	f.putForeign(permitKey("pay", 0), "live", "l0", holderLease)
	f.putForeign(permitKey("pay", 1), "dead", "d0", holderLease)
	for i := 1; ; i++ {
		l, err := f.c.TryAcquirePermit(context.Background(), "pay", 2)
		if err == nil {
			if l.Key() != permitKey("pay", 1) {
				t.Fatalf("took slot %s, want the dead holder's slot 1", l.Key())
			}
			if f.now().Before(epoch.Add(holderLease)) {
				t.Fatalf("took the permit at %v, before the holder's lease of %v", f.now().Sub(epoch), holderLease)
			}
			if f.item(permitKey("pay", 0)).HolderIdentity != "live" {
				t.Fatal("took the live holder's slot")
			}
			return
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("TryAcquirePermit: %v, want ErrLocked until the dead holder's lease has passed", err)
		}
		if i > 20 {
			t.Fatalf("polled for %v, over three of the dead holder's leases, and never took its permit", f.now().Sub(epoch))
		}
		f.putForeign(permitKey("pay", 0), "live", fmt.Sprint("l", i), holderLease) // renews
		f.fc.Step(time.Second)
	}
}

// A permit wait whose budget has run out while a slot is seen
// free but cannot be claimed in process (another call of this client
// works on that key) polls again with no sleep at all: giveUp returns nil
// ("a place was last seen free") and next() caps the wait at until-now,
// which is <= 0. It spun GetMany until the claim was freed; it polls at
// its period now (found by a review of the kernel work).
func TestAPermitWaitDoesNotSpinOnAFreeSlotThisClientClaims(t *testing.T) {
	f := newFixture(t)
	const holderLease = 20 * time.Second
	slot := permitKey("s", 0)
	f.putForeign(slot, "other", "r0", holderLease)
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.AcquirePermit(context.Background(), "s", 1)
		errs <- err
	}()
	f.waitIdle("acquire")
	for i := 1; f.now().Before(epoch.Add(15 * time.Second)); i++ {
		f.putForeign(slot, "other", fmt.Sprint("r", i), holderLease) // renews
		f.fc.Step(maxPoll)
		f.waitIdle("acquire")
	}
	// The slot is released (by its holder, say), and at that moment
	// another call of this client, a plain Acquire of the slot's key, is
	// creating the row (its request slow): it holds the in-process claim.
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: slot},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "rel", LeaseDuration: holderLease, Released: true}})
	block, unblock := gate()
	defer unblock()
	started := make(chan struct{}, 1)
	f.store.OnCall(func(op faulty.Op) {
		if op == faulty.OpCreate {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	})
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Block: block, IgnoreCancel: true})
	go func() { _, _ = f.c.Acquire(context.Background(), slot) }()
	<-started
	f.fc.Step(epoch.Add(holderLease + time.Second).Sub(f.now())) // past the budget
	before := f.store.Count(faulty.OpGetMany)
	time.Sleep(200 * time.Millisecond) // real time; the fake clock does not move
	n := f.store.Count(faulty.OpGetMany) - before
	select {
	case err := <-errs:
		t.Logf("AcquirePermit returned: %v", err)
	default:
	}
	if n > 10 {
		t.Fatalf("%d GetMany requests in 200 ms of real time with the clock stopped: a busy loop", n)
	}
}

// A permit slot whose holder's lease ran out is "due" (wake 0)
// until a takeover of its RVN is sent; when the slot cannot be claimed
// in process (here a plain Acquire of the slot's key by the same client
// is waiting on it), no takeover is ever sent by this wait, so it polls
// GetMany with no sleep at all, within its budget (found by a review of
// the kernel work). A slot passed over is not due in that poll.
func TestAPermitWaitDoesNotSpinOnADueSlotThisClientClaims(t *testing.T) {
	f := newFixture(t)
	const holderLease = 6 * time.Second
	slot := permitKey("s", 0)
	f.putForeign(slot, "other", "r0", holderLease) // silent holder
	go func() { _, _ = f.c.AcquirePermit(context.Background(), "s", 1) }()
	f.waitIdle("acquire")
	f.fc.Step(maxPoll)
	f.waitIdle("acquire")
	go func() { _, _ = f.c.Acquire(context.Background(), slot) }() // holds the claim while it waits
	f.waitIdle("acquire")
	f.fc.Step(epoch.Add(holderLease).Sub(f.now())) // the permit wait's watch of r0 runs out
	select {
	case <-f.idle: // the plain Acquire polls, and sleeps again
	case <-time.After(time.Second):
	}
	before := f.store.Count(faulty.OpGetMany)
	time.Sleep(200 * time.Millisecond)
	if n := f.store.Count(faulty.OpGetMany) - before; n > 10 {
		t.Fatalf("%d GetMany requests in 200 ms of real time with the clock stopped: a busy loop", n)
	}
}

// A permit whose acquiring write's answer was lost (and whose
// read-back failed too) is found landed by the next poll's GetMany, which
// returns rows without Data or Attributes. Round hands that row out as
// the lock's row: the Lock has no data, and its first heartbeat (written
// through the hold lease, without KeepData) erases the data the acquiring
// write stored. It is written again with the call's record before it is
// handed out (found by a review of the kernel work).
func TestAPermitFoundLandedByItsSlotsReadKeepsItsData(t *testing.T) {
	f := newFixture(t)
	slot := permitKey("s", 0)
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errReset})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errReset})
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquirePermit(context.Background(), "s", 1, WithData([]byte("payload")))
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	f.waitIdle("acquire")
	if got := string(f.item(slot).Data); got != "payload" {
		t.Fatalf("row data after the lost create = %q", got)
	}
	f.fc.Step(maxPoll)
	var l *Lock
	select {
	case l = <-locks:
	case err := <-errs:
		t.Fatalf("AcquirePermit: %v", err)
	case <-time.After(patience):
		t.Fatal("stuck")
	}
	f.waitIdle("heartbeat")
	if got := string(l.Data()); got != "payload" {
		t.Errorf("Lock.Data() = %q, want %q", got, "payload")
	}
	f.fc.Step(period)
	f.waitIdle("heartbeat")
	if got := string(f.item(slot).Data); got != "payload" {
		t.Errorf("row data after the first heartbeat = %q, want %q", got, "payload")
	}
}

// A permit won while another slot's write is in doubt: that write is
// released before the permit is handed out, and when that release takes
// so long that the win's validity passes, the win is renewed first: the
// permit returned is held. (Found by the simulator: a process paused while
// the release was under way got a permit already over.)
func TestAPermitWonBesideAWriteInDoubtIsHeldWhenHandedOut(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errors.New("connection reset")}) // one slot's create lands, unseen
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errors.New("connection reset")})                // and the read that would settle it fails
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Stall: func() { f.fc.Step(lease) }})              // releasing it takes a lease
	l, err := f.c.AcquirePermit(context.Background(), "sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !l.IsHeld() {
		t.Fatal("AcquirePermit returned a permit already not held")
	}
	held := 0
	for _, k := range []string{"sem#permit-0", "sem#permit-1"} {
		if it, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: k}); ok && !it.Released {
			held++
		}
	}
	if held != 1 {
		t.Fatalf("%d slots held after the acquisition, want the permit's alone (the other released)", held)
	}
}
