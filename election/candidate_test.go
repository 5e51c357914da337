package election

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

func TestAcquireWithoutRecord(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.waitIdle()
	h.wantEvent("started")
	h.wantOps(faulty.OpCreate)
	h.wantLeaders("a")
	if !h.e.IsLeader() || h.e.Leader() != "a" {
		t.Fatalf("IsLeader=%v Leader=%q after acquiring", h.e.IsLeader(), h.e.Leader())
	}
	if got, want := h.e.ValidUntil(), epoch.Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want send time + RenewDeadline = %v", got, want)
	}
	rec := h.record()
	if rec.HolderIdentity != "a" || rec.LeaseDuration != lease || rec.Acquisitions != 1 || rec.Released {
		t.Fatalf("stored record %+v", rec)
	}
}

func TestAcquireReleasedRecordAtOnce(t *testing.T) {
	h := newHarness(t)
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "b", RVN: "r1", LeaseDuration: time.Hour, Released: true, Acquisitions: 4})
	h.start()
	h.waitIdle()
	h.wantEvent("started")
	h.wantOps(faulty.OpCreate)
	if rec := h.record(); rec.HolderIdentity != "a" || rec.Released || rec.Acquisitions != 5 {
		t.Fatalf("stored record %+v", rec)
	}
}

// A candidate that has not yet seen the row creates it blindly, with a
// write that takes a missing or released row. Sent while another holds,
// such a create may land after that holder's release: legitimately, since
// the holder's term ended before its release was sent. The term begins
// only when the create is confirmed, and its validity counts from the
// create's send, earlier than the release: shorter, never longer. (So a
// check of disjoint terms counts a term from its confirmation, not from
// its acquiring write's send.)
func TestCreateSentWhileHeldMayLandAfterTheRelease(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	block, unblock := gate()
	entered := h.holdNext(faulty.OpCreate, faulty.Fault{Block: block})
	h.start()
	h.waitCall(entered, faulty.OpCreate) // sent at epoch while b holds, now held on its way
	h.step(time.Second)
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "b", RVN: "r2", LeaseDuration: lease, Released: true})
	h.noEvent()
	unblock()
	h.waitIdle()
	h.lock.OnCall(nil)
	h.wantOps(faulty.OpCreate)
	h.wantEvent("started")
	if rec := h.record(); rec.HolderIdentity != "a" || rec.Released {
		t.Fatalf("stored record %+v, want a's", rec)
	}
	if got, want := h.e.ValidUntil(), epoch.Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v (from the create's send, before the release)", got, want)
	}
}

// advanceUntilLeading steps the clock by the longest poll interval until
// the candidate leads, checking that every wake before notBefore was a
// plain read and that the wake at or after it took the lease over.
func (h *harness) advanceUntilLeading(notBefore time.Time) {
	h.t.Helper()
	for i := 0; i < 100; i++ {
		h.stepIdle(maxPoll)
		if h.now().Before(notBefore) {
			h.wantReads()
			h.noEvent()
			continue
		}
		h.wantOps(faulty.OpUpdate)
		h.wantEvent("started")
		return
	}
	h.t.Fatal("never took over")
}

func TestTakeoverAfterFullLeaseOfUnchangedRVN(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.wantLeaders("b")
	if h.e.IsLeader() || h.e.Leader() != "b" {
		t.Fatalf("IsLeader=%v Leader=%q while b holds", h.e.IsLeader(), h.e.Leader())
	}
	h.advanceUntilLeading(epoch.Add(lease))
	h.wantLeaders("a")
	if rec := h.record(); rec.HolderIdentity != "a" || rec.Acquisitions != 1 {
		t.Fatalf("stored record after takeover %+v", rec)
	}
}

func TestCandidateWakesWhenTheWatchedLeaseExpires(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	expiry := epoch.Add(lease)
	// Poll until less than one poll interval is left.
	for expiry.Sub(h.now()) >= retry {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpGet)
	}
	// The next wake is the expiry itself, not a jittered poll.
	h.step(expiry.Sub(h.now()) - time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	h.wantOps()
	h.step(time.Millisecond)
	h.waitIdle()
	h.wantOps(faulty.OpUpdate)
	h.wantEvent("started")
	if got, want := h.e.ValidUntil(), expiry.Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", got, want)
	}
}

