package main

// The short chaos run of make test, and the proof that its checker can
// fail: the same run with deliberately broken variants (broken.go) and
// with drift beyond the margins.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/testbin"
)

// The command built for the worker processes, once for all the tests
// (they start together: each building it would compile everything as
// many times over on a cold build cache).
var (
	chaosOnce sync.Once
	chaosDir  string
	chaosBin  string
	chaosErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if chaosDir != "" {
		os.RemoveAll(chaosDir)
	}
	os.Exit(code)
}

// buildChaos returns this command, built for the worker processes.
func buildChaos(t *testing.T) string {
	t.Helper()
	chaosOnce.Do(func() {
		if chaosDir, chaosErr = os.MkdirTemp("", "chaos"); chaosErr != nil {
			return
		}
		chaosBin = filepath.Join(chaosDir, "chaos")
		chaosErr = testbin.Build(chaosBin, ".", nil)
	})
	if chaosErr != nil {
		t.Fatal(chaosErr)
	}
	return chaosBin
}

// runChaos runs the controller in this process against DynamoDB Local,
// with the first duration set unless cfg says otherwise, five workers of
// which one waits unfairly for locks, and logs the table.
func runChaos(t *testing.T, bin string, cfg runConfig) *Report {
	t.Helper()
	cfg.endpoint = ddbtest.Endpoint(t)
	cfg.bin, cfg.dir, cfg.quiet = bin, t.TempDir(), true
	cfg.workers, cfg.keys, cfg.unfair = 5, 3, 1 // as make chaos: four fair lock clients, one unfair
	// Permits (as make chaos: 2) only where asked: a permit loop doubles
	// each worker's lock traffic, which on a busy machine slows the
	// takeovers the broken-variant runs need to see.
	if cfg.lease == 0 {
		cfg.lease, cfg.renew, cfg.retry = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	}
	r, err := run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	var b strings.Builder
	r.print(&b)
	t.Log(b.String())
	return r
}

// catch runs a broken variant until the checker catches it: first for 8 s,
// then twice as long each time it has not, up to 64 s (two minutes in
// all, against the 25 s these runs once had). A variant is usually caught
// in its first run, so the tests that prove the checker can fail cost
// little; a busy machine, where less happens in a run, gets the longer
// runs it needs instead of a failure. caught says whether r caught it.
func catch(t *testing.T, bin string, cfg runConfig, caught func(r *Report) bool) *Report {
	t.Helper()
	for d := 8 * time.Second; ; d *= 2 {
		cfg.duration = d
		r := runChaos(t, bin, cfg)
		if caught(r) || d >= 64*time.Second {
			return r
		}
		t.Logf("not caught in %v: running again for longer", d)
	}
}

// TestDynamoDBChaosShortRunKeepsTheGuarantees is make test's smoke of the
// chaos run: real processes against DynamoDB Local for 25 s (a fixed
// seed), and no safety check may fail. The histories of faults are the
// simulator's (make test runs 500 of them); the long runs, which must show
// every nemesis action, are make chaos.
//
// A check that saw nothing proves nothing, so the run must also show some
// of everything (terms, holds, sets, permits, the job's runs, readers). On
// a busy machine less happens: the run is then made again, with the next
// seed, up to three runs, and what they saw is added up. Every run must
// be safe.
func TestDynamoDBChaosShortRunKeepsTheGuarantees(t *testing.T) {
	t.Parallel()
	bin := buildChaos(t)
	var seen activity
	for run := 0; run < 3; run++ {
		r := runChaos(t, bin, runConfig{duration: 25 * time.Second, seed: 20261125 + uint64(run), permits: 2, rw: true, jobEvery: time.Second})
		if !r.Safe() {
			t.Errorf("%d safety violations (the table above lists them)", len(r.Violations))
		}
		if r.Crashes != 0 || r.Panics != 0 {
			t.Errorf("%d workers crashed, %d panicked", r.Crashes, r.Panics)
		}
		seen.add(r)
		if t.Failed() || seen.smoke() == "" {
			break
		}
		t.Logf("too little happened so far (%s): running again", seen.smoke())
	}
	if lack := seen.smoke(); lack != "" {
		t.Errorf("too little happened in three runs: %s", lack)
	}
}

