// Package rows is the storage contract of dynalease's own stores, sealed
// inside the module: the row a store keeps a lease in (Item: the record,
// its queue of waiters, its readers, its candidates, its application
// attributes and integers, its TTL), and Store, the one interface the
// DynamoDB store and the memory store implement and the kernel and every
// kind of lock read and write through. A kind of lock adds rows and rules,
// never a method here.
//
// The public face of a store is resourcelock.Store: a value made by
// dynamodbstore.New or memorystore.New carries its rows in a Seal, and
// Open returns them; nothing else opens. Users who bring other storage
// implement resourcelock.Interface, which an elector takes.
//
// The contract of resourcelock's package doc holds for every write here:
// an explicit expectation, a fresh RVN, ErrConflict changing nothing, and
// no word on whether a write that failed otherwise landed.
package rows
