// Package resourcelocktest helps test code built on resourcelock.
//
// RunStoreConformance checks that an implementation of resourcelock.Store
// keeps the contract the engine relies on, and that resourcelock.Lease over
// it keeps the one of resourcelock.Interface; dynalease runs it against the
// memory store and DynamoDB Local, and users can run it against their own
// stores. FaultyStore wraps any store to count requests and inject
// failures, including writes that land while the caller sees an error.
// MemoryStore is the in-process store with its rows open to the test.
package resourcelocktest
