// Package dynalease is leader election and distributed locking on Amazon
// DynamoDB, safe under pauses, partitions and clock skew.
//
// The library is split into small packages:
//
//   - election: an Elector in the manner of Kubernetes' client-go leader
//     election: callbacks when leadership starts and stops, IsLeader,
//     Leader, health checks, fencing tokens, guarded writes.
//   - lock: a lock client for any number of keys: acquire, heartbeats,
//     loss notification, release, fencing tokens, guarded writes; sets of
//     keys and semaphores.
//   - schedule: scheduled jobs that run each slot once across a fleet.
//   - resourcelock: the storage contract as users meet it: the record
//     behind a lease, the Store that lock and election take, and
//     Interface, client-go's shape, which another backend implements to
//     serve an elector (resourcelocktest checks one). The stores:
//     dynamodbstore (a DynamoDB table whose items the AWS Java DynamoDB
//     Lock Client reads and writes too) and memorystore (in process, for
//     unit tests).
//   - clockutil: the clock every wait takes, and a fake one for tests.
//   - metrics, metrics/prommetrics, health: what operators watch.
//
// The command (module cmd/dynalease) runs a program only while it holds a
// lock, leads, or runs a job's slot; the modules k8s, otel and gocronlease
// adapt the library to client-go and controller-runtime, OpenTelemetry and
// gocron.
//
// This package holds the one thing every kind of lock returns: the loss of
// a hold (LostError, ErrLost: stolen, expired, released elsewhere or
// deleted), and the refusal of a bad setting or argument (InvalidError,
// ErrInvalid).
//
// Leases are record-version-number (RVN) leases: no host ever compares its
// wall clock with another's. See the election and lock packages for the
// safety argument and, above all, for what a lease does not guarantee.
//
// # Words
//
// Every package uses these words in these meanings, and no other:
//
//   - Lease: the right to hold, kept in one record and renewed by its
//     holder, that others may take over only once its record version
//     number has stayed unchanged for the lease's duration on their own
//     clocks.
//   - Holder: the process that holds a lease, named by its identity (the
//     AWS Java client's ownerName); "holder identity" in a record.
//   - Lock: a lease held through package lock, on a key, a set of keys or
//     a permit. A term: a lease held through package election, from the
//     acquisition to its end.
//   - Key: the name of a lease (a partition key value, and a sort key
//     value on a table with one). Row: the item that keeps a lease's
//     record in the store; a set's lease is several rows.
//   - Record version number (RVN): a fresh unique value every write of a
//     record carries; a write is conditioned on the RVN its writer saw.
//   - Validity: how long a holder counts its lease as its own after the
//     send of its last confirmed write (a lock's lease minus its safety
//     margin; a term's RenewDeadline).
//   - Fencing token: a number given to every acquisition of a key, larger
//     than every earlier one's, for a resource to refuse older holders.
//   - Guarded write: a write of the caller's own, committed in one
//     transaction with a check that the lock or term still holds.
//   - Shared hold (a reader): a lock on a key that any number of shared
//     holders hold at once, and none with the key's exclusive lock (a
//     writer: Acquire); each reader is an entry of the key's row, with
//     its own RVN.
//   - Permit: one of a semaphore's N rows. Slot: an instant a scheduled
//     job's schedule names (never a permit's row).
//   - Queue: the waiters kept in a lock's row, oldest first; hand-over: a
//     release that names the queue's head, which holds only once its own
//     write lands; stint: how long a client may take back its own released
//     key before a release hands it over; a leader's hand-over names a
//     candidate the same way.
//   - Candidate: an elector standing on an election's row, as an entry
//     with its identity, priority and own RVN; it takes nothing. A leader
//     steps down (ends its term at a safe point and hands the lease over)
//     for a live candidate of higher priority, or on Elector.HandOver.
//   - Outcome: how an operation ended (acquired, locked, lost, ...), in
//     metrics, traces and events. Status: a scheduled slot's place in its
//     job's ledger (unfinished, succeeded, failed).
//   - Scheduler: package schedule's runner of jobs; the library's renewals
//     of held leases are renewals, never a scheduler.
package dynalease