func TestLeaseCountsFromWhenTheReadReturned(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	block, unblock := gate()
	entered := h.holdNext(faulty.OpGet, faulty.Fault{Block: block})
	h.start()
	h.waitCall(entered, faulty.OpGet) // after the create, now held
	h.step(time.Second)
	unblock()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.lock.OnCall(nil)
	h.advanceUntilLeading(epoch.Add(time.Second + lease))
}

func TestWaitRestartsWhenTheRVNChanges(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	for i := 0; i < 3; i++ {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpGet)
	}
	h.putForeign("b", "r2") // b renewed
	h.stepIdle(maxPoll)
	h.wantReads()
	seen := h.now()
	h.advanceUntilLeading(seen.Add(lease))
}

func TestRenewalJustBeforeTakeoverRestartsTheWait(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	expiry := epoch.Add(lease)
	for expiry.Sub(h.now()) >= retry {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpGet)
	}
	h.putForeign("b", "r2") // renewed after our last read
	h.stepIdle(expiry.Sub(h.now()))
	// The takeover is conditioned on r1 and fails; the read that resolves
	// it sees r2 and the wait starts again from now.
	h.wantOps(faulty.OpUpdate, faulty.OpGet)
	h.noEvent()
	if rec := h.record(); rec.HolderIdentity != "b" || rec.RVN != "r2" {
		t.Fatalf("record after a failed takeover: %+v", rec)
	}
	h.advanceUntilLeading(expiry.Add(lease))
}

func TestRestartedProcessWithSameIdentityWaits(t *testing.T) {
	h := newHarness(t)
	// An earlier process called "a" left a live record.
	h.putForeign("a", "rvn-of-the-previous-process")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	if h.e.IsLeader() {
		t.Fatal("a record naming our identity made us leader")
	}
	h.advanceUntilLeading(epoch.Add(lease))
}

func TestReleasedRecordTakenAtNextAttempt(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "b", RVN: "r2", LeaseDuration: lease, Released: true})
	h.stepIdle(maxPoll)
	// The read that finds it released is followed by the create at once.
	h.wantOps(faulty.OpGet, faulty.OpCreate)
	h.wantEvent("started")
}

func TestOnNewLeaderOnEveryChange(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantLeaders("b")
	h.stepIdle(maxPoll) // same holder: no report
	h.noLeaderReport()
	h.putForeign("c", "r2")
	h.stepIdle(maxPoll)
	h.wantLeaders("c")
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "c", RVN: "r3", LeaseDuration: lease, Released: true})
	h.lock.Inject(faulty.OpCreate, 1, faulty.Fault{Err: resourcelock.ErrConflict})
	h.lock.Inject(faulty.OpGet, 1, faulty.Fault{}) // the read that sees the release
	h.lock.Inject(faulty.OpGet, 1, faulty.Fault{Err: errReset})
	h.stepIdle(maxPoll) // released: no report; our create is refused
	h.noLeaderReport()
	if h.e.Leader() != "" {
		t.Fatalf("Leader() = %q with a released record", h.e.Leader())
	}
	h.putForeign("c", "r4") // the same holder again, in a new term
	h.stepIdle(maxPoll)
	h.wantLeaders("c")
	h.store.Delete(lockName)
	h.stepIdle(maxPoll)
	h.wantLeaders("a")
}

func TestCandidateCancelledWithoutLeadingGetsNoStoppedCallback(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.cancel()
	if err := h.result(); err == nil || err.Error() != "context canceled" {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	h.noEvent()
}

func TestAmbiguousCreateThatLandedIsAdopted(t *testing.T) {
	for _, err := range []error{errReset, fmt.Errorf("retried: %w", resourcelock.ErrConflict)} {
		t.Run(err.Error(), func(t *testing.T) {
			h := newHarness(t)
			h.lock.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: err})
			h.start()
			h.waitIdle()
			h.wantOps(faulty.OpCreate, faulty.OpGet)
			h.wantEvent("started")
			if got, want := h.e.ValidUntil(), epoch.Add(deadline); !got.Equal(want) {
				t.Fatalf("ValidUntil = %v, want %v", got, want)
			}
		})
	}
}