// smoke returns what is still too little for a smoke run, or "" when
// some of everything happened.
func (a *activity) smoke() string {
	var lack []string
	if a.terms < 2 || a.holds < 5 || a.acked < 20 || a.samples < 100 {
		lack = append(lack, fmt.Sprintf("%d terms, %d lock holds, %d acknowledged writes, %d samples", a.terms, a.holds, a.acked, a.samples))
	}
	if a.jobStarts < 3 || a.setHolds < 1 || a.permitHolds < 3 || a.readHolds < 3 || a.writeHolds < 1 {
		lack = append(lack, fmt.Sprintf("%d runs of the job, %d set holds, %d permit holds, %d shared and %d exclusive holds of the read-write key",
			a.jobStarts, a.setHolds, a.permitHolds, a.readHolds, a.writeHolds))
	}
	return strings.Join(lack, "; ")
}

// activity adds up what short runs saw.
type activity struct {
	terms, holds, acked, samples, jobStarts, setHolds, permitHolds, maxPermitHolders int
	readHolds, writeHolds, maxReaders, upgrades                                      int
	preemptions, handOvers                                                           int
	nemesis                                                                          map[string]int
}

func (a *activity) add(r *Report) {
	a.terms += r.Terms
	a.holds += r.Holds
	a.acked += r.Acked
	a.samples += r.Samples
	a.jobStarts += r.JobStarts
	a.setHolds += r.SetHolds
	a.permitHolds += r.PermitHolds
	a.maxPermitHolders = max(a.maxPermitHolders, r.MaxPermitHolders)
	a.readHolds += r.ReadHolds
	a.writeHolds += r.WriteHolds
	a.maxReaders = max(a.maxReaders, r.MaxReaders)
	a.upgrades += r.Upgrades
	a.preemptions += r.Preemptions
	a.handOvers += r.HandOvers
	if a.nemesis == nil {
		a.nemesis = map[string]int{}
	}
	for k, n := range r.Nemesis {
		a.nemesis[k] += n
	}
}

// TestDynamoDBChaosCatchesAWriterThatDoesNotExcludeReaders runs the
// variant whose writers of the read-write key take it shared: a writer
// then holds with readers, and the checker must say so.
func TestDynamoDBChaosCatchesAWriterThatDoesNotExcludeReaders(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 9, broken: brokenRW, rw: true, actions: []string{"quiet"}},
		func(r *Report) bool { return r.count("rw") > 0 })
	if r.count("rw") == 0 {
		t.Errorf("the checker found no writer holding with readers in a build whose writers take the key shared (%d shared, %d exclusive holds)", r.ReadHolds, r.WriteHolds)
	}
}

// TestDynamoDBChaosCatchesASetTakenByItsFirstKey runs the variant whose
// sets take their first key alone: a worker then believes it holds the
// other key while another holds it, and the checker must say so.
func TestDynamoDBChaosCatchesASetTakenByItsFirstKey(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 6, broken: brokenSet, actions: []string{"stop-holder"}},
		func(r *Report) bool { return r.count("overlap") > 0 })
	if r.count("overlap") == 0 {
		t.Error("the checker found no key held twice in a build whose sets take their first key alone")
	}
}

// TestDynamoDBChaosCatchesASemaphoreAdmittingOneMore runs the variant
// whose workers ask for one permit more than the run's bound: three then
// hold permits at once, and the checker must say so.
//
// Three holders at once need enough permit holds to meet, which a busy
// machine makes fewer of in the same time (12 in 25 s, once, with make
// chaos and two busy loops beside it): the run is made longer (catch)
// until it is caught or has held 40 permits; the test fails only when
// enough happened and nothing was caught.
func TestDynamoDBChaosCatchesASemaphoreAdmittingOneMore(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 7, broken: brokenPermit, actions: []string{"stop-holder"}, permits: 2},
		func(r *Report) bool { return r.count("permits") > 0 || r.PermitHolds >= 40 })
	if r.count("permits") == 0 {
		t.Errorf("the checker found no more holders than permits in a build whose semaphore admits one more (at most %d at once)", r.MaxPermitHolders)
	}
	if r.count("overlap") != 0 {
		t.Errorf("%d overlaps: a semaphore admitting one more still holds each slot once", r.count("overlap"))
	}
}

