package resourcelock

import "time"

// Key names one lease in a Store: the partition key value and, in a table
// with a sort key, the sort key value.
type Key struct {
	Partition string
	Sort      string
}

// String returns "PARTITION" or "PARTITION/SORT".
func (k Key) String() string {
	if k.Sort == "" {
		return k.Partition
	}
	return k.Partition + "/" + k.Sort
}

// Record is the state of one lease as stored.
//
// Only HolderIdentity, RVN, LeaseDuration and Released carry meaning for
// safety. The times are wall-clock readings of the writer, kept for people
// reading the table; they are never used to decide whether a lease expired.
type Record struct {
	// HolderIdentity names the holder that wrote the record (the Java
	// client's ownerName).
	HolderIdentity string
	// RVN is the record version number: a fresh unique string (a UUID) on
	// every write.
	RVN string
	// LeaseDuration is how long the holder claims the lease after this
	// write, as measured by others from the moment they observe RVN. It is
	// stored in whole milliseconds, rounded up.
	LeaseDuration time.Duration
	// Released reports that the holder gave the lease up; the record may be
	// taken at once (see Item.Free).
	Released bool
	// Acquisitions counts the acquisitions recorded in this row: the
	// counter half of the fencing token. The store keeps it (see
	// Store.Create); a row deleted or rewritten by another client starts
	// again at 1, which is why tokens also carry a generation.
	Acquisitions int64
	// FenceGeneration is the generation half of the fencing token, zero
	// when the row has none yet (see Store.Fence). A fencing token is
	// FenceGeneration in its high 31 bits and Acquisitions in its low 32.
	FenceGeneration int64
	// AcquisitionID identifies the acquisition that made the current
	// holder hold the row: the RVN of its acquiring write. Holder writes
	// (renewals, releases) keep it, so it names one acquisition for as long
	// as it lasts; guarded writes are conditioned on it.
	AcquisitionID string
	// AcquireTime is the writer's wall-clock time when the current holder
	// acquired the lease; informational, millisecond precision.
	AcquireTime time.Time
	// RenewTime is the writer's wall-clock time of this write;
	// informational, millisecond precision.
	RenewTime time.Time
	// Data is opaque application data stored with the lease. Empty data is
	// stored as no data.
	Data []byte
	// HandedTo is the ticket of the waiter (Waiter.Ticket) that the last
	// holder handed the lease to on release, naming it HolderIdentity, and
	// that has not confirmed it yet; empty otherwise. A hand-over is
	// advice: the waiter holds only once a write of its own RVN,
	// conditioned on this record's, lands (a takeover, which clears it).
	// To everybody else a handed row is held, and is taken over like any
	// silent holder's when nobody confirms it. A write that hands the
	// row over clears AcquisitionID: the handed row is nobody's
	// acquisition, so no guarded write or Fence conditioned on an earlier
	// one passes on it.
	HandedTo string
}

// Item is one stored lease with everything else its row holds.
type Item struct {
	Key Key
	Record
	// Attributes are the row's application attributes: those written with
	// WriteOptions.Attributes, by this or another client, and any other a
	// store's rows carry besides its key, record and TTL. Their values are
	// the store's own (dynamodbstore: types.AttributeValue).
	Attributes map[string]any
	// Numbers are the row's integer attributes: those written with
	// WriteOptions.Numbers, and any other attribute a store keeps as an
	// integer besides its key, record and TTL (dynamodbstore: every N
	// attribute whose value fits an int64, which Attributes holds too).
	Numbers map[string]int64
	// Expires is the row's TTL (whole seconds), zero when it has none.
	Expires time.Time
	// Queue is the row's waiters, oldest first (see Store.Join); nil when
	// it has none. Writes of a record leave it as it is unless they carry
	// WriteOptions.Dequeue.
	Queue []Waiter
	// Readers are the row's shared holders, in ticket order, while it is
	// held by readers (HeldByReaders; see Store.Share); nil otherwise.
	Readers []Reader
	// Upgrader is the ticket of the row's one upgradeable reader (see
	// Share.Upgradeable), while it is held by readers; empty otherwise.
	Upgrader string
	// Candidates are the row's candidates for election, in ticket order
	// (see Store.Stand); nil when it has none. Writes of a record leave
	// them as they are.
	Candidates []Candidate
}

// Free reports whether the row may be taken by anyone, by Create: it is
// marked released and nobody waits in its queue. A released row with
// waiters queued belongs to the queue: it is taken by a write conditioned
// on its RVN (the queue's head, or the client that released it while
// others waited: see the lock package's fair waiting), and Join still
// appends to it.
func (it Item) Free() bool { return it.Released && len(it.Queue) == 0 }

// Waiter is one entry of a row's queue: a client waiting to hold the lease.
//
// The queue is advice for order and liveness: no entry, and no read of
// one, gives anybody a hold. A holder proves its hold only by a write of
// its own RVN (see Record.HandedTo).
type Waiter struct {
	// Ticket names this one wait: a fresh unique string (a UUID).
	Ticket string
	// Identity is the waiter's holder identity.
	Identity string
	// Lease is the lease the waiter will hold; a hand-over to it writes
	// this lease into the row.
	Lease time.Duration
	// Shared marks a reader's wait (see Store.Share): readers queued at
	// the head of the queue, before any writer, may join a row held by
	// readers (ShareJoin with Share.Ahead), and a release hands the row to
	// a reader at the head as to any waiter.
	Shared bool
}

// Dequeue is a condition on a row's queue and a change of it, carried by a
// write (WriteOptions.Dequeue): the queue must begin with Tickets, which
// the write removes, and, when All, hold nothing else. A queue that differs
// fails the write's condition (ErrConflict, carrying the row).
type Dequeue struct {
	Tickets []string
	All     bool
}
