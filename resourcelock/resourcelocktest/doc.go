// Package resourcelocktest helps test code built on resourcelock.
//
// RunConformance checks that an implementation of resourcelock.Interface
// keeps the contract the election package relies on, and
// RunStoreConformance that a resourcelock.Store keeps the one the lock
// package relies on; dynalease runs both against its in-memory stores and
// DynamoDB Local, and users can run them against their own implementations.
// Faulty and FaultyStore wrap any implementation to count requests and
// inject failures, including writes that land while the caller sees an
// error.
package resourcelocktest
