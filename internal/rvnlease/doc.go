// Package rvnlease is the RVN-lease protocol, written once for the
// election and lock packages: acquiring a lease (create it, take it over
// after its record version number stayed unchanged for the holder's lease,
// settle a write whose answer was lost or refused) and holding it (renew
// with a write conditioned on identity and RVN, settle its answer, count
// validity from the send of the last confirmed write).
//
// It speaks to storage through a Port, one lease at a time. Its goroutines
// and timers are the Scheduler's, which sends the renewals of every held
// lease (a term of leadership, the locks of a client: one period after the
// previous renewal began), a Deadline's (one hold's validity, on its own
// timer) and a Validities' (the validities of many holds, on one timer set
// for the earliest end); the callers own their other
// loops, callbacks and waits, and ask the engine what a round learned and
// how long to wait.
//
// The invariants the package keeps, on which the safety argument rests:
//   - Validity is counted from the local time just before the confirmed
//     write was sent, never from its answer.
//   - Only an RVN this holder tried to write proves that a row is its
//     own, and then no earlier than that write's send time. A row marked
//     released is never taken as held by an attempt that was not itself
//     a release. The RVNs in doubt are remembered while they can matter
//     (see Attempts); forgetting one can only make a row of ours look
//     like a stranger's, to be waited out: a cost in time, never two
//     holders.
//   - A waiter times an RVN from when an answer first returned it, and
//     restarts only when the RVN changes.
//   - Each write is conditioned on the state the caller passes with it;
//     nothing read in between changes the condition.
package rvnlease
