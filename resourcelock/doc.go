// Package resourcelock stores the record behind a lease: who holds it, which
// record version number (RVN) they last wrote, for how long that write holds,
// and whether the holder released it.
//
// Interface is the storage contract used by the election and lock packages.
// DynamoDB implements it on an Amazon DynamoDB table whose items have the
// layout of the AWS Java DynamoDB Lock Client, so Java and Go hosts can share
// one table; it is the only code in dynalease that knows that layout. Memory
// implements the same contract in process for unit tests, and the
// resourcelocktest package holds a conformance suite that any implementation
// can run.
//
// # The contract in one paragraph
//
// Every write states what it expects to find, explicitly: Create expects no
// record or a released one; Update expects a given RVN and, for the holder's
// own writes, a given owner. The expectation is an argument, never state
// cached from an earlier Get, so reading the record (for a health check, or to
// find out whether an ambiguous write landed) can never change what the next
// write is conditioned on. A write whose expectation does not hold fails with
// ErrConflict and changes nothing. Every write stores a caller-chosen fresh
// RVN; RVNs are never reused, so "the record carries RVN r" identifies one
// write.
//
// # What is not guaranteed
//
// An error other than ErrConflict does not say whether a write landed: the
// request may have reached the table before the connection failed or the
// deadline passed, and the SDK may have retried a write that had already
// landed, in which case the retry itself reports ErrConflict. Callers that
// must know re-read the record and look for the RVN they tried to write.
// The wall-clock times stored in a Record are informational; nothing in this
// package, and nothing that uses it correctly, compares them across hosts.
package resourcelock
