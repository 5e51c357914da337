package election

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/internal/testkit/logtest"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// leading starts h and waits until it leads at epoch.
func (h *harness) leading() {
	h.t.Helper()
	h.start()
	h.waitIdle()
	h.wantEvent("started")
	h.wantOps(faulty.OpCreate)
	h.wantLeaders("a")
}

func TestSteadyLeaderWritesOncePerRetryPeriodAndNeverReads(t *testing.T) {
	h := newHarness(t)
	h.leading()
	rvn := h.record().RVN
	for i := 0; i < 5; i++ {
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate)
		if got, want := h.e.ValidUntil(), h.now().Add(deadline); !got.Equal(want) {
			t.Fatalf("renewal %d: ValidUntil = %v, want %v", i, got, want)
		}
		rec := h.record()
		if rec.RVN == rvn || rec.HolderIdentity != "a" || rec.Acquisitions != 1 {
			t.Fatalf("renewal %d stored %+v", i, rec)
		}
		rvn = rec.RVN
	}
	h.noEvent()
}

func TestAmbiguousRenewalThatLandedIsAdopted(t *testing.T) {
	for _, err := range []error{errReset, fmt.Errorf("SDK retry: %w", resourcelock.ErrConflict)} {
		t.Run(err.Error(), func(t *testing.T) {
			h := newHarness(t)
			h.leading()
			block, unblock := gate()
			entered := make(chan faulty.Op, 1)
			h.lock.OnCall(func(op faulty.Op) { entered <- op })
			h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block, Land: true, Err: err})
			h.step(retry)
			<-entered
			sent := h.now()
			h.lock.OnCall(nil)
			h.step(time.Second) // the answer is slow, then lost
			unblock()
			h.waitIdle()
			h.wantOps(faulty.OpUpdate, faulty.OpGet)
			if got, want := h.e.ValidUntil(), sent.Add(deadline); !got.Equal(want) {
				t.Fatalf("ValidUntil = %v, want the landed attempt's send time + RenewDeadline = %v", got, want)
			}
			// The next renewal is conditioned on the adopted RVN.
			h.stepIdle(retry - time.Second)
			h.wantOps(faulty.OpUpdate)
			if !h.e.IsLeader() {
				t.Fatal("not leader after the next renewal")
			}
			h.noEvent()
		})
	}
}

func TestAmbiguousRenewalThatDidNotLandIsNotAdopted(t *testing.T) {
	h := newHarness(t)
	h.leading()
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})
	h.stepIdle(retry)
	h.wantOps(faulty.OpUpdate, faulty.OpGet)
	if got, want := h.e.ValidUntil(), epoch.Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want unchanged %v", got, want)
	}
	h.stepIdle(retry)
	h.wantOps(faulty.OpUpdate)
	if got, want := h.e.ValidUntil(), h.now().Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", got, want)
	}
}

func TestRenewalTimesOutAfterRequestTimeout(t *testing.T) {
	h := newHarness(t)
	h.leading()
	block, _ := gate()
	entered := make(chan faulty.Op, 1)
	h.lock.OnCall(func(op faulty.Op) { entered <- op })
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block})
	h.step(retry)
	<-entered
	h.lock.OnCall(nil)
	h.step(h.e.cfg.RequestTimeout - time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if n := h.lock.Count(faulty.OpUpdate); n != 0 {
		t.Fatalf("renewal returned before its timeout")
	}
	h.stepIdle(time.Millisecond)
	// The next renewal fell due while this one was under way (the request
	// timeout is the retry period here): it is sent at once.
	h.waitIdle()
	h.wantOps(faulty.OpUpdate, faulty.OpGet, faulty.OpUpdate)
	if got, want := h.e.ValidUntil(), h.now().Add(deadline); !h.e.IsLeader() || !got.Equal(want) {
		t.Fatalf("one timed-out renewal: leader %v, ValidUntil %v, want leading until %v", h.e.IsLeader(), got, want)
	}
}

func TestForeignRVNStepsDownAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		put    func(h *harness)
		reason dynalease.LostReason
		holder string
	}{
		{"taken", func(h *harness) { h.putForeign("b", "stolen") }, dynalease.Stolen, "b"},
		{"released", func(h *harness) {
			h.store.Put(lockName, resourcelock.Record{HolderIdentity: "b", RVN: "x", LeaseDuration: lease, Released: true})
		}, dynalease.ReleasedElsewhere, "b"},
		{"deleted", func(h *harness) { h.store.Delete(lockName) }, dynalease.Deleted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.leading()
			h.stepIdle(retry)
			h.wantOps(faulty.OpUpdate)
			tc.put(h)
			h.freeRun()
			h.step(retry)
			err := h.result()
			var lost *dynalease.LostError
			if !errors.Is(err, dynalease.ErrLost) || !errors.As(err, &lost) || lost.Reason != tc.reason || lost.HolderIdentity != tc.holder {
				t.Fatalf("Run = %v, want dynalease.ErrLost and a LostError (%v, holder %q)", err, tc.reason, tc.holder)
			}
			h.wantOps(faulty.OpUpdate, faulty.OpGet)
			h.wantEvents("stopped", "work returned")
			if h.e.IsLeader() || !h.e.ValidUntil().IsZero() {
				t.Fatal("still leader after the record was found lost")
			}
			if tc.name == "taken" {
				h.wantLeaders("b")
			}
		})
	}
}

func TestStepDownAfterRenewDeadlineOfFailedRenewals(t *testing.T) {
	h := newHarness(t)
	h.leading()
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	ctx := h.leaderCtx()
	for i := 1; i <= 4; i++ { // renewals at 2, 4, 6, 8 s all fail
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate, faulty.OpGet)
	}
	h.step(deadline - 4*retry - time.Millisecond)
	if !h.e.IsLeader() || ctx.Err() != nil {
		t.Fatal("stepped down before RenewDeadline passed")
	}
	h.freeRun()
	h.step(time.Millisecond)
	if h.e.IsLeader() {
		t.Fatal("IsLeader true at RenewDeadline after the last confirmed send")
	}
	err := h.result()
	var lost *dynalease.LostError
	if !errors.Is(err, dynalease.ErrLost) || !errors.As(err, &lost) || lost.Reason != dynalease.Expired || !errors.Is(err, errReset) {
		t.Fatalf("Run = %v, want dynalease.ErrLost, an Expired LostError, and the renewals' failure", err)
	}
	h.wantEvents("stopped", "work returned")
	if ctx.Err() == nil {
		t.Fatal("the leader's context was not cancelled")
	}
}

func TestIsLeaderTurnsFalseWhileTheLoopIsStuck(t *testing.T) {
	h := newHarness(t)
	h.leading()
	ctx := h.leaderCtx()
	stuck, unstick := gate()
	defer unstick()
	entered := make(chan faulty.Op, 1)
	h.lock.OnCall(func(op faulty.Op) { entered <- op })
	// An implementation that ignores its context hangs the renewal.
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: stuck, IgnoreCancel: true})
	h.step(retry)
	<-entered
	h.step(deadline - retry - time.Millisecond)
	if !h.e.IsLeader() {
		t.Fatal("stepped down early")
	}
	h.step(time.Millisecond)
	if h.e.IsLeader() {
		t.Fatal("IsLeader stayed true past the validity while the loop was stuck")
	}
	// Bug 13 of the engine issue: Leader never names a term that ended.
	if l := h.e.Leader(); l == h.e.Identity() {
		t.Fatalf("Leader() = %q after its term ended", l)
	}
	// The term's own timer cancels the work and runs OnStoppedLeading
	// although the loop is still stuck in the renewal.
	h.wantEvents("stopped", "work returned")
	if ctx.Err() == nil {
		t.Fatal("leader's context not cancelled")
	}
	select {
	case err := <-h.done:
		t.Fatalf("Run returned %v while its loop was stuck", err)
	default:
	}
	h.freeRun()
	unstick()
	if err := h.result(); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Run = %v, want dynalease.ErrLost", err)
	}
}

