// Package metrics is what the election and lock packages report for
// monitoring: a small interface per kind of user, with a no-op default, so
// that the core packages depend on no metrics library. Package prommetrics
// implements it with Prometheus' client_golang.
//
// An Election is set per Elector (election.Config.Metrics) and a Locks per
// lock Client (lock.Config.Metrics); there is no global state. Its methods are
// called from the library's loops and request paths: they must be safe for
// concurrent use, must not block, and should be cheap. Labels stay
// bounded: an election's name or a lock client's name, an operation, an
// outcome or a reason, never a lock key.
package metrics

import "time"

// Outcome classifies a request or a round.
type Outcome string

// The outcomes reported. A write refused because another owner holds the
// lease is ConditionFailed at the request level and Lost at the level of a
// renewal or heartbeat.
const (
	OK              Outcome = "ok"
	ConditionFailed Outcome = "condition_failed"
	Throttled       Outcome = "throttled"
	Timeout         Outcome = "timeout"
	Error           Outcome = "error"
	Lost            Outcome = "lost"
	Held            Outcome = "held" // a campaign round or acquire poll that found another owner
)

// Requests receives every request to DynamoDB (or another store) that the
// library sends, and every guarded write.
type Requests interface {
	// Request reports one store call: op is "get", "create", "update",
	// "remove", "fence", "join", "leave", "scan" or "guard"; d is its
	// latency, the SDK's retries included.
	Request(op string, outcome Outcome, d time.Duration)
	// GuardedWrite reports one guarded write: "committed", "lock_lost",
	// "condition_failed" (the caller's own), "conflict" (given up after
	// transaction conflicts) or "error"; and "conflict_retried" for each
	// retry after a transaction conflict (lock clients; an Elector's lease
	// reports it when its dynamodbstore.Config.OnGuardConflict calls this).
	GuardedWrite(outcome string)
	// Failing reports the failure the library keeps retrying and since
	// when it has; err nil means requests succeed again. A caller that
	// cannot reach its table is an alert, not silence.
	Failing(err error, since time.Time)
}

// Election receives one Elector's reports.
type Election interface {
	Requests
	// Leading reports whether this candidate leads now, and the current
	// term's validity (the zero time when not leading).
	Leading(leading bool, validUntil time.Time)
	// LeaderChanged counts a change of the observed holder.
	LeaderChanged()
	// Round reports one campaign round: OK when it acquired, Held when
	// another candidate leads, Error when it learned nothing.
	Round(outcome Outcome, d time.Duration)
	// Renewal reports one renewal by the leader: OK, Lost (taken,
	// released or deleted) or Error (not confirmed).
	Renewal(outcome Outcome, d time.Duration)
}

// Locks receives one lock Client's reports.
type Locks interface {
	Requests
	// Acquired reports a lock of kind (KindLock, KindSet, KindPermit or
	// KindShared)
	// handed out after waiting d.
	Acquired(kind string, wait time.Duration)
	// Released reports a lock of kind given up by its holder.
	Released(kind string)
	// LockLost reports a lock of kind lost, by reason: "expired",
	// "stolen", "released_elsewhere" or "deleted".
	LockLost(kind, reason string)
	// Heartbeat reports one heartbeat: OK, Lost or Error.
	Heartbeat(outcome Outcome, d time.Duration)
}

// The kinds of lock a Locks is told of: a lock on one key, on a set of
// keys, a permit of a semaphore, or a shared hold of one key (a reader).
const (
	KindLock   = "lock"
	KindSet    = "set"
	KindPermit = "permit"
	KindShared = "shared"
)

// Kinds lists every kind, for recorders that make their series up front.
var Kinds = []string{KindLock, KindSet, KindPermit, KindShared}

// ElectionWork is implemented by an Election recorder that also reports
// whether the leader's work runs: an Elector whose Config.Metrics
// implements it calls Working(true) just before OnStartedLeading and
// Working(false) once it has returned. Work running while Leading last
// said false is what the liveness check fails on (health.Liveness, after
// its tolerance): the alert for a leader acting without leadership.
type ElectionWork interface {
	Working(running bool)
}

