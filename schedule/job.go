package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
)

// Job is one scheduled job: every instance of a fleet registers the same
// jobs, and each slot of each job runs on one of them.
type Job struct {
	// Name names the job in its lock's key, its metrics and its logs. It
	// must be the same on every instance.
	Name string
	// Schedule names the job's slots (Cron, Every).
	Schedule Schedule
	// Run runs one slot. Its context ends when the run's lock is lost (and
	// when the Scheduler's ends): a run must stop then, since another
	// instance may start the next attempt after the lease. Its error marks
	// the slot failed; nil marks it succeeded.
	Run func(ctx context.Context, r Run) error

	// StartingDeadline is how long after its slot a run may still start.
	// Zero: the lock client's lease plus its refresh period, which is how
	// long a run that died may hold the lock before another instance takes
	// it over. A slot that no instance could start within it is missed.
	StartingDeadline time.Duration
	// Missed says what to do with slots that fell due while no instance
	// ran the job (all were down): RunLatest (the default), SkipMissed or
	// RunEach.
	Missed MissedPolicy
	// CatchUp bounds RunEach: at most this many of the latest missed slots
	// run, oldest first. Zero: 10.
	CatchUp int
	// Retries is how many new attempts a slot gets when a run of it died
	// (its lock lost without finishing) within its starting deadline. Zero:
	// a run that died marks its slot failed. Another instance takes a dead
	// run's lock over a lease after its last renewal, so a retry needs a
	// StartingDeadline longer than the lease plus the run's time so far;
	// after the deadline the slot is recorded failed instead.
	Retries int
	// Overlap says what a slot does when it falls due while the run of an
	// earlier slot still holds the job's lock: wait for it, within its
	// starting deadline (OverlapWait, the default), or be skipped
	// (OverlapSkip). The lock of a run that died stays held until its
	// lease runs out: OverlapSkip skips a slot that falls due before.
	Overlap OverlapPolicy
}

// MissedPolicy is what a job does with slots missed while every instance
// was down.
type MissedPolicy int

// The missed-slot policies.
const (
	// RunLatest runs the latest missed slot once, late; the earlier ones
	// are counted as missed (as Kubernetes CronJobs and Quartz do).
	RunLatest MissedPolicy = iota
	// SkipMissed runs none of them: the next slot runs on time.
	SkipMissed
	// RunEach runs each missed slot, oldest first, up to Job.CatchUp.
	RunEach
)

// OverlapPolicy is what a slot does while an earlier slot's run goes on.
type OverlapPolicy int

// The overlap policies. Runs of one job never overlap: each holds the
// job's lock.
const (
	// OverlapWait waits for the earlier run, within the slot's starting
	// deadline.
	OverlapWait OverlapPolicy = iota
	// OverlapSkip skips the slot when its first try finds the job's lock
	// held: by a live run, or by one that died less than a lease before.
	OverlapSkip
)

// Run is one run of a slot, as the job's Run function receives it.
type Run struct {
	// Job is the job's name.
	Job string
	// Slot is the slot's scheduled instant.
	Slot time.Time
	// Attempt counts the runs of the slot, from 1: a later attempt
	// follows one that died.
	Attempt int
	// Token is the run's fencing token: the ledger's number of the run
	// (its slot in Unix milliseconds × 1000 + its attempt), which grows
	// with every run of the job, so a store that keeps the highest token
	// it saw can refuse the writes of a run that was superseded.
	Token int64
	// Lock is the run's lock, for writes guarded by it (Lock.Guard).
	Lock *lock.Lock
}

const (
	defaultCatchUp = 10
	maxCatchUp     = 1000
)

// check validates j; d is the client's default starting deadline.
func (j *Job) check(d time.Duration) error {
	bad := func(field, format string, args ...any) error {
		return &dynalease.InvalidError{Field: "Job." + field, Reason: fmt.Sprintf("job %q: ", j.Name) + fmt.Sprintf(format, args...)}
	}
	switch {
	case j.Name == "":
		return bad("Name", "is empty")
	case j.Schedule == nil:
		return bad("Schedule", "is nil (Cron or Every makes one)")
	case j.Run == nil:
		return bad("Run", "is nil")
	case j.StartingDeadline < 0:
		return bad("StartingDeadline", "%v is negative", j.StartingDeadline)
	case j.Missed < RunLatest || j.Missed > RunEach:
		return bad("Missed", "unknown policy %d", j.Missed)
	case j.Overlap < OverlapWait || j.Overlap > OverlapSkip:
		return bad("Overlap", "unknown policy %d", j.Overlap)
	case j.CatchUp < 0 || j.CatchUp > maxCatchUp:
		return bad("CatchUp", "%d is not in [0, %d]", j.CatchUp, maxCatchUp)
	case j.Retries < 0 || j.Retries >= lastAttempt-1:
		return bad("Retries", "%d is not in [0, %d)", j.Retries, lastAttempt-1)
	}
	if j.StartingDeadline == 0 {
		j.StartingDeadline = d
	}
	if j.CatchUp == 0 {
		j.CatchUp = defaultCatchUp
	}
	return nil
}
