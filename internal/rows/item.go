package rows

import (
	"time"

	"github.com/dynalease/dynalease/resourcelock"
)

// Item is one stored lease with everything else its row holds.
type Item struct {
	Key resourcelock.Key
	resourcelock.Record
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
// its own RVN (see resourcelock.Record.HandedTo).
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
// fails the write's condition (resourcelock.ErrConflict, carrying the row).
type Dequeue struct {
	Tickets []string
	All     bool
}