// LockWaits is implemented by a Locks recorder that also reports the
// acquisitions under way and the hand-overs: a lock Client whose
// Config.Metrics implements it calls Waiting(kind, 1) as an acquisition of
// kind starts (Acquire, TryAcquire and their kin), Waiting(kind, -1) as it
// returns, and HandedOver(kind) when a release hands the lock to the next
// waiter of its queue. Waiting for KindLock, beside held for KindShared,
// is a read-write key's writers waiting while readers hold.
type LockWaits interface {
	Waiting(kind string, delta int)
	HandedOver(kind string)
}

// ElectionHandOvers is implemented by an Election recorder that also
// counts hand-overs: an Elector whose Config.Metrics implements it calls
// TermHandedOver(reason) when a term of its ends by handing the lease to
// another candidate, reason HandOverPriority (a live candidate of higher
// priority) or HandOverRequested (Elector.HandOver).
type ElectionHandOvers interface {
	TermHandedOver(reason string)
}

// The reasons of ElectionHandOvers.TermHandedOver.
const (
	HandOverPriority  = "priority"
	HandOverRequested = "requested"
)

// The slot events of Jobs.Slots.
const (
	SlotStarted   = "started"
	SlotSucceeded = "succeeded"
	SlotFailed    = "failed"
	SlotSkipped   = "skipped"
	SlotMissed    = "missed"
)

// Jobs receives a scheduler's reports (package schedule), by job name: a
// bounded label, the jobs a fleet runs.
type Jobs interface {
	// Slots counts n slots of job by event: SlotStarted on this
	// instance, SlotSucceeded or SlotFailed as its run ended, SlotSkipped
	// by policy, SlotMissed (nobody started them within their deadline, as
	// this instance found them).
	Slots(job, event string, n int)
	// Lateness reports how long after its slot a run started.
	Lateness(job string, d time.Duration)
	// RunDuration reports how long a run ran.
	RunDuration(job string, d time.Duration)
	// Succeeded reports a run that succeeded, at the time it ended.
	Succeeded(job string, at time.Time)
	// Due reports by when the job must succeed again lest two of its
	// slots pass without a success: the second slot after the last one
	// that succeeded, as the job's ledger keeps it, plus the slot's
	// starting deadline (from when the instance started, for a job that
	// never succeeded). Every instance reports the same time, and an
	// irregular schedule (a weekday cron) does not raise the alert over a
	// weekend.
	Due(job string, by time.Time)
}

// Nop is an Election, a Locks and a Jobs that records nothing: the
// default.
type Nop struct{}

var (
	_ Election          = Nop{}
	_ Locks             = Nop{}
	_ LockWaits         = Nop{}
	_ ElectionHandOvers = Nop{}
	_ Jobs              = Nop{}
)

func (Nop) Slots(string, string, int)         {}
func (Nop) Lateness(string, time.Duration)    {}
func (Nop) RunDuration(string, time.Duration) {}
func (Nop) Succeeded(string, time.Time)       {}

// Due implements Jobs.
func (Nop) Due(string, time.Time) {}

func (Nop) Request(string, Outcome, time.Duration) {}
func (Nop) GuardedWrite(string)                    {}
func (Nop) Failing(error, time.Time)               {}
func (Nop) Leading(bool, time.Time)                {}
func (Nop) LeaderChanged()                         {}
func (Nop) Round(Outcome, time.Duration)           {}
func (Nop) Renewal(Outcome, time.Duration)         {}
func (Nop) Acquired(string, time.Duration)         {}
func (Nop) Released(string)                        {}
func (Nop) LockLost(string, string)                {}
func (Nop) Heartbeat(Outcome, time.Duration)       {}
func (Nop) Waiting(string, int)                    {}
func (Nop) HandedOver(string)                      {}
func (Nop) TermHandedOver(string)                  {}