func TestAmbiguousCreateThatDidNotLandIsRetried(t *testing.T) {
	h := newHarness(t)
	h.lock.Inject(faulty.OpCreate, 1, faulty.Fault{Err: errReset})
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.noEvent()
	h.stepIdle(maxPoll)
	h.wantOps(faulty.OpCreate)
	h.wantEvent("started")
}

func TestAmbiguousTakeoverThatLandedIsAdopted(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: fmt.Errorf("retried: %w", resourcelock.ErrConflict)})
	for h.now().Before(epoch.Add(lease)) {
		h.stepIdle(maxPoll)
	}
	h.wantEvent("started")
	if h.record().HolderIdentity != "a" || !h.e.IsLeader() {
		t.Fatal("a landed takeover was not adopted")
	}
}

func TestWriteConfirmedAfterItsValidityIsRenewedBeforeLeading(t *testing.T) {
	h := newHarness(t)
	h.lock.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errReset})
	h.lock.Inject(faulty.OpGet, 6, faulty.Fault{Err: errReset})
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	for h.now().Before(epoch.Add(deadline)) {
		// Our create landed, but no read confirms it: each round retries
		// the create, which conflicts, and a failing read.
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpCreate, faulty.OpGet)
		h.noEvent()
	}
	for {
		h.stepIdle(maxPoll)
		ops := h.ops()
		if len(ops) == 3 {
			// The read finally confirmed the first create, whose validity
			// has passed: renew at once before leading.
			h.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpUpdate)
			break
		}
		h.wantOps(faulty.OpCreate, faulty.OpGet)
	}
	h.wantEvent("started")
	if got, want := h.e.ValidUntil(), h.now().Add(deadline); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v (from the renewal)", got, want)
	}
}

func TestRunRefusedWhileRunning(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.waitIdle()
	if err := h.e.Run(t.Context()); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("second Run = %v, want dynalease.ErrInvalid", err)
	}
}

func TestLeaseExpiringDuringAReadIsTakenOverAtOnce(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	expiry := epoch.Add(lease)
	for expiry.Sub(h.now()) > 2*maxPoll {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpGet)
	}
	// The next poll comes before the expiry, but its read is slow and
	// returns after it.
	block, unblock := gate()
	entered := make(chan faulty.Op, 1)
	h.lock.OnCall(func(op faulty.Op) { entered <- op })
	h.lock.Inject(faulty.OpGet, 1, faulty.Fault{Block: block})
	h.step(maxPoll)
	<-entered
	h.lock.OnCall(nil)
	h.step(expiry.Sub(h.now()) + 100*time.Millisecond)
	unblock()
	h.waitIdle()
	h.wantOps(faulty.OpGet, faulty.OpUpdate)
	h.wantEvent("started")
}

func TestFailedTakeoverWaitsAPollBeforeTheNext(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	for h.now().Before(epoch.Add(lease)) {
		h.stepIdle(maxPoll)
	}
	// Every round from now on is one failed takeover and its failed read:
	// no busy loop against a failing store.
	h.lock.ResetCalls()
	for i := 0; i < 3; i++ {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpUpdate, faulty.OpGet)
	}
}

// TestRenewalOfALateConfirmedRecordDoesNotSpin: a record confirmed ours
// after its validity passed is renewed first; when that renewal and its
// read fail (DynamoDB down), the candidate waits a poll before trying again
// even though its last observation is an expired foreign lease.
func TestRenewalOfALateConfirmedRecordDoesNotSpin(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	for epoch.Add(lease).Sub(h.now()) > maxPoll {
		h.stepIdle(maxPoll)
		h.wantOps(faulty.OpGet)
	}
	// The takeover lands but its answer is lost, and the read that would
	// confirm it fails.
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errReset})
	h.lock.Inject(faulty.OpGet, 1, faulty.Fault{Err: errReset})
	h.stepIdle(maxPoll)
	h.wantOps(faulty.OpUpdate, faulty.OpGet)
	// From now on writes fail without landing; the next read succeeds (and
	// confirms the landed takeover, too late), every later one fails.
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, 1, faulty.Fault{})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	h.stepIdle(deadline) // the landed takeover's validity passes meanwhile
	// One round: a takeover write (fails), the read that confirms our
	// earlier takeover too late, its renewal (fails) and that renewal's
	// read (fails) — then a poll's wait, not another renewal at once.
	h.wantOps(faulty.OpUpdate, faulty.OpGet, faulty.OpUpdate, faulty.OpGet)
	h.stepIdle(maxPoll)
	h.wantOps(faulty.OpUpdate, faulty.OpGet)
	h.noEvent()
}

