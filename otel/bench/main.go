// Command bench is make bench's row for tracing: what the spans cost an
// acquire+release on the memory store (no DynamoDB, so that the figure is
// the library's and the SDK's alone), with tracing off (no provider
// configured, none set globally) and on (the SDK, every span sampled and
// recorded, no exporter). It prints the table and writes
// otel/bench/results.json.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease/otel/internal/cycle"
)

// row is one configuration's figures per acquire+release.
type row struct {
	Tracing     string  `json:"tracing"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
}

func measure(name string, tp trace.TracerProvider) row {
	// The median of five runs, by time; allocations do not vary.
	var runs []testing.BenchmarkResult
	for range 5 {
		runs = append(runs, testing.Benchmark(func(b *testing.B) { cycle.AcquireRelease(b, tp) }))
	}
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			if runs[j].NsPerOp() < runs[i].NsPerOp() {
				runs[i], runs[j] = runs[j], runs[i]
			}
		}
	}
	r := runs[len(runs)/2]
	return row{Tracing: name, NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N), AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp()}
}

func main() {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	rows := []row{measure("off", nil), measure("on", tp)}
	off, on := rows[0], rows[1]
	fmt.Printf("\nTracing: one acquire+release on the memory store (%s, GOMAXPROCS %d), median of 5\n\n", runtime.Version(), runtime.GOMAXPROCS(0))
	fmt.Println("| tracing | µs per acquire+release | allocs | bytes |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %.1f | %d | %d |\n", r.Tracing, r.NsPerOp/1e3, r.AllocsPerOp, r.BytesPerOp)
	}
	fmt.Printf("| on − off | +%.1f | +%d | +%d |\n", (on.NsPerOp-off.NsPerOp)/1e3, on.AllocsPerOp-off.AllocsPerOp, on.BytesPerOp-off.BytesPerOp)
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	out := filepath.Join("bench", "results.json")
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println("\nwrote otel/" + out)
}
