// Package faulty is the test rig of a store that fails on demand: Store
// wraps any rows.Store, records every call, and applies the faults
// a test injects (an error, a write that lands while its answer is lost, a
// call held until released, a caller paused after its answer).
package faulty
