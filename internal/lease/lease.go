// Package lease holds the two pieces of RVN-lease bookkeeping that the
// election and lock packages share: what a waiter has observed of someone
// else's lease, and which of its own writes have unknown outcomes.
package lease

import (
	"time"

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
}

// Observe records a read that returned rec (or no record, when missing) at
// local time returned. It reports whether the RVN changed.
func (o *Observation) Observe(rec resourcelock.Record, missing bool, returned time.Time) bool {
	if missing {
		rec = resourcelock.Record{}
	}
	changed := !o.Known || rec.RVN != o.RVN
	if changed {
		*o = Observation{Known: true, RVN: rec.RVN, Lease: rec.LeaseDuration, SeenAt: returned}
	}
	o.Missing = missing
	o.Released = rec.Released
	o.Holder = rec.HolderIdentity
	return changed
}

// Free reports whether the lease may be created at once: no record, or a
// released one.
func (o Observation) Free() bool { return o.Known && (o.Missing || o.Released) }

// Expiry returns when the observed lease may be taken over.
func (o Observation) Expiry() time.Time { return o.SeenAt.Add(o.Lease) }

// Expired reports whether the observed, held lease may be taken over at
// local time now.
func (o Observation) Expired(now time.Time) bool {
	return o.Known && !o.Free() && !now.Before(o.Expiry())
}

// Attempts remembers the writes of one holder whose outcome is not known
// yet, by RVN, with the local time just before each was sent. A write whose
// answer was lost may still land later; finding one of these RVNs in the
// record proves that write landed, no earlier than its send time. The zero
// value is ready to use. It is a short list, not a map: a holder rarely has
// more than one or two writes in doubt, and thousands of held locks each
// keep one.
type Attempts struct {
	list []attempt
}

type attempt struct {
	rvn  string
	sent time.Time
}

// Add remembers a write of rvn about to be sent at sent.
func (a *Attempts) Add(rvn string, sent time.Time) {
	a.list = append(a.list, attempt{rvn: rvn, sent: sent})
}

// Sent returns the send time of the attempted write of rvn.
func (a *Attempts) Sent(rvn string) (time.Time, bool) {
	for _, at := range a.list {
		if at.rvn == rvn {
			return at.sent, true
		}
	}
	return time.Time{}, false
}

// Clear forgets every attempt: call it when one is confirmed, since every
// other attempt was conditioned on the state the confirmed one replaced and
// can no longer land.
func (a *Attempts) Clear() {
	clear(a.list)
	a.list = a.list[:0]
}

// Len returns how many attempts are remembered.
func (a *Attempts) Len() int { return len(a.list) }
