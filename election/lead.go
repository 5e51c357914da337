package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// lead runs one term, from a confirmed acquisition whose write was sent at
// sent, to its end.
//
//  1. Start OnStartedLeading in its own goroutine with the term's context,
//     unless the term's validity has already passed (a pause since the
//     acquiring write was sent, or a slow fencing request): such a term
//     never starts its work, is not reported to OnStoppedLeading, and
//     ends Run with an error matching dynalease.ErrLost after releasing
//     the record.
//  2. Renew every RetryPeriod (no jitter, no read first) on the kernel's
//     renewals: see renewal.
//  3. When ctx is cancelled, keep renewing while OnStartedLeading returns,
//     for at most RenewDeadline.
//  4. When OnStartedLeading has returned without the term having been lost,
//     end the term, release the record if ReleaseOnCancel, run
//     OnStoppedLeading. If it has not returned within RenewDeadline of the
//     cancel, stop renewing without releasing and let the lease run out.
//  5. When the term is lost, OnStoppedLeading runs at once (from the
//     term's own timer when its validity ran out, so a stuck loop cannot
//     delay it); Run returns once OnStartedLeading has returned as well.
func (r *run) lead(ctx context.Context, sent time.Time) (err error) {
	ctx, span := r.e.k.Tracer().StartTerm(ctx, r.e.lease.Describe(), r.e.identity, r.e.cfg.Priority)
	t := r.startTerm(ctx, sent, span)
	defer t.stopWork(nil)
	span.Token(t.token)
	defer func() { endTerm(t, err) }()
	// Requests of the term outlive a cancelled ctx, so the leader can keep
	// renewing while its work winds down, but never the term itself.
	reqCtx, cancelReq := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReq()
	go func() {
		select {
		case <-t.done:
			cancelReq()
		case <-reqCtx.Done():
		}
	}()
	// The kernel renews the term; watch watches the term's end, the
	// cancel and the work. Every way out stops the renewals first, so
	// that no renewal is under way when the term's record is touched
	// again (a release, say).
	rn := newRenewal(r, t, reqCtx)
	stopRenewals := r.e.k.Renewing(rn, r.sent.Add(r.e.cfg.RetryPeriod))
	stopRenewing := func() {
		rn.stop()
		stopRenewals()
	}
	defer stopRenewing()
	return r.watch(ctx, t, rn, stopRenewing)
}

// startTerm makes the term of a confirmed acquisition, whose write was
// sent at sent, with its span, the Elector's current one, and starts its work in a goroutine
// of its own (step 1 of lead).
func (r *run) startTerm(ctx context.Context, sent time.Time, span *tracing.Term) *term {
	e := r.e
	t := newTerm(ctx, e.k, &r.hold, e.lease.Describe(), sent, e.cfg.Callbacks.OnStoppedLeading)
	t.span = span // before the term is published (HandOver reads it) and its renewals start
	validUntil := t.until()
	t.token = r.cur.Token()
	t.holding = resourcelock.Holding{HolderIdentity: e.identity, AcquisitionID: r.cur.AcquisitionID}
	if k, ok := e.lease.(interface{ Key() resourcelock.Key }); ok {
		t.holding.Keys = []resourcelock.Key{k.Key()} // a lease of a store's row
	}
	e.mu.Lock()
	e.current = t
	e.mu.Unlock()
	e.cfg.Metrics.Leading(true, validUntil)
	e.log.Info("started leading", "rvn", r.cur.RVN, "sent", r.sent, "validUntil", validUntil, "token", t.token)
	go func() {
		defer close(t.workDone)
		if t.begin() {
			if w, ok := e.cfg.Metrics.(metrics.ElectionWork); ok {
				w.Working(true)
				defer w.Working(false)
			}
			e.cfg.Callbacks.OnStartedLeading(t.ctx)
		}
	}()
	return t
}

// watch waits for the term's end, the cancel of ctx and the return of the
// work, and ends the term as steps 3 to 5 of lead say; stopRenewing stops
// the renewals for good.
func (r *run) watch(ctx context.Context, t *term, rn *renewal, stopRenewing func()) error {
	e := r.e
	cancelled := t.work.Done()  // Run's cancel, or a step-down
	var giveUp <-chan time.Time // fires RenewDeadline after the cancel
	var giveUpTimer clock.Timer
	defer func() {
		if giveUpTimer != nil {
			giveUpTimer.Stop()
		}
	}()
	for {
		timing.Blocking(e.clk, "election")
		select {
		case <-t.done:
			stopRenewing()
			return r.lost(ctx, t)
		case <-cancelled:
			cancelled = nil
			e.log.Info("the leader's work is asked to stop; renewing until it returns", "cause", context.Cause(t.work).Error(), "bound", e.cfg.RenewDeadline.String())
			rn.giveUp(e.clk.Now().Add(e.cfg.RenewDeadline))
			giveUpTimer = e.clk.NewTimer(e.cfg.RenewDeadline)
			giveUp = giveUpTimer.C()
		case <-t.workDone:
			stopRenewing()
			return r.finish(ctx, t)
		case <-giveUp:
			// Let the lease run out: no renewal after the bound.
			stopRenewing()
			e.log.Info("the leader's work did not return within RenewDeadline of the cancel; not releasing, the lease will run out")
			<-t.done // validity runs out: IsLeader turns false, the term's timer ends it
			return r.lost(ctx, t)
		case <-rn.renewed:
			// A renewal was sent; its outcome is in the term.
		}
	}
}

