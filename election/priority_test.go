package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

// withCandidacy makes the harness's elector campaign over the store's row
// (Config.Store), at priority, standing when stand, with minTerm (zero:
// the default).
func withCandidacy(priority int64, stand bool, minTerm time.Duration) harnessOption {
	return func(h *harness, c *Config) {
		c.Lease, c.Store, c.Name, c.Identity = nil, rows.Sealed(h.lock), lockName, "a"
		c.Priority, c.Stand, c.MinTerm = priority, stand, minTerm
	}
}

var rowKey = resourcelock.Key{Partition: lockName}

// rival is a candidate the test plays by writing its entry.
type rival struct {
	h *harness
	c rows.Candidate
}

func (h *harness) rival(identity string, priority int64) *rival {
	return &rival{h: h, c: rows.Candidate{Ticket: uuid.NewString(), Identity: identity, Priority: priority}}
}

// stand writes the rival's entry with a fresh RVN, as its poll would.
func (r *rival) stand() {
	r.h.t.Helper()
	r.c.RVN = uuid.NewString()
	if _, err := rows.MustOpen(r.h.store).Stand(context.Background(), rowKey, r.c, nil); err != nil {
		r.h.t.Fatalf("stand of %s: %v", r.c.Identity, err)
	}
}

// renewFor steps the clock one RetryPeriod at a time, n times, the rival
// writing its entry before each step when live, and checks that the
// leader renews and goes on leading.
func (h *harness) renewFor(n int, live ...*rival) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		for _, r := range live {
			r.stand()
		}
		h.stepIdle(retry)
		h.wantOps(faulty.OpUpdate)
		h.noEvent()
		if !h.e.IsLeader() {
			h.t.Fatalf("not leading at %v", h.now().Sub(epoch))
		}
	}
}

// leadingBesideLiveRival starts h leading, with a rival b of priority 0
// whose entry two renewals have seen change (live), and lets the loop run
// without the test.
func (h *harness) leadingBesideLiveRival() *rival {
	h.t.Helper()
	h.leading()
	b := h.rival("b", 0)
	h.renewFor(2, b)
	h.freeRun()
	return b
}

// wantHandedTo checks that the row is handed to r, and that Run ended
// with ErrHandedOver after the work returned.
func (h *harness) wantHandedTo(r *rival) {
	h.t.Helper()
	h.wantEvents("work returned", "stopped")
	if err := h.result(); !errors.Is(err, ErrHandedOver) || errors.Is(err, dynalease.ErrLost) {
		h.t.Fatalf("Run = %v, want ErrHandedOver and no loss", err)
	}
	if rec := <-h.atStop; rec.HolderIdentity != r.c.Identity {
		h.t.Fatalf("OnStoppedLeading ran before the hand-over landed (row %+v)", rec)
	}
	rec := h.record()
	if rec.HolderIdentity != r.c.Identity || rec.HandedTo != r.c.Ticket || rec.Released || rec.LeaseDuration != 2*retry {
		h.t.Fatalf("row after the hand-over: %+v; want named %s, handed to its ticket, lease %v", rec, r.c.Identity, 2*retry)
	}
	if h.e.IsLeader() || h.e.Leader() != r.c.Identity {
		h.t.Fatalf("IsLeader %v, Leader %q after the hand-over", h.e.IsLeader(), h.e.Leader())
	}
}

func TestAHigherPriorityCandidateLeadsAfterMinTermAtASafePoint(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0), withStubbornWork())
	h.leading()
	b := h.rival("b", 5)
	// MinTerm is 3 × RetryPeriod: the renewals at 2 and 4 s see b live,
	// and the term goes on.
	h.renewFor(2, b)
	b.stand()
	h.stepIdle(retry) // 6 s: the renewal sees b live after MinTerm
	h.waitIdle()      // the loop comes round twice: the renewal, and the step-down
	h.wantOps(faulty.OpUpdate)
	if !h.e.IsLeader() {
		t.Fatal("stopped leading before the work returned")
	}
	if err := context.Cause(h.leaderCtx()); err == nil {
		t.Fatal("the leader's context is not cancelled by the step-down")
	}
	// The leader keeps renewing while its work winds down.
	h.stepIdle(retry)
	h.wantOps(faulty.OpUpdate)
	if !h.e.IsLeader() || h.record().HolderIdentity != "a" {
		t.Fatal("handed over before the work returned")
	}
	h.freeRun()
	close(h.holdWork)
	h.wantHandedTo(b)
	h.wantOps(faulty.OpUpdate)
}

