// Package schedule runs scheduled jobs across a fleet: every instance runs
// a Scheduler with the same jobs, and each slot of each job (an instant its
// schedule names) runs once, on one instance, through crashes, failovers
// and skewed clocks.
//
// # The ledger
//
// Each job has a lock (lock.Client, key Config.KeyPrefix + the job's name).
// Its row keeps a ledger of integers beside the lock's attributes: the last
// run started (jobRun: the slot in Unix milliseconds × 1000 + the
// attempt), the last slot finished (jobDone) and its outcome. A run of slot
// S, attempt a, starts only by the write that takes the job's lock, and
// that write is conditioned on the ledger and advances it, in the same
// request:
//
//	admit only if jobRun < S×1000+a and jobDone < S; set jobRun = S×1000+a
//
// A run that ends releases the lock with jobDone = S and its outcome in the
// release's write, and, when it succeeded, jobSucceeded = S (the
// metrics' due time counts from it).
//
// # Guarantees, and why they hold
//
//   - Each attempt of a slot starts at most once across the fleet, ever,
//     and a slot that finished never starts again. Two starts of the same
//     attempt would need two taking writes that both found jobRun below
//     S×1000+a; the store applies conditional writes to one row one at a
//     time, and the first sets it there. A new attempt is admitted only
//     while jobDone < S.
//   - A slot never starts after a later slot of the job started: that start
//     set jobRun to at least S'×1000+1, above every S×1000+a for S < S'.
//   - A slot runs only while its run holds the lock: Run's context is the
//     lock's (lock.Lock.Context), which ends when the lock is lost, before
//     any other instance can take it over (the lock's validity rule).
//   - Every slot starts within its starting deadline while one instance
//     lives and the store answers, except a slot that an OverlapSkip job
//     skips (below). Each instance tries each due slot from its own clock;
//     a free lock is taken at once, and a lock held by a run that died is
//     taken over after the lease. The default deadline, the lock client's
//     lease plus its refresh period, leaves room for that takeover. A slot
//     nobody started in time is reported missed, not run late (but see the
//     missed-slot policies).
//   - A run that dies (its lock lost, its slot unfinished) is settled by the
//     next instance to take the lock: a new attempt of the same slot within
//     its deadline when Job.Retries allows, or else the slot is recorded
//     failed. Every instance watches an unfinished slot, whether or not it
//     tried the slot itself, by waiting for the job's lock until the next
//     slot: a live run's renewals keep it waiting, and its release with the
//     slot finished refuses the settling write. A run cut short by its
//     instance stopping (Run's context ending), an attempt whose lock
//     could not be given a fencing token, and one whose taking write was
//     in doubt, landed unseen and was abandoned, are settled the same way
//     (each advanced jobRun without a run). A later
//     slot that falls due first supersedes it.
//   - Slots missed while every instance was down follow Job.Missed: the
//     latest runs once (RunLatest), none run (SkipMissed), or each runs,
//     oldest first, up to Job.CatchUp (RunEach). Each start is the same
//     conditional write, so a fleet that comes back at once starts each
//     chosen slot once.
//   - Runs of one job never overlap (each holds the job's lock); a slot due
//     while an earlier run holds the lock waits for it within its deadline
//     (OverlapWait) or is skipped (OverlapSkip). The instance whose run it
//     was applies the same policy once its run ends, not the missed-slot
//     policy: those slots were not missed by a fleet that was down.
//     OverlapSkip decides at the slot's first try, and cannot yet tell a
//     run that died from a live one: until the dead run's lease runs out
//     its lock is held, so a slot that falls due within a lease of a run's
//     death is skipped too (the dead run's own slot is settled as above,
//     and the slot after starts). A run that finished released the lock,
//     so it does not make the next slot skipped, unless its release could
//     not be confirmed (the row then stays held until its lease runs out).
//   - The ledger lives as long as the row: a lock client that sets a TTL
//     on its rows is refused (DynamoDB would delete the ledger with the
//     row, and a slot could start again).
//
// What is not guaranteed: that a slot runs to completion (a run whose lock
// is lost is cancelled; with Retries it is tried again); that a run's side
// effects outside the store stop the instant its lock is lost (pass
// Run.Token to a store that checks it, or write through Run.Lock.Guard);
// that the instance that runs a slot is any particular one. Events and
// metrics are each instance's view: a slot skipped or missed is reported
// by every instance that found it so.
//
// # Clocks
//
// An instance's wall clock decides only which slot is due and when to try
// it, never whether a start is safe: the ledger compares slot numbers, not
// clocks, and the lock counts its lease on monotonic time. An instance
// whose clock is behind tries a slot late, and finds it started (its write
// is refused); it can never start a slot again, nor an earlier one after a
// later one. An instance whose clock is ahead by d tries a slot d early by
// real time: a slot starts at most d early, where d is the largest skew
// ahead among the fleet's clocks, and no earlier.
//
// # Spread
//
// An instance tries only the jobs it was given, so it never takes a job it
// cannot run. An instance with runs under way delays its attempts at other
// slots a little for each (Config.SpreadStep), so that idle instances tend
// to win and the jobs spread over the fleet; safety never depends on it.
package schedule