// lost handles a term that ended while its work may still be running.
func (r *run) lost(ctx context.Context, t *term) error {
	e := r.e
	cause := t.endCause()
	t.sealHandOver()
	t.settleHandOver(lostLeadership(cause))
	e.log.Info("stopped leading", "reason", cause.Error(), "until", t.until())
	e.forgetSelfAsLeader()
	e.cfg.Metrics.Leading(false, time.Time{})
	t.stopped()
	<-t.workDone
	if !t.hasBegun() {
		// The work never started: nothing acts as leader, and the record,
		// if still ours, is let go so that nobody waits a lease for it.
		cause = fmt.Errorf("the term ended before the leader's work started: %w", cause)
		e.log.Info("the term's validity passed before the leader's work could start; releasing the record", "severity", "warning")
		if lost := (*dynalease.LostError)(nil); errors.As(t.endCause(), &lost) && lost.Reason == dynalease.Expired {
			r.release(ctx)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return lostLeadership(cause)
}

// lostLeadership returns Run's error for a term that ended, with cause,
// without the caller asking: it matches dynalease.ErrLost (cause is a
// *dynalease.LostError, whose Reason says how).
func lostLeadership(cause error) error {
	if errors.Is(cause, dynalease.ErrLost) {
		return fmt.Errorf("election: leadership lost: %w", cause)
	}
	return fmt.Errorf("election: leadership lost (%w): %w", dynalease.ErrLost, cause)
}

// finish ends a term whose work has returned: nothing acts as leader any
// more, so the record may be released.
func (r *run) finish(ctx context.Context, t *term) error {
	e := r.e
	ended := errors.New("the leader's work returned")
	heir, why, handing := t.sealHandOver()
	switch {
	case ctx.Err() != nil:
		ended = fmt.Errorf("run cancelled: %w", context.Cause(ctx))
	case handing:
		ended = fmt.Errorf("stepped down (%s) for %s", why, heir.Identity)
	}
	if t.valid() {
		t.end(ended)
	} else {
		// The validity ran out before the work returned (the work may
		// have returned because of that) and the term's timer has not
		// ended the term yet: that is a loss, not a voluntary end.
		t.endExpired()
	}
	if err := t.endCause(); err != ended {
		// The term had been lost before the work returned.
		return r.lost(ctx, t)
	}
	// Leadership stopped with the term, before the record is handed over
	// or released: said so now, so that an observer of the log (and the
	// metrics) never sees this candidate lead past a write that let
	// another one take the record.
	e.log.Info("stopped leading", "reason", ended.Error(), "until", t.until())
	e.cfg.Metrics.Leading(false, time.Time{})
	var handErr error
	switch {
	case handing:
		// A step-down hands over whatever ReleaseOnCancel says: the
		// successor is waiting.
		handErr = r.handOver(ctx, t, heir, why)
	case e.cfg.ReleaseOnCancel:
		r.release(ctx)
	}
	t.stopped()
	t.settleHandOver(handErr)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case handing && handErr == nil:
		return fmt.Errorf("election: %s: %w to %s (%s)", e.lease.Describe(), ErrHandedOver, heir.Identity, why)
	case handing:
		return handErr
	}
	return nil
}

// release marks the record released, conditioned on identity and RVN. An
// earlier renewal whose answer was lost may have landed meanwhile; the
// kernel's hold then confirms it and releases on top of it (WriteOwn).
func (r *run) release(ctx context.Context) {
	e := r.e
	rctx, cancel := timing.KeepDeadline(ctx)
	defer cancel()
	cur := r.cur
	w := r.hold.WriteOwn(rctx, cur, func(rows.Item) resourcelock.Record { return r.newRecord(true) },
		func(w rvnlease.Written) bool { r.confirm(w.Item, w.Sent); return true })
	switch {
	case w.Landed:
		r.confirm(w.Item, w.Sent)
		e.log.Info("released the lease", "rvn", w.Item.RVN, "sent", w.Sent)
		e.setLeader("")
	case w.ReleaseDone(cur):
		e.log.Info("the record changed while the release was under way; it may have landed first")
		e.forgetSelfAsLeader()
	case w.Lost:
		e.log.Info("not releasing the lease: it is no longer ours", "reason", w.Loss(e.lease.Describe()).Error())
		e.forgetSelfAsLeader()
	default:
		e.log.Info("could not release the lease; it will run out", "severity", "warning", "rvn", r.cur.RVN, "error", w.Err.Error())
	}
}

// endTerm ends the span of term t with Run's error: the outcome says how
// the term ended ("ended", "handed_over", or "lost" with the loss's
// reason).
func endTerm(t *term, err error) {
	if t.span == nil {
		return
	}
	outcome, reason := "ended", ""
	var lost *dynalease.LostError
	if errors.Is(err, ErrHandedOver) {
		outcome = "handed_over"
		err = nil
	}
	if errors.As(t.endCause(), &lost) {
		outcome, reason = "lost", lost.Reason.String()
	}
	if errors.Is(err, context.Canceled) {
		err = nil // the caller's own end
	}
	t.span.End(outcome, reason, t.renewals.Load(), err)
}
