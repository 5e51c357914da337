package rows

import "time"

// ReadersHolder is the HolderIdentity of a row held by readers: shared
// holders, each an entry of Item.Readers. To a client that knows nothing of
// readers (the AWS Java lock client, an older dynalease) such a row is held
// by this identity, and every reader's write gives it a fresh RVN.
const ReadersHolder = "dynalease:readers"

// MaxReaders is the most entries a row's readers hold: a join to a row
// with that many is refused. About 200 bytes an entry keeps the row well
// within DynamoDB's 400 KB item.
const MaxReaders = 1000

// HeldByReaders reports whether the row is held by readers: named
// ReadersHolder and not released.
func (it Item) HeldByReaders() bool { return it.HolderIdentity == ReadersHolder && !it.Released }

// Reader is one entry of a row's readers: one shared hold of the row.
//
// An entry is advice for nobody but its writer: a reader holds only while
// writes of its own RVN land, as any holder does, and a writer takes the
// row from readers only by a write conditioned on the row's RVN (see
// Share).
type Reader struct {
	// Ticket names this one hold: a fresh unique string (a UUID).
	Ticket string
	// Identity is the reader's holder identity.
	Identity string
	// Lease is how long the reader claims its hold after each write of
	// its entry, as measured by others from the moment they observe it.
	Lease time.Duration
	// RVN is the entry's record version number, fresh on each write of
	// the entry.
	RVN string
}

// ShareOp is what a Share does to the row's readers.
type ShareOp uint8

const (
	// ShareBegin begins a read hold on a row that is missing or free
	// (Item.Free): the row becomes held by readers, with Reader its only
	// entry (entries an earlier write left are dropped), its
	// LeaseDuration Reader.Lease, and AcquireTime the write's Time; it
	// counts an acquisition.
	ShareBegin ShareOp = iota + 1
	// ShareJoin adds Reader to a row held by readers whose queue holds no
	// writer ahead of the reader (see Share.Ahead and Share.Waiter), that
	// has fewer than MaxReaders entries and whose LeaseDuration is
	// SeenLease; the row's LeaseDuration becomes the longer of SeenLease
	// and Reader.Lease.
	ShareJoin
	// ShareTake takes over a row that carries the RVN Expect, whoever
	// holds it (its RVN having stayed unchanged for its lease, as any
	// takeover's): the row becomes held by readers with Reader its only
	// entry, and the queue entries Dequeue names, which the queue must
	// begin with, leave the queue. Its LeaseDuration becomes
	// Reader.Lease; it counts an acquisition.
	ShareTake
	// ShareRenew gives Reader's entry its new RVN (Reader.RVN; the entry
	// keeps its lease) on a row held by readers where the entry carries
	// the RVN Expect.
	ShareRenew
	// ShareLeave removes Reader's entry, which must carry the RVN Expect,
	// from a row held by readers that has other entries too (besides
	// those Drop removes).
	ShareLeave
	// ShareEnd removes Reader's entry, which must carry the RVN Expect and
	// be the row's only one, and marks the row released.
	ShareEnd
)

// Share is one change of a row's readers (Store.Share). Every Share gives
// the row a fresh RVN, so that a writer that watches the row's RVN sees
// every reader's write. A Begin and a Take count an acquisition (the
// row's Acquisitions rise by one, and its AcquisitionID becomes the
// write's RVN, as a Create's do), so that the token of a hold of readers
// is above every token of the writers before it, and the hold can be
// fenced (Store.Fence with ReadersHolder and that AcquisitionID) when the
// row has no token yet; the other changes count none (a reader that
// joins readers shares their token). The row's FenceGeneration, Data and
// Attributes stay as they are.
//
// While a row is held by readers its LeaseDuration is at least every
// entry's lease: set by the write that begins the hold, raised by joins
// (which are conditioned on the lease they raise), kept by every other
// change. So a client that knows nothing of readers, and watches the
// row's RVN for the row's lease, waits out every live reader.
type Share struct {
	Op ShareOp
	// Reader is the entry written (Begin, Join, Take, Renew: with its new
	// RVN) or removed (Leave, End: its Ticket).
	Reader Reader
	// Expect is the RVN the entry must carry (Renew, Leave, End), or the
	// row (Take).
	Expect string
	// RVN is the row's new RVN.
	RVN string
	// SeenLease is the row's LeaseDuration that a join expects; a renewal,
	// a leave or an end expects it too when it is not zero (a reader that
	// sets the row's TTL from the row's lease, so that it never cuts
	// another reader's short).
	SeenLease time.Duration
	// Dequeue names the queue entries a Take removes (its head first).
	Dequeue []string
	// Ahead and Waiter are a join's condition on the queue: its first
	// Ahead entries must be readers' (Waiter.Shared), and then either the
	// entry of the joining reader's own wait, whose ticket is Waiter and
	// which the join removes, or, when Waiter is empty, nothing else. So a
	// reader joins ahead of no writer: readers queued before a writer
	// join, and every reader after it waits.
	Ahead  int
	Waiter string
	// Drop names other readers' entries, each with the RVN it must
	// carry, that a Join, Renew, Leave or End removes: entries whose RVN
	// the writer watched unchanged for the entry's lease on its own clock
	// (silent readers, whose holds have ended), taken over by the rule of
	// any takeover. Each must be in the row with its RVN, or the change is
	// refused; a Leave then needs more entries than Drop's and its own,
	// and an End exactly those. With DropsUpgrader the first of them is
	// the row's upgradeable reader (Item.Upgrader must name it), whose
	// mark the change clears.
	Drop          []Reader
	DropsUpgrader bool
	// Time is the writer's wall-clock time: the row's RenewTime.
	Time time.Time
	// Expires sets the row's TTL (rounded up to whole seconds); the zero
	// time removes it.
	Expires time.Time
	// Upgradeable makes Reader the row's one upgradeable reader
	// (Item.Upgrader): a join is then also conditioned on the row having
	// none; a begin or a take sets it (a change without it clears it);
	// Leave and End by the upgradeable reader clear it, conditioned on it
	// naming Reader.
	Upgradeable bool
}
