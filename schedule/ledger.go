package schedule

import (
	"time"

	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/lock"
)

// ledgered are package lock's options that write the ledger: Take, of
// the acquisition that starts or closes a slot, and Close, of the release
// that finishes one; and what it reads: a row's ledger (Numbers) and a
// client's lease, refresh period and TTL (Timing) (internal/ledger).
var ledgered = ledger.Lock[lock.AcquireOption, lock.ReleaseOption, lock.Info, *lock.Client]()

// The ledger: integers on the job's lock row (see the package doc).
const (
	// runAttribute is the last run started: its slot in Unix
	// milliseconds × attemptsPerSlot + its attempt.
	runAttribute = "jobRun"
	// doneAttribute is the last slot finished, in Unix milliseconds.
	doneAttribute = "jobDone"
	// outcomeAttribute is how the run of doneAttribute's slot ended.
	outcomeAttribute = "jobOutcome"
	// succeededAttribute is the last slot that succeeded, in Unix
	// milliseconds: the metrics' due time counts from it.
	succeededAttribute = "jobSucceeded"

	attemptsPerSlot = 1000
	// lastAttempt is the attempt number that closes a slot without a run:
	// no attempt can follow it.
	lastAttempt = attemptsPerSlot - 1
)

// Status is how a slot ended, as the ledger keeps it (finished: succeeded
// or failed), or that it has not (unfinished).
type Status int64

// The outcomes of a slot.
const (
	// Unfinished: no run of the slot has finished (it runs, or died).
	Unfinished Status = 0
	// Succeeded: a run returned nil.
	Succeeded Status = 1
	// Failed: a run returned an error, or the last attempt allowed died.
	Failed Status = 2
)

// String names the status.
func (o Status) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	}
	return "unfinished"
}

// slotLedger is a job row's ledger as read.
type slotLedger struct {
	slot    time.Time // the last slot started; zero when none
	attempt int
	done    time.Time // the last slot finished; zero when none
	outcome Status
	// succeeded is the last slot that succeeded; zero when none.
	succeeded time.Time
}

func ledgerOf(numbers map[string]int64) slotLedger {
	var l slotLedger
	if run, ok := numbers[runAttribute]; ok {
		l.slot = time.UnixMilli(run / attemptsPerSlot).UTC()
		l.attempt = int(run % attemptsPerSlot)
	}
	if done, ok := numbers[doneAttribute]; ok {
		l.done = time.UnixMilli(done).UTC()
		l.outcome = Status(numbers[outcomeAttribute])
	}
	if ok, found := numbers[succeededAttribute]; found {
		l.succeeded = time.UnixMilli(ok).UTC()
	}
	return l
}

// finished reports whether slot s finished.
func (l slotLedger) finished(s time.Time) bool { return !l.done.IsZero() && !l.done.Before(s) }

// run encodes the start of slot s's attempt a.
func run(s time.Time, a int) int64 { return s.UnixMilli()*attemptsPerSlot + int64(a) }

// startWrites returns the numbers and bounds of the write that starts slot
// s's attempt a: the ledger's last run below it, and slot s not finished.
func startWrites(s time.Time, a int) (numbers, below map[string]int64) {
	r := run(s, a)
	return map[string]int64{runAttribute: r}, map[string]int64{runAttribute: r, doneAttribute: s.UnixMilli()}
}

// settledBy returns the ledger that a confirmed release finishing st as o
// leaves over led, the ledger st was planned from: st's run, st's slot
// done as o, and the last success moved only by a success (doneWrites).
func settledBy(led slotLedger, st step, o Status) *slotLedger {
	after := slotLedger{slot: st.slot, attempt: st.attempt, done: st.slot, outcome: o, succeeded: led.succeeded}
	if o == Succeeded {
		after.succeeded = st.slot
	}
	return &after
}

// doneWrites returns the numbers of the release that finishes slot s.
func doneWrites(s time.Time, o Status) map[string]int64 {
	n := map[string]int64{doneAttribute: s.UnixMilli(), outcomeAttribute: int64(o)}
	if o == Succeeded {
		n[succeededAttribute] = s.UnixMilli()
	}
	return n
}
