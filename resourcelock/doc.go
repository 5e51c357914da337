// Package resourcelock is dynalease's storage contract as users meet it:
// the record behind a lease (Record: who holds it, which record version
// number, RVN, they last wrote, for how long that write holds, and whether
// the holder released it), the key that names it (Key), what a write
// expects to find (Precondition), the errors stores return, and two
// interfaces:
//
//   - Store is a table of leases made by dynamodbstore.New (a DynamoDB
//     table whose items have the layout of the AWS Java DynamoDB Lock
//     Client, so that Java and Go hosts share one table) or memorystore.New
//     (in process, for unit tests): what lock, election and schedule take.
//     Its methods are dynalease's own; no other package implements it.
//   - Interface is one lease seen by one holder, in the shape of client-go's
//     resource lock: Get, Create, Update, Identity, Describe. It is the one
//     contract a backend author implements, to give an election.Elector
//     storage other than DynamoDB (election.Config.Lease);
//     resourcelocktest.RunInterfaceConformance checks an implementation.
//
// Holding and Guarded compose a write of the caller's own with a lock's
// ownership, as etcd's Mutex.IsOwner does: lock.Lock.Guard and
// election.Elector.Guard hand their Holding to a Guarded, which
// dynamodbstore's Writes makes of DynamoDB items.
//
// The package imports nothing of AWS and nothing of dynalease's internals.
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
