package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/tracing"
)

// acquireSpanNames names the span of each kind of acquisition.
var acquireSpanNames = [...]string{
	kindLock:   "dynalease.lock.acquire",
	kindSet:    "dynalease.lock.acquire_set",
	kindPermit: "dynalease.lock.acquire_permit",
	kindShared: "dynalease.lock.acquire_shared",
}

// acquireSpan is the span of an acquisition and when it began.
type acquireSpan struct {
	*tracing.Acquisition
	start time.Time
}

// startAcquire starts the span of an acquisition of kind k of what (a key,
// a set's keys, a semaphore's name with its permits), and returns the
// context the acquisition's requests run under.
func (c *Client) startAcquire(ctx context.Context, k kind, what fmt.Stringer, try bool, permits int) (context.Context, acquireSpan) {
	ctx, a := c.k.Tracer().StartAcquisition(ctx, acquireSpanNames[k], what, k.String(), c.cfg.identity, try, permits)
	return ctx, acquireSpan{Acquisition: a, start: c.clk.Now()}
}

// end ends s with the acquisition's lock l or its error.
func (s acquireSpan) end(c *Client, l *Lock, err error) {
	if s.Acquisition == nil {
		return
	}
	var token int64
	if l != nil {
		token = l.Token()
	}
	outcome := acquireOutcome(err)
	if errors.Is(err, ErrLocked) || errors.Is(err, ledger.ErrNotBelow) {
		err = nil // an answer, not a failure
	}
	s.End(outcome, c.clk.Since(s.start), token, err)
}

// acquireOutcome names how an acquisition ended.
func acquireOutcome(err error) string {
	switch {
	case err == nil:
		return "acquired"
	case errors.Is(err, ErrLocked):
		return "locked"
	case errors.Is(err, ledger.ErrNotBelow):
		return "not_below"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, dynalease.ErrInvalid):
		return "invalid"
	}
	return "error"
}

// startCall starts the span name of a call on l (a release, a guarded
// write), with the lock's key and token.
func (l *Lock) startCall(ctx context.Context, name string) (context.Context, trace.Span) {
	return l.c.k.Tracer().StartCall(ctx, name, l.lease.Key(), l.c.cfg.identity, l.Token())
}

// endCall ends the span of a call on l with its outcome and error; a lost
// lock is also an event with its reason, and its outcome is "lost".
func endCall(span trace.Span, outcome string, err error) {
	tracing.EndCall(span, "dynalease.lock.lost", outcome, err)
}

// semName is a semaphore's name as a fmt.Stringer, for startAcquire.
type semName string

func (n semName) String() string { return string(n) }
