package election

import (
	"context"
	"sync"
	"time"
)

// renewal is a term as the kernel renews it (Kernel.Renewing): every RetryPeriod from the start of the previous renewal (the first
// one RetryPeriod after the acquiring write was sent), with a write
// conditioned on identity and RVN. A confirmed renewal extends the term to
// RenewDeadline after its send time; a record found taken, released or
// deleted ends the term at once; a failed renewal changes nothing and the
// term ends by itself when its validity runs out.
//
// While the renewals run, they own the run's cur and sent; the election
// loop touches them again only after stopping the renewals, which waits
// for a renewal under way.
type renewal struct {
	r   *run
	t   *term
	ctx context.Context // the term's request context

	// renewed hands each renewal sent to the loop, which comes round (and
	// a Watcher clock hears it block again, once per renewal); quit,
	// closed by the loop before it closes the renewer, stops waiting
	// for the loop.
	renewed chan struct{}
	quit    chan struct{}

	mu       sync.Mutex
	giveUpAt time.Time // after the cancel: when renewing stops; zero before
}

func newRenewal(r *run, t *term, ctx context.Context) *renewal {
	return &renewal{r: r, t: t, ctx: ctx, renewed: make(chan struct{}), quit: make(chan struct{})}
}

// stop closes quit: the loop is no longer there to hear of renewals.
func (rn *renewal) stop() {
	select {
	case <-rn.quit:
	default:
		close(rn.quit)
	}
}

// giveUp stops renewals from at on (RenewDeadline after the cancel).
func (rn *renewal) giveUp(at time.Time) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.giveUpAt = at
}

// givenUp reports whether the cancel's bound has passed.
func (rn *renewal) givenUp() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return !rn.giveUpAt.IsZero() && !rn.r.e.clk.Now().Before(rn.giveUpAt)
}

// Ended reports whether the term has ended: it is renewed no more.
func (rn *renewal) Ended() bool {
	select {
	case <-rn.t.done:
		return true
	default:
		return false
	}
}

// Renew sends one renewal, unless the loop has stopped renewing (the work
// returned, the term ended) or the term's validity or the cancel's bound
// has passed meanwhile (after a pause, say): a renewal never wins over any
// of them once the loop or the clock has decided.
func (rn *renewal) Renew() {
	r, e, t := rn.r, rn.r.e, rn.t
	select {
	case <-rn.quit:
		return // the loop has stopped renewing: it is ending the term
	default:
	}
	if !t.valid() || rn.givenUp() {
		return // the term's timer, or the loop, ends the term
	}
	started := e.clk.Now()
	w := r.hold.Write(rn.ctx, r.cur, r.newRecord(false))
	e.cfg.Metrics.Renewal(w.Outcome(), e.clk.Since(started))
	if w.Landed {
		t.renewals.Add(1)
	} else {
		t.span.RenewalFailed(string(w.Outcome()))
	}
	switch {
	case w.Landed:
		r.confirm(w.Item, w.Sent)
		e.noteError(nil)
		if t.extend(w.Sent) {
			e.cfg.Metrics.Leading(true, t.until())
			e.log.V(1).Info("renewed", "rvn", w.Item.RVN, "sent", w.Sent, "validUntil", t.until())
			r.considerStepDown(t)
		}
	case w.Lost:
		if w.Missing || w.Item.Released {
			e.setLeader("")
		} else {
			e.setLeader(w.Item.HolderIdentity)
		}
		t.end(w.Loss(e.lease.Describe()))
	default:
		e.noteError(w.Err)
		t.renewalFailed(w.Err)
		e.log.Info("renewal not confirmed", "validFor", t.until().Sub(e.clk.Now()).String(), "error", w.Err.Error())
	}
	select {
	case rn.renewed <- struct{}{}:
	case <-rn.quit:
	}
}
