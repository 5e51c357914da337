package rvnlease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

const (
	lease    = 10 * time.Second
	validity = 8 * time.Second
	period   = time.Second
)

var (
	key        = resourcelock.Key{Partition: "k"}
	errTimeout = errors.New("request timed out")
)

// engine is an acquirer and a holder named "me" over one faulty in-memory
// row, on a fake clock. Rounds run in the test's goroutine: nothing races
// the clock.
type engine struct {
	t     *testing.T
	fc    *clocktesting.FakeClock
	mem   *memorystore.Store
	fs    *faulty.Store
	acq   *Acquirer
	hld   *Hold
	lease *keylease.Lease
}

func newEngine(t *testing.T) *engine {
	e := &engine{t: t, fc: clocktesting.NewFakeClock(t0), mem: memorystore.New()}
	e.fs = faulty.New(rows.MustOpen(e.mem))
	cfg := Config{Clock: e.fc, Identity: "me", RequestTimeout: time.Second, Validity: validity}
	lease, err := keylease.New(e.fs, key, "me")
	if err != nil {
		t.Fatal(err)
	}
	e.lease = lease
	e.acq = NewAcquirer(&cfg, lease, func(rows.Item) resourcelock.Record { return e.record(false) })
	e.hld = NewHold(&cfg, lease)
	return e
}

func (e *engine) record(released bool) resourcelock.Record {
	return resourcelock.Record{HolderIdentity: "me", RVN: uuid.NewString(), LeaseDuration: lease, Released: released}
}

// put stores a row of holder at rvn, as another client would.
func (e *engine) put(holder, rvn string, released bool) {
	rows.MustRaw(e.mem).PutItem(rows.Item{Key: key, Record: resourcelock.Record{HolderIdentity: holder, RVN: rvn, LeaseDuration: lease, Released: released}})
}

func (e *engine) round() Result {
	e.t.Helper()
	res, err := e.acq.Round(context.Background())
	if err != nil {
		e.t.Fatalf("Round: %v", err)
	}
	return res
}

// wantOps checks the requests since the last call.
func (e *engine) wantOps(want ...faulty.Op) {
	e.t.Helper()
	var got []faulty.Op
	for _, c := range e.fs.Calls() {
		got = append(got, c.Op)
	}
	e.fs.ResetCalls()
	if !slices.Equal(got, want) {
		e.t.Fatalf("requests %v, want %v", got, want)
	}
}

// releaseBeforeTheNextRead marks the row released, keeping its RVN (as a
// forced release and the AWS Java client's release do), just before the
// next read reaches the store.
func (e *engine) releaseBeforeTheNextRead() {
	released := false
	e.fs.OnCall(func(op faulty.Op) {
		if op == faulty.OpGet && !released {
			released = true
			it, _ := rows.MustRaw(e.mem).Item(key)
			it.Released = true
			rows.MustRaw(e.mem).PutItem(it)
		}
	})
}

func (e *engine) row() rows.Item {
	it, _ := rows.MustRaw(e.mem).Item(key)
	return it
}

// A failed create, takeover and renewal each cost one request: the
// conflict carries the row, which settles the write and is observed from
// when the answer returned.
func TestFailedWritesTakeOneRequest(t *testing.T) {
	e := newEngine(t)
	e.put("other", "r1", false)
	if res := e.round(); res.Found != Others {
		t.Fatalf("create over a held row: %v", res.Found)
	}
	e.wantOps(faulty.OpCreate)
	if o := e.acq.Obs; o.RVN != "r1" || o.Holder != "other" || !o.SeenAt.Equal(t0) {
		t.Fatalf("observation %+v, want r1 of other seen at t0", o)
	}

	// The holder renews just as the takeover falls due: the takeover is
	// refused, and the new RVN is observed from the refusal.
	e.fc.Step(lease)
	e.put("other", "r2", false)
	if !e.acq.TakeoverDue() {
		t.Fatal("takeover not due after the holder's lease")
	}
	if res := e.round(); res.Found != Others {
		t.Fatalf("takeover of a renewed row: %v", res.Found)
	}
	e.wantOps(faulty.OpUpdate)
	if o := e.acq.Obs; o.RVN != "r2" || !o.SeenAt.Equal(t0.Add(lease)) {
		t.Fatalf("observation %+v, want r2 seen at the refusal", o)
	}

	// A holder whose row was taken: one request, and the loss.
	rows.MustRaw(e.mem).DeleteItem(key)
	res := e.round()
	if res.Found != Ours {
		t.Fatalf("create over a deleted row: %v", res.Found)
	}
	e.put("thief", "r3", false)
	e.fs.ResetCalls()
	w := e.hld.Write(context.Background(), res.Item, e.record(false))
	if !w.Lost || w.Item.HolderIdentity != "thief" {
		t.Fatalf("renewal of a taken row: %+v", w)
	}
	e.wantOps(faulty.OpUpdate)
}

