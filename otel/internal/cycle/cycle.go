// Package cycle is the benchmark of what tracing costs a lock client: the
// Go benchmarks of the module and its bench command (make bench) run it.
package cycle

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// AcquireRelease acquires and releases a free key b.N times on the memory
// store, with tp as the client's TracerProvider (nil: tracing off, as long
// as no global provider is set).
func AcquireRelease(b *testing.B, tp trace.TracerProvider) {
	c, err := lock.New(lock.Config{Store: memorystore.New(), Identity: "bench", TracerProvider: tp})
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
