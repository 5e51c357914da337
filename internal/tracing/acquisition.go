package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Acquisition is the span of one acquisition of a lock while it records:
// the kernel's wait counts its polls and requests into it. A nil
// *Acquisition (the span records nothing) does nothing and costs nothing.
type Acquisition struct {
	span     trace.Span
	polls    atomic.Int32
	requests atomic.Int32
}

// StartAcquisition starts the span name of an acquisition of what (a
// key, a set's keys, a semaphore's name: made a string only for a span
// that records) of kind, by identity (try: without waiting; permits: a
// semaphore's, zero otherwise), and returns the context the acquisition's
// requests run under.
func (t Tracer) StartAcquisition(ctx context.Context, name string, what fmt.Stringer, kind, identity string, try bool, permits int) (context.Context, *Acquisition) {
	ctx, span := t.Start(ctx, name)
	if !span.IsRecording() {
		span.End()
		return ctx, nil
	}
	span.SetAttributes(Key.String(what.String()), Kind.String(kind), Identity.String(identity), Try.Bool(try))
	if permits > 0 {
		span.SetAttributes(Permits.Int(permits))
	}
	return ctx, &Acquisition{span: span}
}

// Requested counts one request of the acquisition.
func (a *Acquisition) Requested() {
	if a != nil {
		a.requests.Add(1)
	}
}

// Polled counts one poll of the acquisition, which found the lock held by
// holder (empty: not held); the first poll that finds it held is an event
// naming the holder.
func (a *Acquisition) Polled(holder string) {
	if a != nil && a.polls.Add(1) == 1 && holder != "" {
		a.span.AddEvent("held", trace.WithAttributes(Holder.String(holder)))
	}
}

// End ends the span with the acquisition's outcome, its wait, the fencing
// token of the lock it acquired (zero: none) and its error (nil for an
// outcome that is an answer, not a failure).
func (a *Acquisition) End(outcome string, wait time.Duration, token int64, err error) {
	if a == nil {
		return
	}
	a.span.SetAttributes(Outcome.String(outcome), WaitMs.Float64(float64(wait)/float64(time.Millisecond)),
		Polls.Int(int(a.polls.Load())), Requests.Int(int(a.requests.Load())))
	if token != 0 {
		a.span.SetAttributes(Token.Int64(token))
	}
	End(a.span, err)
}

// StartCall starts the span name of a call on a held lock (a release, a
// guarded write) at key, held by identity with token (zero: none).
func (t Tracer) StartCall(ctx context.Context, name string, key resourcelock.Key, identity string, token int64) (context.Context, trace.Span) {
	ctx, span := t.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(Key.String(key.String()), Identity.String(identity))
		if token != 0 {
			span.SetAttributes(Token.Int64(token))
		}
	}
	return ctx, span
}

// EndCall ends the span of a call with its outcome and error; a lost lock
// (a *dynalease.LostError) is also an event named lost with its reason,
// and its outcome is "lost".
func EndCall(span trace.Span, lost, outcome string, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	var le *dynalease.LostError
	if errors.As(err, &le) {
		outcome = "lost"
		span.AddEvent(lost, trace.WithAttributes(Reason.String(le.Reason.String())))
	}
	span.SetAttributes(Outcome.String(outcome))
	End(span, err)
}

// Counts returns the polls and requests counted so far.
func (a *Acquisition) Counts() (polls, requests int) {
	if a == nil {
		return 0, 0
	}
	return int(a.polls.Load()), int(a.requests.Load())
}
