package dynaotel_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dynalease/dynalease/otel/internal/cycle"
)

// Tracing off: no provider configured, none set globally.
func BenchmarkAcquireReleaseTracingOff(b *testing.B) { cycle.AcquireRelease(b, nil) }

// Tracing on: every span sampled and recorded (no exporter: the cost is
// the library's and the SDK's, not an export's).
func BenchmarkAcquireReleaseTracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	cycle.AcquireRelease(b, tp)
}