// A store that gives no row back on a failed condition costs a read.
func TestWithoutConflictRowsAFailedWriteIsSettledByARead(t *testing.T) {
	e := newEngine(t)
	e.fs.HideConflictRows(true)
	e.put("other", "r1", false)
	if res := e.round(); res.Found != Others || e.acq.Obs.RVN != "r1" {
		t.Fatalf("create over a held row: %v, %+v", res.Found, e.acq.Obs)
	}
	e.wantOps(faulty.OpCreate, faulty.OpGet)
}

// A create whose answer was lost but which landed is ours, from its send
// time, with no second write.
func TestLostAnswerOfALandedCreateIsOurs(t *testing.T) {
	e := newEngine(t)
	e.fs.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errTimeout})
	res := e.round()
	if res.Found != Ours || !res.Sent.Equal(t0) || res.Item.RVN != e.row().RVN {
		t.Fatalf("round: %+v, row %+v", res, e.row().Record)
	}
	e.wantOps(faulty.OpCreate, faulty.OpGet)
	if e.acq.Pending() != 0 {
		t.Fatalf("%d writes still in doubt after a confirmation", e.acq.Pending())
	}
}

// Bug 3 of the engine issue: a row that carries one of our RVNs but is
// marked released (a forced release keeps the RVN, as the AWS Java
// client's release does) is not ours: anyone may create it at once.
func TestReleasedRowWithOurRVNIsNotOurs(t *testing.T) {
	e := newEngine(t)
	e.fs.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errTimeout})
	e.releaseBeforeTheNextRead() // an operator releases the row our lost create wrote
	if res := e.round(); res.Found == Ours {
		t.Fatalf("a released row was taken as held: %+v", res.Item.Record)
	}
	e.fs.OnCall(nil)
	if !e.acq.Obs.Free() {
		t.Fatalf("the released row is not seen as free: %+v", e.acq.Obs)
	}
	// The next round takes it with a write of its own.
	if res := e.round(); res.Found != Ours || res.Item.Released {
		t.Fatalf("second round: %+v", res)
	}

	// The same for a holder: its renewal landed, its answer was lost,
	// and the row was force-released before the read.
	cur := e.row()
	e.fs.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errTimeout})
	e.releaseBeforeTheNextRead()
	w := e.hld.Write(context.Background(), cur, e.record(false))
	if w.Landed || !w.Lost {
		t.Fatalf("renewal found force-released: %+v, want lost", w)
	}
	e.fs.OnCall(nil)
}

// A release whose answer was lost is found landed: its own RVN, released.
func TestLostAnswerOfALandedReleaseIsLanded(t *testing.T) {
	e := newEngine(t)
	res := e.round()
	e.fs.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errTimeout})
	rec := e.record(true)
	w := e.hld.Write(context.Background(), res.Item, rec)
	if !w.Landed || w.Item.RVN != rec.RVN || !w.Item.Released {
		t.Fatalf("release: %+v", w)
	}
}

// A takeover is due at once when the lease ran out, but only once per
// RVN: a takeover that failed waits a poll.
func TestTakeoverIsDueOncePerRVN(t *testing.T) {
	e := newEngine(t)
	e.put("other", "r1", false)
	e.round()
	if w := e.wait(); w <= 0 || w > timing.MaxJittered(period) {
		t.Fatalf("Wait while held = %v, want a jittered period", w)
	}
	e.fc.Step(lease - 300*time.Millisecond)
	if w := e.wait(); w != 300*time.Millisecond {
		t.Fatalf("Wait just before the expiry = %v, want the time to it", w)
	}
	e.fc.Step(300 * time.Millisecond)
	if w := e.wait(); w != 0 || !e.acq.TakeoverDue() {
		t.Fatalf("Wait at the expiry = %v, want 0", w)
	}
	e.fs.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errTimeout})
	e.fs.Inject(faulty.OpGet, 1, faulty.Fault{Err: errTimeout})
	if res := e.round(); res.Found != Unknown || !errors.Is(res.Err, errTimeout) {
		t.Fatalf("failed takeover: %+v", res)
	}
	if e.acq.TakeoverDue() {
		t.Fatal("a takeover of the same RVN is due again at once after failing")
	}
	if w := e.wait(); w <= 0 {
		t.Fatalf("Wait after a failed takeover = %v, want a poll", w)
	}
	if res := e.round(); res.Found != Ours {
		t.Fatalf("retried takeover: %+v", res)
	}
}