func TestCheckReportsWorkOutlivingTheTerm(t *testing.T) {
	h := newHarness(t, withStubbornWork())
	h.leading()
	if err := h.e.Check(0); err != nil {
		t.Fatalf("Check while leading: %v", err)
	}
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	h.freeRun()
	h.step(deadline) // the renewal at 2 s fails; validity passes at 10 s
	h.wantEvent("stopped")
	const tolerance = 5 * time.Second
	h.step(tolerance)
	if err := h.e.Check(tolerance); err != nil {
		t.Fatalf("Check within tolerance: %v", err)
	}
	h.step(time.Millisecond)
	if err := h.e.Check(tolerance); err == nil {
		t.Fatal("Check passed while the leader's work outlived its term")
	}
	close(h.holdWork)
	h.wantEvent("work returned")
	if err := h.result(); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Run = %v", err)
	}
	if err := h.e.Check(tolerance); err != nil {
		t.Fatalf("Check after the work returned: %v", err)
	}
}

func TestReleaseOnCancelReleasesAfterTheWorkReturned(t *testing.T) {
	h := newHarness(t, withReleaseOnCancel(), withStubbornWork())
	h.leading()
	h.step(time.Second)
	h.cancel()
	h.waitIdle() // the loop noticed the cancel
	// The leader keeps renewing while its work winds down.
	for i := 0; i < 3; i++ {
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate)
		if h.record().Released || !h.e.IsLeader() {
			t.Fatal("released, or stopped leading, before the work returned")
		}
	}
	h.freeRun()
	close(h.holdWork)
	h.wantEvent("work returned")
	h.wantEvent("stopped")
	if rec := <-h.atStop; !rec.Released {
		t.Fatal("OnStoppedLeading ran before the release landed")
	}
	if err := h.result(); !errors.Is(err, errCanceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	h.wantOps(faulty.OpUpdate)
	if rec := h.record(); !rec.Released || rec.HolderIdentity != "a" {
		t.Fatalf("record after release: %+v", rec)
	}
	if h.e.IsLeader() || h.e.Leader() != "" {
		t.Fatalf("IsLeader=%v Leader=%q after release", h.e.IsLeader(), h.e.Leader())
	}
}

