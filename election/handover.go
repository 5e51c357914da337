package election

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// ErrHandedOver is matched by Run's error when its term ended by handing
// the lease to another candidate: one of higher priority (Config.Priority)
// or the one Elector.HandOver named. It is not a loss: the term ended at a
// safe point, its work returned first.
var ErrHandedOver = errors.New("leadership handed over")

// ErrNotLeader is matched by the error of Elector.HandOver called when
// this candidate does not lead, or its term is already ending.
var ErrNotLeader = errors.New("not the leader")

// HandOver ends the current term at a safe point and hands the lease to
// the live candidate named identity, or, when identity is empty, to the
// live candidate of highest priority among those at or above this one's
// (below it only when there is none) (see "Priority and hand-over" in the
// package doc): the leader's context is cancelled, the leader keeps
// renewing while OnStartedLeading returns (for at most RenewDeadline),
// then writes the hand-over, then runs OnStoppedLeading, and Run returns
// an error matching ErrHandedOver. MinTerm plays no part. A candidate of
// lower priority than this one's that is handed the lease steps down for
// this one again after MinTerm, while this one stands.
//
// HandOver returns nil once the hand-over is written; the successor leads
// only once its own write, conditioned on the handed RVN, lands, which it
// sends at its next poll (a RetryPeriod or so later). A hand-over the
// successor does not confirm within two RetryPeriods is taken over by any
// candidate, as a silent holder's row is. Leader names the successor from
// the hand-over on, confirmed or not.
//
// It returns an error matching ErrNotLeader when this candidate does not
// lead or its term is already ending; one matching dynalease.ErrInvalid
// when identity names this candidate, or no candidate whose entry is live
// (an unknown identity, a candidate that does not stand, or one that
// stopped writing its entry); the term then goes on. It returns ctx's
// error when ctx ends first (the hand-over goes on), and the failure of
// the hand-over when the term ended otherwise or the write failed (the
// lease then runs out, as after a crash).
//
// HandOver waits for OnStartedLeading to return. Called from it, pass its
// context (or one derived from it): HandOver then returns nil as soon as
// the step-down has begun, and the hand-over follows once the work
// returns. Called from it with another context, it waits for itself until
// the term is lost, RenewDeadline later, and nothing is handed over.
func (e *Elector) HandOver(ctx context.Context, identity string) error {
	t := e.term()
	if t == nil || !t.valid() {
		return fmt.Errorf("election: %s: hand over: %w", e.lease.Describe(), ErrNotLeader)
	}
	refuse := func(reason string) error {
		return fmt.Errorf("election: %s: %w", e.lease.Describe(), &dynalease.InvalidError{Field: "HandOver", Reason: reason})
	}
	if identity == e.identity {
		return refuse(fmt.Sprintf("%q is this candidate", identity))
	}
	// Judged between two answers, not right after one as a renewal's step-down
	// is: one RetryPeriod more.
	now, window := e.clk.Now(), e.cfg.liveWindow()+e.cfg.RetryPeriod
	var c rows.Candidate
	var ok bool
	if identity == "" {
		if c, ok = e.cport.Candidates().Best(now, window, e.cfg.Priority-1, e.ticket()); !ok {
			c, ok = e.cport.Candidates().Best(now, window, math.MinInt64, e.ticket())
		}
	} else {
		c, ok = e.cport.Candidates().Named(now, window, identity)
	}
	switch {
	case ok:
	case identity == "":
		return refuse("no other candidate's entry is live")
	case e.cport.Candidates().Known(identity):
		return refuse(fmt.Sprintf("the entry of %q is not live: it stopped writing it", identity))
	default:
		return refuse(fmt.Sprintf("no candidate %q stands (Config.Stand or Priority)", identity))
	}
	if !t.stepDown(c, metrics.HandOverRequested) {
		return fmt.Errorf("election: %s: hand over: %w (the term is already ending)", e.lease.Describe(), ErrNotLeader)
	}
	e.log.Info("handing over on request", "to", c.Identity, "priority", c.Priority)
	if own, _ := ctx.Value(termKey{}).(*term); own == t {
		return nil // the work's own call: it returns, then the hand-over follows
	}
	select {
	case <-t.handed:
		return t.handOverErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ticket returns this candidate's ticket, "" when it does not stand.
func (e *Elector) ticket() string {
	if e.cport == nil {
		return ""
	}
	return e.cport.Ticket()
}

// considerStepDown steps the term t down for the live candidate of highest
// priority above this one's, once the term has lasted MinTerm; the
// renewals call it after each confirmed renewal, whose answer showed the
// row's candidates.
func (r *run) considerStepDown(t *term) {
	e := r.e
	now := e.clk.Now()
	if now.Sub(t.started) < e.cfg.MinTerm {
		return
	}
	c, ok := e.cport.Candidates().Best(now, e.cfg.liveWindow(), e.cfg.Priority, e.ticket())
	if !ok || c.Identity == e.identity {
		return
	}
	if t.stepDown(c, metrics.HandOverPriority) {
		e.log.Info("a live candidate of higher priority stands; stepping down", "to", c.Identity, "priority", c.Priority, "own", e.cfg.Priority)
	}
}

// stepDown starts ending t at a safe point, to hand the lease to c, why
// being a metrics.HandOver… reason: the work's context is cancelled and
// the election loop goes on as after Run's cancel (lead, step 3). It
// reports false when t has ended or is stepping down already.
func (t *term) stepDown(c rows.Candidate, why string) bool {
	t.mu.Lock()
	if t.ended || t.sealed || t.handTo != nil {
		t.mu.Unlock()
		return false
	}
	t.handTo, t.handWhy = &c, why
	t.mu.Unlock()
	t.span.SteppedDown(c.Identity, c.Priority, why)
	t.stopWork(fmt.Errorf("stepping down for %s (%s)", c.Identity, why))
	return true
}

// sealHandOver returns the candidate t steps down for, and why, or false;
// from then on t takes no step-down: the election loop is ending it.
func (t *term) sealHandOver() (rows.Candidate, string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sealed = true
	if t.handTo == nil {
		return rows.Candidate{}, "", false
	}
	return *t.handTo, t.handWhy, true
}

// settleHandOver closes handed with err, once.
func (t *term) settleHandOver(err error) {
	t.handOnce.Do(func() {
		t.mu.Lock()
		t.handErr = err
		t.mu.Unlock()
		close(t.handed)
	})
}

func (t *term) handOverErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handErr
}

// handOver writes the hand-over of the row to c, conditioned on this
// leader's identity and RVN, once the term has ended: the row names c,
// with c's ticket (HandedTo) and the handed lease. It gives c nothing
// until c's own write, conditioned on the handed RVN, lands. A write
// that does not land leaves the row to run out.
func (r *run) handOver(ctx context.Context, t *term, c rows.Candidate, why string) error {
	e := r.e
	rctx, cancel := timing.KeepDeadline(ctx)
	defer cancel()
	next := func(rows.Item) resourcelock.Record {
		rec := r.newRecord(false)
		rec.HolderIdentity, rec.HandedTo, rec.LeaseDuration = c.Identity, c.Ticket, e.cfg.handedLease()
		return rec
	}
	w := r.hold.WriteOwn(rctx, r.cur, next, func(w rvnlease.Written) bool { r.confirm(w.Item, w.Sent); return true })
	switch {
	case w.Landed || (w.Lost && !w.Missing && w.Item.HolderIdentity == c.Identity):
		// Landed; or its answer was lost and the row, read since, names
		// the successor: handed, and maybe confirmed already.
		if w.Landed {
			r.confirm(w.Item, w.Sent)
		}
		e.log.Info("handed the lease over", "to", c.Identity, "reason", why, "rvn", w.Item.RVN)
		if h, ok := e.cfg.Metrics.(metrics.ElectionHandOvers); ok {
			h.TermHandedOver(why)
		}
		e.setLeader(c.Identity)
		return nil
	case w.Lost:
		e.forgetSelfAsLeader()
		return fmt.Errorf("election: hand over to %s: %w", c.Identity, w.Loss(e.lease.Describe()))
	default:
		e.forgetSelfAsLeader()
		e.log.Info("could not hand the lease over; it will run out", "severity", "warning", "to", c.Identity, "error", w.Err.Error())
		return fmt.Errorf("election: hand over to %s (the lease will run out): %w", c.Identity, w.Err)
	}
}
