// Package dynaotel joins dynalease to OpenTelemetry, in a module of its
// own so that the core's dependencies stay the OpenTelemetry API alone.
//
// The core's calls start their spans on the TracerProvider their Config
// names (lock.Config, election.Config, schedule.Config), or on the global
// one; this module holds what needs the SDK: the tests of those spans
// against the SDK's in-memory exporter, and the example of a service's
// trace (see docs/design/tracing.md for the spans and their attributes).
package dynaotel