func TestReleaseOnCancelGivesUpWhenWorkDoesNotReturn(t *testing.T) {
	h := newHarness(t, withReleaseOnCancel(), withStubbornWork())
	h.leading()
	h.step(time.Second)
	h.cancel()
	h.waitIdle()
	for h.now().Before(epoch.Add(time.Second + deadline - retry)) { // renewals at 2..10 s
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate)
	}
	lastSend := h.now()
	h.step(time.Second) // 11 s: RenewDeadline after the cancel; renewing stops
	h.freeRun()
	validUntil := lastSend.Add(deadline)
	h.step(validUntil.Sub(h.now()) - time.Millisecond)
	if !h.e.IsLeader() {
		t.Fatal("stopped leading before the last renewal's validity passed")
	}
	h.noEvent()
	h.step(time.Millisecond)
	if h.e.IsLeader() {
		t.Fatal("still leader after validity passed")
	}
	h.wantEvent("stopped")
	select {
	case err := <-h.done:
		t.Fatalf("Run returned %v before OnStartedLeading did", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(h.holdWork)
	if err := h.result(); !errors.Is(err, errCanceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	h.wantOps()
	if h.record().Released {
		t.Fatal("released although the work had not returned")
	}
}

func TestCancelWithoutReleaseLeavesTheRecordHeld(t *testing.T) {
	h := newHarness(t)
	h.leading()
	h.freeRun()
	h.cancel()
	h.wantEvent("work returned")
	h.wantEvent("stopped")
	if err := h.result(); !errors.Is(err, errCanceled) {
		t.Fatalf("Run = %v", err)
	}
	h.wantOps()
	if rec := h.record(); rec.Released || rec.HolderIdentity != "a" {
		t.Fatalf("record %+v", rec)
	}
	if h.e.IsLeader() {
		t.Fatal("IsLeader after Run returned")
	}
}

func TestRunAgainAfterReleaseLeadsAgain(t *testing.T) {
	h := newHarness(t, withReleaseOnCancel())
	h.leading()
	h.freeRun()
	h.cancel()
	h.wantEvents("work returned", "stopped")
	if err := h.result(); !errors.Is(err, errCanceled) {
		t.Fatalf("Run = %v", err)
	}
	h.lock.ResetCalls()
	h.free = make(chan struct{})
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate)
	h.wantEvent("started")
	if rec := h.record(); rec.Acquisitions != 2 {
		t.Fatalf("transitions = %d, want 2", rec.Acquisitions)
	}
}

func TestTermCountsFromTheSendOfASlowRenewal(t *testing.T) {
	h := newHarness(t)
	h.leading()
	block, unblock := gate()
	entered := make(chan faulty.Op, 1)
	h.lock.OnCall(func(op faulty.Op) { entered <- op })
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block})
	h.step(retry)
	<-entered
	sent := h.now()
	h.lock.OnCall(nil)
	h.step(1500 * time.Millisecond) // the answer arrives 1.5 s later
	unblock()
	h.waitIdle()
	h.wantOps(faulty.OpUpdate)
	if got, want := h.e.ValidUntil(), sent.Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want send time + RenewDeadline = %v (not from the answer)", got, want)
	}
}

func TestLeaderContextDeadlineIsTheCurrentValidity(t *testing.T) {
	h := newHarness(t)
	h.leading()
	ctx := h.leaderCtx()
	for i := 0; i < 3; i++ {
		d, ok := ctx.Deadline()
		if !ok || !d.Equal(h.e.ValidUntil()) {
			t.Fatalf("Deadline() = %v, %v; want ValidUntil %v", d, ok, h.e.ValidUntil())
		}
		derived, cancel := context.WithCancel(ctx)
		if dd, _ := derived.Deadline(); !dd.Equal(d) {
			t.Fatalf("a derived context's deadline %v, want %v", dd, d)
		}
		cancel()
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate)
	}
}

// TestWorkReturningAfterValidityPassedIsALoss covers the window in which
// the leader's work has returned because its validity ran out (it checked
// IsLeader) before the term's own timer ended the term.
func TestWorkReturningAfterValidityPassedIsALoss(t *testing.T) {
	h := newHarness(t)
	r := newRun(h.e)
	r.cur.RVN = "rvn"
	stopped := 0
	// Valid until a second ago.
	tm := newTerm(context.Background(), h.e.k, &r.hold, h.e.lease.Describe(), h.now().Add(-time.Second-h.e.cfg.termValidity()), func() { stopped++ })
	tm.began = true // its work ran, and returned
	close(tm.workDone)
	err := r.finish(context.Background(), tm)
	var lost *dynalease.LostError
	if !errors.Is(err, dynalease.ErrLost) || !errors.As(err, &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("finish = %v, want a loss by validity", err)
	}
	if stopped != 1 {
		t.Fatalf("OnStoppedLeading ran %d times", stopped)
	}
	h.wantOps() // no release attempted
}

// withLog records the elector's log.
func withLog(rec *logtest.Recorder) harnessOption {
	return func(_ *harness, c *Config) { c.Logger = rec.Logger() }
}