func TestMinTermHolds(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 9*time.Second))
	h.leading()
	b := h.rival("b", 5)
	h.renewFor(4, b) // 2, 4, 6, 8 s: b live, the term younger than 9 s
	b.stand()
	h.freeRun()
	h.step(retry) // 10 s
	h.wantHandedTo(b)
}

func TestEqualOrLowerPrioritiesNeverPreempt(t *testing.T) {
	h := newHarness(t, withCandidacy(3, true, 0))
	h.leading()
	equal, lower := h.rival("b", 3), h.rival("c", 1)
	h.renewFor(20, equal, lower)
	if rec := h.record(); rec.HolderIdentity != "a" || rec.HandedTo != "" {
		t.Fatalf("row %+v", rec)
	}
}

func TestARequesterThatDiesLeavesTheLeaderInPlace(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 10*time.Second))
	h.leading()
	b := h.rival("b", 9)
	h.renewFor(2, b) // b writes its entry at 0 and 2 s, and dies
	h.renewFor(20)   // live until 2 + 3 × RetryPeriod = 8 s < MinTerm
	if rec := h.record(); rec.HolderIdentity != "a" {
		t.Fatalf("row %+v", rec)
	}
}

func TestHandOverToALiveCandidate(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0), withStubbornWork())
	h.leading()
	b := h.rival("b", 0) // equal: never preempts
	h.renewFor(3, b)
	done := make(chan error, 1)
	go func() { done <- h.e.HandOver(context.Background(), "b") }()
	ctx := h.leaderCtx()
	<-ctx.Done()
	select {
	case err := <-done:
		t.Fatalf("HandOver returned %v before the work returned", err)
	default:
	}
	if err := h.e.HandOver(context.Background(), "b"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a second HandOver while the first ends the term: %v, want ErrNotLeader", err)
	}
	h.freeRun()
	close(h.holdWork)
	if err := <-done; err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	h.wantHandedTo(b)
	if err := h.e.HandOver(context.Background(), "b"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("HandOver after the term: %v, want ErrNotLeader", err)
	}
}

func TestHandOverToTheBestLiveCandidate(t *testing.T) {
	h := newHarness(t, withCandidacy(10, false, 0))
	h.leading()
	b, c := h.rival("b", 1), h.rival("c", 2)
	h.renewFor(2, b, c)
	h.freeRun()
	if err := h.e.HandOver(context.Background(), ""); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	h.wantHandedTo(c)
}

func TestHandOverRefusals(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0))
	if err := h.e.HandOver(context.Background(), "b"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("HandOver before leading: %v, want ErrNotLeader", err)
	}
	h.leading()
	if err := h.e.HandOver(context.Background(), ""); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("HandOver to anyone without candidates: %v, want ErrInvalid", err)
	}
	b := h.rival("b", 0)
	h.renewFor(2, b) // b writes at 0 and 2 s, then dies
	// 12 s: b's entry, last changed after 2 s, is dead to HandOver (the
	// live window and a RetryPeriod, 8 s).
	h.renewFor(4)
	for _, id := range []string{"b", "zed", "a"} {
		var inv *dynalease.InvalidError
		if err := h.e.HandOver(context.Background(), id); !errors.As(err, &inv) || inv.Field != "HandOver" {
			t.Fatalf("HandOver(%q): %v, want an InvalidError naming HandOver", id, err)
		}
	}
	h.renewFor(2)
	if rec := h.record(); rec.HolderIdentity != "a" || rec.HandedTo != "" {
		t.Fatalf("a refused HandOver changed the row: %+v", rec)
	}
}

