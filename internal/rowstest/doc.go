// Package resourcelocktest checks a store against the storage contract.
//
// RunStoreConformance checks that an implementation of rows.Store
// keeps the contract the library relies on, and that a lease of the
// library over it (election's, lock's, a set of keys) behaves; dynalease
// runs it against the memory store and DynamoDB Local, and a store's author
// runs it against theirs.
package rowstest
