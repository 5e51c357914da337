// Package memorystore is a resourcelock.Store that holds leases in
// process, for unit tests of
// code that uses dynalease: a lock.Client or an election.Elector over it
// behaves as over a DynamoDB table, without the network. A test gives it
// a fake clock (clockutil.Fake) as well, and runs minutes of leases in
// microseconds.
package memorystore
