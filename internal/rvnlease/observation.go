package rvnlease

import (
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Observation is what a waiter knows of a lease written by others.
//
// Invariant: SeenAt is the local time at which a read first returned RVN;
// it is reset only when a read returns a different RVN (or none). A waiter
// may take the lease over, with a write conditioned on RVN, once its clock
// reaches Expiry: the holder's own lease duration after SeenAt.
type Observation struct {
	Known    bool // a read has told us something
	Missing  bool // there was no record
	Released bool // the record was marked released
	RVN      string
	Holder   string
	Lease    time.Duration // the holder's lease, from the record
	SeenAt   time.Time
	// HandedTo is the record's HandedTo: the row was handed to the waiter
	// with that ticket, who has not confirmed it.
	HandedTo string
	// Queued: the record was marked released with waiters still in its
	// queue (rows.Item.Free). Such a row is not free: it belongs
	// to the queue's head and, within its stint, to its releaser (see
	// Acquirer.Offered); to anybody else it is held, and taken over once
	// its RVN has stayed unchanged for Lease.
	Queued bool
	// Acquisitions is the record's count of acquisitions (the fencing
	// counter): it changes with a new acquisition, not with a renewal.
	Acquisitions int64
	// StintStart is when this identity's stint on the lease began, kept with
	// the row of its own release within that stint (see
	// Hold.ReleaseQueued); zero otherwise. An acquisition that takes
	// that row back continues the stint. It is cleared with the RVN.
	StintStart time.Time
	// Pace is how long one place of the row's queue took when a fair
	// waiter of this identity last measured it; zero when unknown. It
	// outlives RVN changes and acquisitions: a client that waits again
	// paces its reads by it from the start. It only sets when to read.
	Pace time.Duration
}

// Observe records a read that returned the row it (or no row, when
// missing) at local time returned. It reports whether the RVN changed.
func (o *Observation) Observe(it rows.Item, missing bool, returned time.Time) bool {
	rec := it.Record
	if missing {
		rec, it.Queue = resourcelock.Record{}, nil
	}
	changed := !o.Known || rec.RVN != o.RVN
	if changed {
		*o = Observation{Known: true, RVN: rec.RVN, Lease: rec.LeaseDuration, SeenAt: returned, Pace: o.Pace}
	}
	o.Missing = missing
	o.Released = rec.Released
	o.Holder = rec.HolderIdentity
	o.HandedTo = rec.HandedTo
	o.Queued = rec.Released && len(it.Queue) > 0
	o.Acquisitions = rec.Acquisitions
	return changed
}

// Free reports whether the lease may be created at once: no record, or a
// released one with nobody queued.
func (o Observation) Free() bool { return o.Known && (o.Missing || o.Released && !o.Queued) }

// Expiry returns when the observed lease may be taken over.
func (o Observation) Expiry() time.Time { return o.SeenAt.Add(o.Lease) }

// Expired reports whether the observed, held lease may be taken over at
// local time now.
func (o Observation) Expired(now time.Time) bool {
	return o.Known && !o.Free() && !now.Before(o.Expiry())
}