// TestDynamoDBChaosCatchesAGuardThatAdmitsAnyRow runs the variant whose lock
// check admits any row: a write held past its holder's lease must then be
// committed after the next holder's, and the checker must say so.
func TestDynamoDBChaosCatchesAGuardThatAdmitsAnyRow(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 2, broken: brokenGuard, actions: []string{"pause-write"}},
		func(r *Report) bool { return r.count("stale") > 0 })
	if r.count("stale") == 0 {
		t.Error("the checker found no stale write committed by a build whose guard admits any row")
	}
}

// TestDynamoDBChaosCatchesDriftBeyondTheMargin runs with the smallest
// margins the library accepts (1%: lease 2 s, renew deadline 1.98 s, lock
// margin 20 ms), with the documented drift ρ those margins allow, where
// nothing may overlap, and with a drift far beyond it, where a slowed
// leader cut off from DynamoDB still believes it leads after another took
// over, and the checker must say so.
//
// The second run's ρ is 0.5, not just over the margin: a slowed leader's
// belief (1.98 s × 1.5 ≈ 3 s after its last renewal was sent) must outlast
// the longest a waiter can take to take over (its lease of 2 s, plus up to
// a retry period before it first saw the last RVN and another, with
// jitter, before its takeover write, plus the round trips, ≈ 2.6 s) on
// every slow-cut, however busy the machine, so that the run cannot miss
// it by chance. A ρ just over the margin overlaps only when a waiter
// happens to poll right after the lease, which a short run may never see
// (and did not once, on a loaded machine, with ten times the documented
// drift).
func TestDynamoDBChaosCatchesDriftBeyondTheMargin(t *testing.T) {
	t.Parallel()
	bin := buildChaos(t)
	minimal := runConfig{lease: 2 * time.Second, renew: 1980 * time.Millisecond, retry: 200 * time.Millisecond,
		lockMargin: 20 * time.Millisecond, actions: []string{"drift", "partition", "stop-leader", "slow-cut"}}
	within := minimal
	within.duration, within.seed, within.drift = 30*time.Second, 5, DocumentedDrift
	if r := runChaos(t, bin, within); !r.Safe() {
		t.Errorf("%d safety violations with the documented drift at the smallest margins", len(r.Violations))
	}
	beyond := minimal
	beyond.seed, beyond.drift, beyond.actions = 4, 0.5, []string{"slow-cut"}
	if r := catch(t, bin, beyond, func(r *Report) bool { return r.count("overlap") > 0 }); r.count("overlap") == 0 {
		t.Error("the checker found no overlap with a leader slowed by half and cut off")
	}
}

// TestDynamoDBChaosCatchesATermLongerThanTheLeaseOthersWait runs the
// variant whose leaders advertise a lease of half their renew deadline: a
// stopped leader then still believes it leads after another took over.
func TestDynamoDBChaosCatchesATermLongerThanTheLeaseOthersWait(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 3, broken: brokenTerm, actions: []string{"stop-leader"}},
		func(r *Report) bool { return r.count("overlap") > 0 })
	if r.count("overlap") == 0 {
		t.Error("the checker found no overlapping leadership in a build whose terms outlive RenewDeadline")
	}
}

// TestDynamoDBChaosCatchesALedgerNotWrittenWithTheLock runs the variant
// whose scheduled job reads its ledger, takes the lock by an ordinary
// write and records the slot only as it releases: workers that read
// before any records start a slot twice, and the checker must say so.
func TestDynamoDBChaosCatchesALedgerNotWrittenWithTheLock(t *testing.T) {
	t.Parallel()
	r := catch(t, buildChaos(t), runConfig{seed: 8, broken: brokenLedger, actions: []string{"quiet"}, jobEvery: time.Second},
		func(r *Report) bool { return r.count("job") > 0 })
	if r.count("job") == 0 {
		t.Errorf("the checker found no slot started twice in a build whose ledger is not written with the lock (%d runs)", r.JobStarts)
	}
}
