// Package dynalease is leader election and distributed locking on Amazon
// DynamoDB, safe under pauses, partitions and clock skew.
//
// The library is split into small packages:
//
//   - election: an Elector in the manner of Kubernetes' client-go leader
//     election: callbacks when leadership starts and stops, IsLeader,
//     Leader, a health check.
//   - resourcelock: the storage contract behind a lease, with a DynamoDB
//     implementation whose items the AWS Java DynamoDB Lock Client can
//     read, an in-memory one for unit tests, and a conformance suite.
//   - clockutil: every wait on an injected clock, so timing logic is
//     tested on a fake clock.
//
// Leases are record-version-number (RVN) leases: no host ever compares its
// wall clock with another's. See the election package for the safety
// argument and, above all, for what a lease does not guarantee.
package dynalease
