// Package lock is a fine-grained lock client on a DynamoDB table: lock any
// string key (a customer, a job, a campaign) for a while, keep it alive with
// background heartbeats, and learn at once when it is lost.
//
// Its rows are those of the AWS Java DynamoDB Lock Client (attributes key,
// ownerName, leaseDuration in milliseconds, recordVersionNumber, data,
// isReleased), so Go and Java hosts can share one lock table: a Java holder
// blocks an Acquire here until it releases or stays silent for its lease,
// and the other way round.
//
// # Leases
//
// Every write of a lock row carries a fresh record version number (RVN).
// A waiting client notes, on its own monotonic clock, when it first read a
// holder's RVN, and takes the lock over only after that RVN has stayed
// unchanged for the lease written in the row, with a write conditioned on
// it. The holder counts its lock valid until its lease minus a safety
// margin after it sent its last confirmed write (ValidUntil); heartbeats
// move that bound. No wall-clock time is compared between hosts.
//
// Every write whose answer is lost, a conditional failure included (the
// AWS SDK retries on its own, and the retry of a write that landed fails
// its condition), is resolved by reading the row back: an RVN this client
// tried to write means the write landed.
//
// # What is not guaranteed
//
// A lease bounds how long the holder believes it holds the lock, not what
// its process does meanwhile: a holder that checked IsHeld, or started work
// under the lock's context, and then paused (a garbage-collection pause,
// SIGSTOP, a stalled virtual machine) can act after its lock was lost and
// taken by someone else. Only the resource can refuse such late actions.
// Lost-lock notification (Done, Err, the lock's context, the session
// monitor) is prompt but cannot force work to stop.
//
// Release and Heartbeat are conditioned on this owner and the lock's RVN,
// so they never change anybody else's lock. Two Clients must not share an
// owner name.
package lock
