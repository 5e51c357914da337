package sim

import (
	"flag"
	"strings"
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
	defer Watchdog(30 * time.Second)()
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

// One seed makes one history: the same seed run twice gives the same
// fingerprint.
func TestASeedRepeatsItsHistory(t *testing.T) {
	defer Watchdog(30 * time.Second)()
	diverged := 0
	for seed := uint64(1); seed <= 20; seed++ {
		a, b := Trace(t, seed, DefaultPlan), Trace(t, seed, DefaultPlan)
		if a.Fingerprint != b.Fingerprint {
			diverged++
			fa, fb := strings.Split(a.Fingerprint, ";"), strings.Split(b.Fingerprint, ";")
			for i := range min(len(fa), len(fb)) {
				if fa[i] != fb[i] {
					t.Logf("seed %d: fingerprints differ at %d: %s / %s", seed, i, fa[i], fb[i])
					break
				}
			}
			for i := range min(len(a.Trace), len(b.Trace)) {
				if a.Trace[i] != b.Trace[i] {
					t.Logf("seed %d diverged at event %d:\n%s\n%s", seed, i, strings.Join(a.Trace[max(0, i-8):min(len(a.Trace), i+3)], "\n"), strings.Join(b.Trace[max(0, i-8):min(len(b.Trace), i+3)], "\n"))
					break
				}
			}
		}
	}
	if diverged > 0 {
		t.Fatalf("%d of 20 seeds made two histories", diverged)
	}
}
