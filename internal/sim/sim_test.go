package sim

import (
	"flag"
	"testing"
	"time"
)

var (
	seeds     = flag.Int("sim.seeds", 20, "how many seeds to run")
	firstSeed = flag.Uint64("sim.seed", 1, "the first seed")
)

// TestSimulation runs histories of consecutive seeds and fails on the
// first whose checks fail, printing the seed and how to replay it.
func TestSimulation(t *testing.T) {
	start := time.Now()
	steps := 0
	for i := range *seeds {
		seed := *firstSeed + uint64(i)
		res := Run(t, seed, DefaultPlan)
		steps += res.Steps
		if len(res.Failures) > 0 {
			t.Fatalf("seed %d failed (replay: go test ./internal/sim -run TestSimulation -sim.seed=%d -sim.seeds=1 -v):\n%v\nthe history's last lines:\n%s", seed, seed, res.Failures, res.Log)
		}
	}
	d := time.Since(start)
	t.Logf("%d histories in %v (%.0f a second), %d steps", *seeds, d, float64(*seeds)/d.Seconds(), steps)
}
