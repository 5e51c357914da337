// Package tracing starts the library's spans on an OpenTelemetry tracer:
// the configured TracerProvider's, or else the global one.
//
// Tracing is off, and costs nothing (no allocation, no attribute built),
// while no provider was configured and the application has not installed
// a global one (otel.SetTracerProvider): Start then returns the caller's
// context and a span that records nothing. Callers build attributes only
// for a span that records (trace.Span.IsRecording).
package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of the library's spans.
const Scope = "github.com/dynalease/dynalease"

// The attributes of the library's spans.
const (
	Key      = attribute.Key("dynalease.lock.key")
	Kind     = attribute.Key("dynalease.lock.kind")
	Identity = attribute.Key("dynalease.identity")
	Outcome  = attribute.Key("dynalease.outcome")
	Reason   = attribute.Key("dynalease.reason")
	WaitMs   = attribute.Key("dynalease.wait_ms")
	Polls    = attribute.Key("dynalease.polls")
	Requests = attribute.Key("dynalease.requests")
	Try      = attribute.Key("dynalease.try")
	Holder   = attribute.Key("dynalease.holder")
	Token    = attribute.Key("dynalease.fencing.token")
	Election = attribute.Key("dynalease.election")
	Renewals = attribute.Key("dynalease.renewals")
	Job      = attribute.Key("dynalease.job")
	Slot     = attribute.Key("dynalease.job.slot")
	Attempt  = attribute.Key("dynalease.job.attempt")
	Permits  = attribute.Key("dynalease.permits")
	Priority = attribute.Key("dynalease.election.priority")
	Heir     = attribute.Key("dynalease.election.successor")
	// dynalease.guard.items, the items of a guarded write, is set by the
	// store that commits it (dynamodbstore's Guard), on the caller's span.
)

// initial is the global provider as it was when this package was loaded:
// the API's default, which records nothing until the application sets one.
var initial = otel.GetTracerProvider()

// off is the span of a call while tracing is off, boxed once.
var off trace.Span = noop.Span{}

// Tracer starts spans on the configured provider, or on the global one
// once the application has set it. The zero Tracer uses the global one.
type Tracer struct {
	configured trace.Tracer
}

// New returns the Tracer of tp; nil means the global provider.
func New(tp trace.TracerProvider) Tracer {
	if tp == nil {
		return Tracer{}
	}
	return Tracer{configured: tp.Tracer(Scope)}
}

// Start starts the span name under ctx, and returns the context that
// carries it. With tracing off it returns ctx itself and a span that
// records nothing, without allocating.
func (t Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tr := t.configured
	if tr == nil {
		tp := otel.GetTracerProvider()
		if tp == initial {
			return ctx, off
		}
		tr = tp.Tracer(Scope)
	}
	return tr.Start(ctx, name, opts...)
}

// End ends span with err: an error status and the error recorded when err
// is not nil. A span that does not record is left alone.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