func TestAStandingCandidatePollsByStandingAndConfirmsAHandOverToIt(t *testing.T) {
	h := newHarness(t, withCandidacy(5, false, 0))
	held := resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: lease}
	h.store.Put(lockName, held)
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpStand) // the create finds the row held; the poll stands
	it, _ := rows.MustRaw(h.store).Item(rowKey)
	if len(it.Candidates) != 1 || it.Candidates[0].Identity != "a" || it.Candidates[0].Priority != 5 {
		t.Fatalf("candidates after the first poll: %+v", it.Candidates)
	}
	ticket := it.Candidates[0].Ticket
	h.wantLeaders("old")
	// The old leader hands over to a's ticket.
	handed := resourcelock.Record{HolderIdentity: "a", HandedTo: ticket, RVN: "r2", LeaseDuration: 2 * retry}
	if _, err := rows.MustOpen(h.store).Update(context.Background(), rowKey, resourcelock.Precondition{RVN: "r1", HolderIdentity: "old"}, handed, rows.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.stepIdle(maxPoll) // a's next poll, within maxPoll, sees the hand-over
	h.wantEvent("started")
	h.wantOps(faulty.OpStand, faulty.OpUpdate)
	if rec := h.record(); rec.HolderIdentity != "a" || rec.HandedTo != "" || rec.RVN == "r2" {
		t.Fatalf("row after the confirmation: %+v", rec)
	}
}

func TestAHandOverNobodyConfirmsIsTakenOverAfterTwoPeriods(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0))
	handed := resourcelock.Record{HolderIdentity: "b", HandedTo: "b-ticket", RVN: "r2", LeaseDuration: 2 * retry}
	h.store.Put(lockName, handed)
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpGet) // a does not stand: it reads
	// Held by b to a that never saw it confirmed: taken over once its RVN
	// stayed unchanged for the handed lease, two RetryPeriods.
	h.stepIdle(maxPoll)
	h.noEvent()
	h.stepIdle(maxPoll)
	h.wantEvent("started")
	if got := h.record(); got.HolderIdentity != "a" || got.HandedTo != "" {
		t.Fatalf("row after the takeover: %+v", got)
	}
}

// A standing candidate that gives up while the row is handed to it
// declines the hand-over: the row is marked released, by a write
// conditioned on the handed RVN, so that the others take it at their next
// poll rather than after the hand-over's lease.
func TestAHandOverToACandidateThatGivesUpIsDeclined(t *testing.T) {
	h := newHarness(t, withCandidacy(0, true, 0))
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: lease})
	h.start()
	h.waitIdle()
	h.wantOps(faulty.OpCreate, faulty.OpStand)
	it, _ := rows.MustRaw(h.store).Item(rowKey)
	handed := resourcelock.Record{HolderIdentity: "a", HandedTo: it.Candidates[0].Ticket, RVN: "r2", LeaseDuration: 2 * retry}
	if _, err := rows.MustOpen(h.store).Update(context.Background(), rowKey, resourcelock.Precondition{RVN: "r1", HolderIdentity: "old"}, handed, rows.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// a sees the hand-over at its next poll; its confirmation is held on
	// its way, and its Run cancelled meanwhile: the confirmation does not
	// land.
	entered := h.holdNext(faulty.OpUpdate, faulty.Fault{Block: make(chan struct{})})
	h.step(maxPoll)
	h.waitCall(entered, faulty.OpUpdate)
	h.freeRun()
	h.cancel()
	if err := h.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	got, _ := rows.MustRaw(h.store).Item(rowKey)
	if !got.Released || got.RVN == "r2" || got.HandedTo != "" {
		t.Fatalf("row after a gave up: %+v; want it released over the handed RVN", got.Record)
	}
	if len(got.Candidates) != 0 {
		t.Fatalf("candidates after a gave up: %+v, want none", got.Candidates)
	}
}

func TestAStandingCandidateWithdrawsWhenCancelled(t *testing.T) {
	h := newHarness(t, withCandidacy(0, true, 0))
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: lease})
	h.start()
	h.waitIdle()
	if it, _ := rows.MustRaw(h.store).Item(rowKey); len(it.Candidates) != 1 {
		t.Fatalf("candidates %+v", it.Candidates)
	}
	h.freeRun()
	h.cancel()
	if err := h.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	if it, _ := rows.MustRaw(h.store).Item(rowKey); len(it.Candidates) != 0 {
		t.Fatalf("candidates after the cancel %+v, want none", it.Candidates)
	}
}

