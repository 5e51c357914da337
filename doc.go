// Package dynalease is leader election and distributed locking on Amazon
// DynamoDB, safe under pauses, partitions and clock skew.
//
// The library is split into small packages:
//
//   - election: an Elector in the manner of Kubernetes' client-go leader
//     election: callbacks when leadership starts and stops, IsLeader,
//     Leader, a health check.
//   - lock: a lock client for any number of keys: acquire, heartbeats,
//     lost-lock notification, release, fencing tokens, guarded writes.
//   - resourcelock: the storage contract behind a lease, in the library's
//     own types, an in-memory store for unit tests, and (in
//     resourcelocktest) a conformance suite and fault injectors.
//   - resourcelock/dynamodbstore: the store on a DynamoDB table whose items
//     the AWS Java DynamoDB Lock Client can read and write.
//   - metrics, metrics/prommetrics, health: what operators watch.
//   - cmd/dynalease: the command that runs a program only while it holds
//     a lock or leads.
//
// This package holds the one thing both election and lock return: the
// loss of a hold (LostError, ErrLost), stolen, expired, released elsewhere
// or deleted.
//
// Leases are record-version-number (RVN) leases: no host ever compares its
// wall clock with another's. See the election package for the safety
// argument and, above all, for what a lease does not guarantee.
package dynalease
