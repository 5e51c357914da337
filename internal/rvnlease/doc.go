// Package rvnlease is the kernel: the RVN-lease protocol, written once for
// every kind of lock (a key, a set of keys, a semaphore's permit, a term of
// leadership). It acquires a lease (create it, take it over after its
// record version number stayed unchanged for the holder's lease, confirm a
// hand-over, settle a write whose answer was lost or refused), holds it
// (renew with a write conditioned on identity and RVN, settle its answer,
// count validity from the send of the last confirmed write) and releases
// it (mark it released, hand it to the queue's head, or delete it).
//
// Kernel is the kernel as one holder identity runs it, built once (a lock
// client's, an elector's) from Settings: a kind of lock acquires through
// Kernel.Acquire with a Request, holds through the Hold the kernel gives
// (Kernel.Hold), and starts, extends and ends that hold's validity through
// the kernel (Start, Extend, End, Passed, Until); its renewals are the
// kernel's (Renew, or Renewing for one lease at a time). A kind builds
// none of the parts below by hand.
//
// A kind of lock supplies only what is its own: its places, each a
// keylease.Port that folds its rows into one lease and writes what a win
// writes (a key's lease with its options, a set of keys, a semaphore's
// slots), and its rules on top (callbacks, a command to kill). Every Port
// does everything the kernel asks of a lease, or says it cannot with an
// error. Inside the kernel, Wait is the one wait loop: the polls and the
// queue, the watches that outlive a call (Watches), the budget and giving
// up, fencing a win, passing on a hand-over. Its goroutines and timers are
// the Renewer's, which sends the renewals of every held lease (one period
// after the previous renewal began), and a Validities' (the validities of
// holds, on one timer set for the earliest end).
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