// A write confirmed after its validity passed is renewed at once, and the
// lease counts from the renewal's send.
func TestLateConfirmationIsRenewedAtOnce(t *testing.T) {
	e := newEngine(t)
	e.acq.w.cfg.RequestTimeout = time.Hour // the clock steps during a read
	e.fs.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errTimeout})
	e.fs.OnCall(func(op faulty.Op) {
		if op == faulty.OpGet {
			e.fc.Step(validity) // the read returns after the validity
		}
	})
	res := e.round()
	e.fs.OnCall(nil)
	if res.Found != Ours || !res.Sent.Equal(t0.Add(validity)) {
		t.Fatalf("round: %+v, want ours from the renewal's send", res)
	}
	e.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpUpdate)
}

// Errors that waiting cannot fix end the round with their cause.
func TestPermanentErrorsEndTheRound(t *testing.T) {
	e := newEngine(t)
	rows.MustRaw(e.mem).PutItem(rows.Item{Key: key, Record: resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: lease}})
	gone := fmt.Errorf("the store is gone: %w", resourcelock.ErrPermanent)
	e.fs.Inject(faulty.OpCreate, 1, faulty.Fault{Err: gone})
	if _, err := e.acq.Round(context.Background()); !errors.Is(err, gone) {
		t.Fatalf("Round = %v, want the permanent error", err)
	}
	e.fs.Inject(faulty.OpGet, 1, faulty.Fault{Err: resourcelock.ErrPermanent})
	e.acq.Obs = Observation{Known: true, RVN: "r1", Lease: lease, SeenAt: e.fc.Now()}
	if _, err := e.acq.Round(context.Background()); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("Round = %v, want an invalid record (resourcelock.ErrPermanent)", err)
	}
}

// Bug 7 of the engine issue: a candidate that keeps losing races does not
// remember every RVN it ever tried.
func TestWritesInDoubtAreBounded(t *testing.T) {
	e := newEngine(t)
	for i := range 100 {
		// Every takeover times out and the row has moved on by the read.
		rvn := uuid.NewString()
		e.put("other", rvn, false)
		e.acq.Obs = Observation{Known: true, RVN: rvn, Lease: lease, SeenAt: e.fc.Now().Add(-lease)}
		e.fs.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errTimeout})
		e.put("other", uuid.NewString(), false)
		e.round()
		if n := e.acq.Pending(); n > 1 {
			t.Fatalf("round %d: %d writes in doubt, want at most the last", i, n)
		}
	}
	for i := range 100 {
		// Creates whose answers are lost pile up only to the bound.
		e.fs.Inject(faulty.OpCreate, 1, faulty.Fault{Err: errTimeout})
		e.acq.Obs = Observation{Known: true, Missing: true}
		e.round()
		if n := e.acq.Pending(); n > maxAttempts {
			t.Fatalf("round %d: %d writes in doubt, want at most %d", i, n, maxAttempts)
		}
	}
}

func TestAttempts(t *testing.T) {
	var a Attempts
	a.Add("x", "", false, t0)
	a.Add("y", "r1", false, t0.Add(time.Second))
	a.Add("z", "r1", true, t0.Add(2*time.Second))
	if s, ok := a.Landed("x", false); !ok || !s.Equal(t0) {
		t.Fatal("attempt x lost")
	}
	if _, ok := a.Landed("y", true); ok {
		t.Fatal("a renewal found in a released row counted as landed")
	}
	if _, ok := a.Landed("z", true); !ok {
		t.Fatal("a release found in a released row not counted as landed")
	}
	a.Forget("r2")
	if _, ok := a.Landed("y", false); ok || a.Len() != 1 {
		t.Fatalf("writes conditioned on a replaced RVN kept: %d left", a.Len())
	}
	a.Settle("x")
	if a.Len() != 0 {
		t.Fatal("Settle kept the attempt")
	}
	for i := range 3 * maxAttempts {
		a.Add(uuid.NewString(), "", false, t0.Add(time.Duration(i)))
	}
	if a.Len() != maxAttempts {
		t.Fatalf("%d attempts kept, want %d", a.Len(), maxAttempts)
	}
	a.Clear()
	if a.Len() != 0 {
		t.Fatal("Clear kept an attempt")
	}
}

// wait is how long the wait loop sleeps after a poll of e's acquirer alone,
// with the poll period period.
func (e *engine) wait() time.Duration {
	s := &waiting{Wait: Wait{Engine: &Config{Clock: e.fc}, Period: period}, at: []placeState{{Acquirer: e.acq}}}
	return s.wake(e.fc.Now())
}
