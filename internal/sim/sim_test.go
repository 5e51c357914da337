package sim

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/testbin"
)

var (
	seeds       = flag.Int("sim.seeds", 0, "how many seeds to run (default 20, 3 under the race detector)")
	firstSeed   = flag.Uint64("sim.seed", 1, "the first seed")
	shard       = flag.Int("sim.shard", 0, "this process's share of the seeds: every shards-th from first+shard")
	shards      = flag.Int("sim.shards", 1, "how many processes share the seeds")
	kinds       = flag.String("sim.kinds", "", "the kinds that run, comma-separated (default all)")
	repeatSeeds = flag.Int("sim.repeat", 20, "how many seeds TestASeedRepeatsItsHistory runs twice")
)

// plan returns the plan of the flags' kinds.
func plan() Plan {
	p := DefaultPlan
	if *kinds != "" {
		p.Kinds = strings.Split(*kinds, ",")
	}
	return p
}

// TestSimulation runs the histories of the flags' seeds and fails on the
// first whose checks fail, with the seed and the command that replays it.
// make test runs 500 seeds beside the race-detector run (which runs a
// few); make sim runs as many as asked.
func TestSimulation(t *testing.T) {
	defer Watchdog(30 * time.Second)()
	n := *seeds
	if n == 0 {
		n = 20
		if testbin.Race {
			n = 3 // the race detector makes each history about ten times slower
		}
	}
	start := time.Now()
	steps, ran := 0, 0
	for i := *shard; i < n; i += *shards {
		seed := *firstSeed + uint64(i)
		res := Run(t, seed, plan())
		steps += res.Steps
		ran++
		if len(res.Failures) > 0 {
			t.Fatalf("seed %d failed; replay it with\n\tgo test ./internal/sim -run 'TestSimulation$' -sim.seed=%d -sim.seeds=1 -v%s\n%s\nthe history's last lines:\n%s",
				seed, seed, kindsFlag(), strings.Join(res.Failures, "\n"), res.Log)
		}
	}
	d := time.Since(start)
	t.Logf("%d histories in %v: %.1f a second, %d steps", ran, d.Round(time.Millisecond), float64(ran)/d.Seconds(), steps)
}

// kindsFlag returns the -sim.kinds flag of a replay, "" for all kinds.
func kindsFlag() string {
	if *kinds == "" {
		return ""
	}
	return " -sim.kinds=" + *kinds
}

// One seed makes one history: the same seed run twice gives the same
// fingerprint (the terms, waits, slots and guarded writes, on the world's
// time).
func TestASeedRepeatsItsHistory(t *testing.T) {
	if testbin.Race {
		t.Skip("the race detector changes how the goroutines of one simulated instant interleave")
	}
	defer Watchdog(30 * time.Second)()
	diverged := 0
	for seed := uint64(1); seed <= uint64(*repeatSeeds); seed++ {
		a, b := Trace(t, seed, plan()), Trace(t, seed, plan())
		if a.Fingerprint != b.Fingerprint {
			diverged++
			fa, fb := strings.Split(a.Fingerprint, ";"), strings.Split(b.Fingerprint, ";")
			for i := range min(len(fa), len(fb)) {
				if fa[i] != fb[i] {
					t.Logf("seed %d: fingerprints differ at %d: %s / %s", seed, i, fa[i], fb[i])
					break
				}
			}
		}
	}
	if diverged > 0 {
		t.Fatalf("%d of %d seeds made two histories", diverged, *repeatSeeds)
	}
}