func TestAHandOverThatFailsLeavesTheRowToRunOut(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0))
	h.leadingBesideLiveRival()
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	err := h.e.HandOver(context.Background(), "b")
	if err == nil || !errors.Is(err, errReset) {
		t.Fatalf("HandOver = %v, want the write's failure", err)
	}
	if res := h.result(); errors.Is(res, ErrHandedOver) || !errors.Is(res, errReset) {
		t.Fatalf("Run = %v, want the hand-over's failure", res)
	}
	if rec := h.record(); rec.HolderIdentity != "a" || rec.HandedTo != "" || rec.Released {
		t.Fatalf("row %+v, want a's, left to run out", rec)
	}
	if h.e.IsLeader() || h.e.Leader() != "" {
		t.Fatalf("IsLeader %v, Leader %q", h.e.IsLeader(), h.e.Leader())
	}
}

func TestAHandOverWhoseAnswerIsLostIsReportedHanded(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0))
	b := h.leadingBesideLiveRival()
	h.lock.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset, Land: true})
	if err := h.e.HandOver(context.Background(), "b"); err != nil {
		t.Fatalf("HandOver = %v", err)
	}
	h.wantHandedTo(b)
}

func TestRunCancelledWhileSteppingDownStillHandsOver(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0), withStubbornWork())
	b := h.leadingBesideLiveRival()
	done := make(chan error, 1)
	go func() { done <- h.e.HandOver(context.Background(), "b") }()
	<-h.leaderCtx().Done()
	h.cancel()
	close(h.holdWork)
	if err := <-done; err != nil {
		t.Fatalf("HandOver = %v", err)
	}
	if err := h.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if rec := h.record(); rec.HolderIdentity != "b" || rec.HandedTo != b.c.Ticket {
		t.Fatalf("row %+v, want handed to b", rec)
	}
}

func TestHandOverFromTheLeadersWorkReturnsAtOnce(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0), withStubbornWork())
	b := h.leadingBesideLiveRival()
	work := h.leaderCtx()
	if err := h.e.HandOver(work, "b"); err != nil {
		t.Fatalf("HandOver with the work's context = %v, want nil before the work returned", err)
	}
	if h.record().HolderIdentity != "a" {
		t.Fatal("handed over before the work returned")
	}
	close(h.holdWork)
	h.wantHandedTo(b)
}

func TestATermLostWhileSteppingDownEndsHandOverWithTheLoss(t *testing.T) {
	h := newHarness(t, withCandidacy(0, false, 0), withStubbornWork())
	h.leadingBesideLiveRival()
	done := make(chan error, 1)
	go func() { done <- h.e.HandOver(context.Background(), "b") }()
	<-h.leaderCtx().Done()
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.step(deadline + retry) // the renewals fail; the term's validity runs out
	if err := <-done; !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("HandOver = %v, want the term's loss", err)
	}
	close(h.holdWork)
	if err := h.result(); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Run = %v, want ErrLost", err)
	}
	if rec := h.record(); rec.HolderIdentity != "a" || rec.HandedTo != "" {
		t.Fatalf("row %+v: a lost term handed over", rec)
	}
}

func TestARowFullOfDeadEntriesTakesANewCandidateOnceTheyAreStale(t *testing.T) {
	h := newHarness(t, withCandidacy(1, false, 0))
	h.lock.HideConflictRows(false)
	row := rows.Item{Key: rowKey, Record: resourcelock.Record{HolderIdentity: "old", RVN: "r1", LeaseDuration: time.Hour}}
	for i := 0; i < rows.MaxCandidates; i++ {
		row.Candidates = append(row.Candidates, rows.Candidate{Ticket: uuid.NewString(), Identity: "gone", RVN: "x"})
	}
	rows.MustRaw(h.store).PutItem(row)
	h.start()
	h.waitIdle()
	stands := func() bool {
		it, _ := rows.MustRaw(h.store).Item(rowKey)
		for _, c := range it.Candidates {
			if c.Identity == "a" {
				return len(it.Candidates) == 1
			}
		}
		return false
	}
	// Dead entries are dropped once unchanged for LeaseDuration + 3 ×
	// RetryPeriod (21 s) as a's answers show them.
	for h.now().Sub(epoch) < lease+3*retry {
		if stands() {
			t.Fatalf("a stood at %v, before the entries were stale", h.now().Sub(epoch))
		}
		h.stepIdle(maxPoll)
	}
	h.stepIdle(maxPoll)
	if !stands() {
		it, _ := rows.MustRaw(h.store).Item(rowKey)
		t.Fatalf("a does not stand alone at %v: %d entries", h.now().Sub(epoch), len(it.Candidates))
	}
}