// A pause can make a renewal fall due together with the cancel's bound (or
// with the end of the term). Go's select picks at random among ready cases,
// so each scenario runs many times: a renewal must never win.
func TestNoRenewalOnceTheCancelsBoundFellDueWithIt(t *testing.T) {
	const gaveUp = "the leader's work did not return within RenewDeadline of the cancel; not releasing, the lease will run out"
	for i := 0; i < 32; i++ {
		log := &logtest.Recorder{}
		h := newHarness(t, withReleaseOnCancel(), withStubbornWork(), withLog(log))
		h.leading()
		h.step(time.Second)
		h.cancel()
		h.waitIdle()      // bound: 11 s
		h.stepIdle(retry) // 3 s: renewed, valid until 13 s
		h.wantOps(faulty.OpUpdate)
		h.freeRun()
		h.step(deadline - retry + time.Second/2) // 11.5 s: renewal (due 5 s) and bound ready at once
		eventually(t, "the leader gave up renewing", func() bool { return len(log.Find(gaveUp)) > 0 })
		h.wantOps()
		if !h.e.IsLeader() {
			t.Fatal("stopped leading before the last renewal's validity passed")
		}
		h.step(time.Second + time.Second/2) // 13 s: the term ends by itself
		h.wantEvent("stopped")
		close(h.holdWork)
		if err := h.result(); !errors.Is(err, errCanceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		h.wantOps()
	}
}

func TestNoRenewalOnceTheTermEndedWithItsDueTime(t *testing.T) {
	for i := 0; i < 32; i++ {
		h := newHarness(t)
		h.leading()
		h.freeRun()
		h.step(deadline) // a pause: renewals due since 2 s, validity ended at 10 s
		h.wantEvents("stopped", "work returned")
		if err := h.result(); !errors.Is(err, dynalease.ErrLost) {
			t.Fatalf("Run = %v, want dynalease.ErrLost", err)
		}
		h.wantOps()
	}
}

// termUntil starts a term of lease on a kernel of its own on clk, valid
// until validUntil.
func termUntil(clk timing.Clock, lease string, validUntil time.Time, onStopped func()) *term {
	const validity = time.Second
	k := rvnlease.New(rvnlease.Settings[*term]{Clock: clk, Validity: validity,
		HoldOf: func(t *term) *rvnlease.Hold { return t.hold }, Expire: (*term).expired})
	return newTerm(context.Background(), k, &rvnlease.Hold{}, lease, validUntil.Add(-validity), onStopped)
}

// A term whose validity passed before lead had set it up ends at once on
// its own timer; the loss names the lease all the same (the race detector
// watches the timer read what newTerm set).
func TestATermExpiredAtItsStartNamesItsLease(t *testing.T) {
	tm := termUntil(timing.Real(), "memory/lease-x", time.Now().Add(-time.Second), func() {})
	select {
	case <-tm.done:
	case <-time.After(patience):
		t.Fatal("a term past its validity never ended")
	}
	var lost *dynalease.LostError
	if !errors.As(tm.endCause(), &lost) || lost.Reason != dynalease.Expired || lost.Lease != "memory/lease-x" {
		t.Fatalf("end cause %v, want Expired naming memory/lease-x", tm.endCause())
	}
}

// A confirmed renewal clears an earlier renewal's failure: a term that
// expires later does not report a long-past failure as its cause.
func TestAConfirmedRenewalClearsTheLastFailure(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	tm := termUntil(fc, "memory/lease-x", fc.Now().Add(time.Second), func() {})
	tm.renewalFailed(errors.New("throttled"))
	if !tm.extend(fc.Now().Add(time.Second)) { // valid until 2 s from now
		t.Fatal("extend refused on a running term")
	}
	fc.Step(3 * time.Second)
	select {
	case <-tm.done:
	case <-time.After(patience):
		t.Fatal("the term never expired")
	}
	var lost *dynalease.LostError
	if !errors.As(tm.endCause(), &lost) || lost.Reason != dynalease.Expired || lost.Cause != nil {
		t.Fatalf("end cause %v, want Expired without a cause", tm.endCause())
	}
}
