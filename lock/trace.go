package lock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/tracing"
)

// acquireSpan is the span of one acquisition while it records: the polls
// and requests of its wait are counted into it. A nil *acquireSpan (the
// span records nothing) does nothing and costs nothing.
type acquireSpan struct {
	span     trace.Span
	start    time.Time
	polls    atomic.Int32
	requests atomic.Int32
}

// acquireSpanNames names the span of each kind of acquisition.
var acquireSpanNames = [...]string{
	kindLock:   "dynalease.lock.acquire",
	kindSet:    "dynalease.lock.acquire_set",
	kindPermit: "dynalease.lock.acquire_permit",
	kindShared: "dynalease.lock.acquire_shared",
}

// startAcquire starts the span of an acquisition of kind k of what (a key,
// a set's keys, a semaphore's name), and returns the context the
// acquisition's requests run under. what is a Stringer, made a string
// only for a span that records.
func (c *Client) startAcquire(ctx context.Context, k kind, what fmt.Stringer, try bool) (context.Context, *acquireSpan) {
	ctx, span := c.cfg.tracer.Start(ctx, acquireSpanNames[k])
	if !span.IsRecording() {
		span.End()
		return ctx, nil
	}
	span.SetAttributes(tracing.Key.String(what.String()), tracing.Kind.String(k.String()), tracing.Identity.String(c.cfg.identity),
		tracing.Try.Bool(try))
	return ctx, &acquireSpan{span: span, start: c.clk.Now()}
}

// watch counts w's polls and requests into s.
func (s *acquireSpan) watch(w *rvnlease.Request) {
	if s == nil {
		return
	}
	w.Observe = func(string, error, time.Duration) { s.requests.Add(1) }
	onPoll := w.OnPoll
	w.OnPoll = func(res rvnlease.Result, obs rvnlease.Observation, err error, took time.Duration) {
		if s.polls.Add(1) == 1 && obs.Known && !obs.Free() {
			s.span.AddEvent("held", trace.WithAttributes(tracing.Holder.String(obs.Holder)))
		}
		if onPoll != nil {
			onPoll(res, obs, err, took)
		}
	}
}

// end ends s with the acquisition's lock l or its error, after a wait of
// waited.
func (s *acquireSpan) end(c *Client, l *Lock, err error) {
	if s == nil {
		return
	}
	s.span.SetAttributes(tracing.Outcome.String(acquireOutcome(err)),
		tracing.WaitMs.Float64(float64(c.clk.Since(s.start))/float64(time.Millisecond)),
		tracing.Polls.Int(int(s.polls.Load())), tracing.Requests.Int(int(s.requests.Load())))
	if l != nil && l.Token() != 0 {
		s.span.SetAttributes(tracing.Token.Int64(l.Token()))
	}
	if errors.Is(err, ErrLocked) || errors.Is(err, ledger.ErrNotBelow) {
		err = nil // an answer, not a failure
	}
	tracing.End(s.span, err)
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
	ctx, span := l.c.cfg.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(tracing.Key.String(l.lease.Key().String()), tracing.Identity.String(l.c.cfg.identity))
		if t := l.Token(); t != 0 {
			span.SetAttributes(tracing.Token.Int64(t))
		}
	}
	return ctx, span
}

// endCall ends the span of a call on l with its outcome and error; a lost
// lock is also an event with its reason, and its outcome is "lost".
func endCall(span trace.Span, outcome string, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	var lost *dynalease.LostError
	if errors.As(err, &lost) {
		outcome = "lost"
		span.AddEvent("dynalease.lock.lost", trace.WithAttributes(tracing.Reason.String(lost.Reason.String())))
	}
	span.SetAttributes(tracing.Outcome.String(outcome))
	tracing.End(span, err)
}

// semName is a semaphore's name as a fmt.Stringer, for startAcquire.
type semName string

func (n semName) String() string { return string(n) }
