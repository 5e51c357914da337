package dynaotel_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// benchCycles acquires and releases a free key b.N times on the memory
// store, with tp as the client's TracerProvider (nil: tracing off).
func benchCycles(b *testing.B, tp trace.TracerProvider) {
	c, err := lock.New(lock.Config{Store: resourcelock.NewMemoryStore(), Identity: "bench", TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// Tracing off: no provider configured, none set globally.
func BenchmarkAcquireReleaseTracingOff(b *testing.B) { benchCycles(b, nil) }

// Tracing on: every span sampled and recorded (no exporter: the cost is
// the library's and the SDK's, not an export's).
func BenchmarkAcquireReleaseTracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchCycles(b, tp)
}
