package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Term is the span of an elector's term while it records. A nil *Term
// (the span records nothing) does nothing and costs nothing.
type Term struct{ span trace.Span }

// StartTerm starts the span of a term of identity in election (priority:
// its candidate's, zero for none), and returns the context the term's
// work runs under.
func (t Tracer) StartTerm(ctx context.Context, election, identity string, priority int64) (context.Context, *Term) {
	ctx, span := t.Start(ctx, "dynalease.election.term")
	if !span.IsRecording() {
		span.End()
		return ctx, nil
	}
	span.SetAttributes(Election.String(election), Identity.String(identity))
	if priority != 0 {
		span.SetAttributes(Priority.Int64(priority))
	}
	return ctx, &Term{span: span}
}

// Token records the term's fencing token (zero: none).
func (s *Term) Token(token int64) {
	if s != nil && token != 0 {
		s.span.SetAttributes(Token.Int64(token))
	}
}

// SteppedDown is the event of the term stepping down for heir, of
// priority, because of why.
func (s *Term) SteppedDown(heir string, priority int64, why string) {
	if s != nil {
		s.span.AddEvent("dynalease.step_down", trace.WithAttributes(Heir.String(heir), Priority.Int64(priority), Reason.String(why)))
	}
}

// RenewalFailed is the event of a renewal that did not land, with its
// outcome.
func (s *Term) RenewalFailed(outcome string) {
	if s != nil {
		s.span.AddEvent("dynalease.renewal_failed", trace.WithAttributes(Outcome.String(outcome)))
	}
}

// End ends the span with the term's outcome, the reason of its loss
// (empty when not lost), its renewals that landed and its error (nil for
// an end that is no failure).
func (s *Term) End(outcome, reason string, renewals int64, err error) {
	if s == nil {
		return
	}
	if reason != "" {
		s.span.SetAttributes(Reason.String(reason))
	}
	s.span.SetAttributes(Outcome.String(outcome), Renewals.Int64(renewals))
	End(s.span, err)
}
