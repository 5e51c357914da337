// Package resourcelock is the storage contract: the record behind a lease
// (who holds it, which record version number, RVN, they last wrote, for how
// long that write holds, and whether the holder released it), the row a
// store keeps it in, and the one interface a store implements, Store.
// Interface is one lease of a store seen by one holder, in the shape of
// client-go's resource lock: what package election takes.
//
// The package holds nothing else and imports nothing of AWS. The stores
// sit beside it: dynamodbstore on a DynamoDB table, whose items have the
// layout of the AWS Java DynamoDB Lock Client so that Java and Go hosts
// share one table (the only code in dynalease that knows that layout);
// memorystore in process, for unit tests. resourcelocktest holds the
// conformance suite every store runs. Each store classifies its own
// errors: those waiting cannot fix match ErrPermanent (see Permanent),
// throttling ErrThrottled.
//
// # The contract in one paragraph
//
// Every write states what it expects to find, explicitly: Create expects no
// record or a released one; Update expects a given RVN and, for the holder's
// own writes, a given holder identity. The expectation is an argument, never state
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
