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
	// taken at once.
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

// Precondition states what a write expects to find. It is passed to every
// write explicitly; stores never remember it between calls.
type Precondition struct {
	// RVN is the record version number the stored record must carry.
	RVN string
	// HolderIdentity, when set, is the holder identity the stored record
	// must name, and the record must not be released. The holder sets it
	// on its own writes (renewal, release); a takeover of a stale record
	// leaves it empty, as the AWS Java lock client does.
	HolderIdentity string
}
