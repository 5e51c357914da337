// Package resourcelocktest helps test code built on resourcelock.
//
// RunConformance checks that an implementation of resourcelock.Interface
// keeps the contract the election and lock packages rely on; dynalease runs
// it against both resourcelock.Memory and DynamoDB Local, and users can run
// it against their own implementation. Faulty wraps any implementation to
// count requests and inject failures, including writes that land while the
// caller sees an error.
package resourcelocktest