// Bug 12 of the engine issue, for the elector: a Run cancelled after its
// create was sent and its answer lost releases the record the create left
// (nobody holds it, and otherwise everyone, this candidate included, would
// wait a full lease for it).
func TestCancelledCampaignLeavesNoOrphanRecord(t *testing.T) {
	h := newHarness(t)
	h.freeRun()
	entered := h.holdNext(faulty.OpCreate, faulty.Fault{Block: make(chan struct{}), Land: true})
	h.start()
	h.waitCall(entered, faulty.OpCreate) // under way
	h.cancel()
	if err := h.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	h.lock.OnCall(nil)
	rec, ok := h.store.Record(lockName)
	if !ok || rec.HolderIdentity != "a" || !rec.Released {
		t.Fatalf("record after the cancelled campaign: %+v (stored %v), want released by a", rec, ok)
	}
	h.noEvent()
}

// CheckStore fails once requests to the record have failed for longer
// than the tolerance, and passes again when one succeeds; LastError says
// since when.
func TestCheckStoreFailsWhenTheRecordCannotBeReached(t *testing.T) {
	h := newHarness(t)
	h.putForeign("b", "r1")
	h.lock.Inject(faulty.OpCreate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	h.start()
	h.waitIdle()
	if err, since := h.e.LastError(); !errors.Is(err, errReset) || !since.Equal(epoch) {
		t.Fatalf("LastError = %v since %v, want the reset since the start", err, since)
	}
	const tolerance = 5 * time.Second
	if err := h.e.CheckStore(tolerance); err != nil {
		t.Fatalf("CheckStore before the tolerance = %v", err)
	}
	for h.now().Sub(epoch) <= tolerance {
		h.stepIdle(maxPoll)
	}
	if err := h.e.CheckStore(tolerance); !errors.Is(err, errReset) {
		t.Fatalf("CheckStore after the tolerance = %v, want the reset", err)
	}
	if err := h.e.Check(time.Second); err != nil {
		t.Fatalf("liveness fails for a candidate that cannot reach its record: %v", err)
	}
	h.lock.Clear()
	h.stepIdle(maxPoll)
	if err := h.e.CheckStore(tolerance); err != nil {
		t.Fatalf("CheckStore once a read succeeded = %v", err)
	}
	if err, _ := h.e.LastError(); err != nil {
		t.Fatalf("LastError once a read succeeded = %v", err)
	}
}

// Review issue, bug 4: writes that keep failing while the reads that
// settle them succeed are the round's failure. A candidate that can read
// the record of a dead holder but cannot write its takeover reports it in
// LastError and CheckStore, and the round counts as an error.
func TestAWriteThatKeepsFailingIsReportedWhileReadsSucceed(t *testing.T) {
	h := newHarness(t)
	h.putForeign("dead", "r1")
	h.lock.Inject(faulty.OpCreate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet)
	if err, since := h.e.LastError(); !errors.Is(err, errReset) || !since.Equal(epoch) {
		t.Fatalf("LastError = %v since %v, want the failed create since the start", err, since)
	}
	// Reads alone succeed until the holder's lease runs out; from then on
	// every round tries a takeover, and fails.
	const tolerance = 5 * time.Second
	for h.now().Sub(epoch) <= lease+maxPoll+tolerance {
		h.stepIdle(maxPoll)
	}
	if h.lock.Count(faulty.OpUpdate) == 0 {
		t.Fatal("no takeover was tried")
	}
	if err := h.e.CheckStore(tolerance); !errors.Is(err, errReset) {
		t.Fatalf("CheckStore while every takeover fails = %v, want the reset", err)
	}
	h.lock.Clear()
	h.stepIdle(maxPoll)
	h.wantEvent("started")
	if err, _ := h.e.LastError(); err != nil {
		t.Fatalf("LastError once the takeover landed = %v", err)
	}
}
