// Package dynamodbstore is the resourcelock.Store on an Amazon DynamoDB
// table: the only code in dynalease that knows the lock item. Its rows have
// the layout of the AWS Java DynamoDB Lock Client (key, ownerName,
// leaseDuration in milliseconds, recordVersionNumber, data, isReleased),
// so Java and Go hosts share one table; dynalease's own attributes (the
// fencing generation and counter, the acquisition, informational times)
// are optional on read.
//
// New makes a Store for lock.Config.Store and election.Config.Store;
// CreateTable the lock table and the fence table. Every conditional write
// asks for the row it found when its condition fails
// (ReturnValuesOnConditionCheckFailure ALL_OLD), so a refused write is
// settled without a second request. Writes makes a guarded write
// (resourcelock.Guarded) of a caller's own items, which lock.Lock.Guard and
// election.Elector.Guard commit in one TransactWriteItems with a check of
// the lock row; FenceWith fences a caller's own item with a fencing token.
// Both are DynamoDB's, reached through this package, not part of the
// generic contract.
//
// Errors are classified once, here: a failed condition matches
// resourcelock.ErrConflict; a missing table matches
// resourcelock.ErrPermanent, and it and the other errors that no retry can change
// (a key schema other than the table's, access denied, credentials not
// recognised) match resourcelock.ErrPermanent; throttling matches
// resourcelock.ErrThrottled.
package dynamodbstore
