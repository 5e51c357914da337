package election

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/resourcelock"
)

// term is one period of leadership, from the confirmed acquisition to its
// end. Invariant: while the term has not ended, it is valid until
// RenewDeadline after the send time of the last confirmed write of this
// term, on the local clock (the kernel's validity of its hold). The term
// ends, cancelling the leader's context, at the latest when the clock
// reaches that bound: the kernel's timer of validities does that on its
// own, without the election loop, and valid() compares with the clock
// directly, so a stuck loop or a paused process cannot make the term look
// longer.
type term struct {
	lease   string         // what is held, for its LostError
	hold    *rvnlease.Hold // the run's; the kernel keeps the term's validity in it
	k       *rvnlease.Kernel[*term]
	clk     clockutil.Clock
	ctx     context.Context // the leader's context
	token   int64           // the term's fencing token, 0 without fencing
	holding resourcelock.Holding

	mu      sync.Mutex
	endedAt time.Time // once ended, when its validity ended (see until)
	lastErr error     // the last renewal's failure, for an Expired loss
	began   bool      // OnStartedLeading was called: only then is OnStoppedLeading
	ended   bool
	cause   error
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the term ends

	workDone chan struct{} // closed when OnStartedLeading has returned
	renewals atomic.Int64  // renewals that landed, for the term's span
	span     *tracing.Term // the term's span; set before its renewals start

	onStopped   func() // OnStoppedLeading
	stoppedOnce sync.Once

	// The step-down: started is when MinTerm counts from (the acquiring
	// write's send); stopWork cancels the work's context without ending
	// the term. handTo, once set (under mu), is the candidate a step-down
	// hands the lease to, and why; handed is closed, with handErr, once
	// the hand-over was written or the term ended otherwise.
	started  time.Time
	work     context.Context // the work's context before the term's end: done on Run's cancel or a step-down
	stopWork context.CancelCauseFunc
	handTo   *rows.Candidate
	handWhy  string
	sealed   bool // the loop is ending the term: no step-down any more
	handed   chan struct{}
	handErr  error
	handOnce sync.Once
}

// newTerm starts a term of the lease named lease, held through hold by a
// write sent at sent, on k's validities; its leader context is a child of
// parent. Everything the term's timer reads is set before the timer is
// armed: it may fire at once.
func newTerm(parent context.Context, k *rvnlease.Kernel[*term], hold *rvnlease.Hold, lease string, sent time.Time, onStopped func()) *term {
	work, stopWork := context.WithCancelCause(parent)
	ctx, cancel := context.WithCancelCause(work)
	t := &term{
		started:   sent,
		work:      work,
		stopWork:  stopWork,
		handed:    make(chan struct{}),
		lease:     lease,
		hold:      hold,
		k:         k,
		onStopped: onStopped,
		clk:       k.Clock(),
		cancel:    cancel,
		done:      make(chan struct{}),
		workDone:  make(chan struct{}),
	}
	t.ctx = leaderContext{Context: context.WithValue(ctx, termKey{}, t), t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	k.Start(t, sent)
	return t
}

// expired ends the term when its validity has run out and runs
// OnStoppedLeading, without waiting for the election loop.
func (t *term) expired() {
	t.mu.Lock()
	if t.ended || !t.k.Passed(t) {
		t.mu.Unlock()
		return
	}
	t.endLocked(t.expiredLocked())
	t.mu.Unlock()
	t.stopped()
}

// expiredLocked returns the loss of a term whose validity passed: Expired,
// with the last renewal's failure when there was one since the last
// confirmed write.
func (t *term) expiredLocked() *dynalease.LostError {
	return rvnlease.Expired(t.lease, t.lastErr)
}

// renewalFailed notes the failure of a renewal, for an Expired loss.
func (t *term) renewalFailed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = err
}

// endExpired ends the term as expired, unless it has ended already.
func (t *term) endExpired() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.endLocked(t.expiredLocked())
	}
}

// begin reports whether the leader's work may start: the term is still in
// force. A term that ended first (its validity passed during a pause
// between the acquiring write and this call) never starts its work, and
// then never calls OnStoppedLeading either.
func (t *term) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.k.Passed(t) {
		return false
	}
	t.began = true
	return true
}

// hasBegun reports whether the term's work was started.
func (t *term) hasBegun() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.began
}

// stopped runs OnStoppedLeading, once per term whose work was started.
func (t *term) stopped() {
	if t.hasBegun() {
		t.stoppedOnce.Do(t.onStopped)
	}
}

// extend moves the term's validity to count from sent, the send time of a
// confirmed renewal, which also clears the failure of an earlier one. It
// reports false when the term has already ended: a term never resumes.
func (t *term) extend(sent time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	t.lastErr = nil
	return t.k.Extend(t, sent)
}

// end ends the term now with cause, unless it has ended already.
func (t *term) end(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.endLocked(cause)
	}
}

func (t *term) endLocked(cause error) {
	t.ended = true
	t.cause = cause
	t.endedAt = t.k.Until(t)
	t.k.End(t)
	if now := t.clk.Now(); now.Before(t.endedAt) {
		t.endedAt = now
	}
	t.cancel(cause)
	close(t.done)
}

// valid reports whether the term is in force at the clock's current time.
func (t *term) valid() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.ended && !t.k.Passed(t)
}

// until returns, while the term runs, the bound of its validity; once
// ended, when it ended.
func (t *term) until() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return t.endedAt
	}
	return t.k.Until(t)
}

// endCause returns why the term ended, or nil while it runs.
func (t *term) endCause() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cause
}

// workReturned reports whether OnStartedLeading has returned.
func (t *term) workReturned() bool {
	select {
	case <-t.workDone:
		return true
	default:
		return false
	}
}

// leaderContext is the context given to OnStartedLeading. It is cancelled
// when the term ends, and its Deadline is the term's current validity.
//
// Unlike most contexts, its Deadline moves later with every confirmed
// renewal. Every value it returns is a bound the term was valid until when
// it was returned, so a context derived from it with context.WithDeadline or
// WithTimeout (which read the deadline once) ends no later than the
// validity known at that moment: the safe reading.
type leaderContext struct {
	context.Context
	t *term
}

// Deadline returns the term's current ValidUntil, or the parent's deadline
// when that is earlier. On a clock other than the real one the time is that
// clock's.
func (c leaderContext) Deadline() (time.Time, bool) {
	until := c.t.until()
	if d, ok := c.Context.Deadline(); ok && d.Before(until) {
		return d, true
	}
	return until, true
}

type termKey struct{}

// TokenFromContext returns the fencing token of the term whose leader
// context ctx is (or derives from), and whether there is one. It is false
// outside a leader's context and for electors without Fencing.
func TokenFromContext(ctx context.Context) (int64, bool) {
	t, ok := ctx.Value(termKey{}).(*term)
	if !ok || t.token == 0 {
		return 0, false
	}
	return t.token, true
}
