// Package record holds what the stores and the kernel check and keep of
// the contract's types (package resourcelock) beside the types themselves:
// DynamoDB's limits on keys and items, the checks a write passes before
// any request, the normalized form every store writes, and the layout of
// a fencing token. The stores and the kernel share it; users never see it.
package record

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// DynamoDB's limits, which every store keeps (so that code tested on the
// memory store meets them).
const (
	// MaxNameBytes is the longest lock name, in bytes: DynamoDB's limit for
	// a partition key value.
	MaxNameBytes = 2048
	// MaxSortKeyBytes is the longest sort key value, in bytes: DynamoDB's
	// limit for a sort key value.
	MaxSortKeyBytes = 1024
	// MaxDataBytes is the largest Data a record may carry, in bytes. It
	// leaves room in DynamoDB's 400 KB item for the other attributes.
	MaxDataBytes = 300 * 1024
	// MaxIdentityBytes is the longest holder identity, in bytes.
	MaxIdentityBytes = 1024
	// MaxLeaseDuration is the longest lease a record may carry (about 146
	// years): whole milliseconds that fit the stores' integer types.
	MaxLeaseDuration = time.Duration(int64(1<<62)/int64(time.Millisecond)) * time.Millisecond
	// MaxQueueLength is the most waiters a row's queue holds. A Join to a
	// full queue is refused; the waiter then waits without a place. With
	// identities of MaxIdentityBytes (about 54 KB of queue) beside
	// MaxDataBytes of data and the longest keys, a row stays under
	// DynamoDB's 400 KB item limit.
	MaxQueueLength = 50
	// MaxMany is the most rows one GetMany or WriteMany names: DynamoDB's
	// limit on the items of one transaction.
	MaxMany = 100
	// MaxFenceMany is the most rows one Fence names: a fence of the
	// DynamoDB store writes two items per row in one transaction.
	MaxFenceMany = MaxMany / 2
)

// Fenced returns rec as a fence of generation gen leaves it: that
// generation, and the counter restarted at 2.
func Fenced(rec resourcelock.Record, gen int64) resourcelock.Record {
	rec.FenceGeneration, rec.Acquisitions = gen, 2
	return rec
}

// Normalize returns rec as a store keeps it: the lease rounded up to whole
// milliseconds, times in UTC at millisecond precision without a monotonic
// reading, empty data as nil. Every store writes the normalized form, so
// that what a write returns equals what a later read returns.
func Normalize(rec resourcelock.Record) resourcelock.Record {
	rec.LeaseDuration = roundUpToMillisecond(rec.LeaseDuration)
	rec.AcquireTime = normalizeTime(rec.AcquireTime)
	rec.RenewTime = normalizeTime(rec.RenewTime)
	if len(rec.Data) == 0 {
		rec.Data = nil
	} else {
		rec.Data = bytes.Clone(rec.Data)
	}
	return rec
}

func roundUpToMillisecond(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d
}

// StoredTime returns t as records keep it: UTC, millisecond precision, no
// monotonic reading; the zero time stays zero. It refuses, with an error
// matching dynalease.ErrInvalid that names what, a time that cannot be
// stored as an RFC 3339 string, which has a four-digit year (such a record
// could never be read back). Stores use it on the times they decode.
func StoredTime(what string, t time.Time) (time.Time, error) {
	if err := checkTime(what, t); err != nil {
		return time.Time{}, err
	}
	return normalizeTime(t), nil
}

// normalizeTime returns t as records keep it (see StoredTime).
func normalizeTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

// Clone returns a deep-enough copy of it for handing out.
func Clone(it rows.Item) rows.Item {
	it.Record = Normalize(it.Record)
	if it.Attributes != nil {
		it.Attributes = maps.Clone(it.Attributes)
	}
	if it.Numbers != nil {
		it.Numbers = maps.Clone(it.Numbers)
	}
	if it.Queue != nil {
		it.Queue = slices.Clone(it.Queue)
	}
	if it.Readers != nil {
		it.Readers = slices.Clone(it.Readers)
	}
	if it.Candidates != nil {
		it.Candidates = slices.Clone(it.Candidates)
	}
	return it
}

// Equal reports whether a and b hold the same values.
func Equal(a, b resourcelock.Record) bool {
	return a.HolderIdentity == b.HolderIdentity &&
		a.RVN == b.RVN &&
		a.LeaseDuration == b.LeaseDuration &&
		a.Released == b.Released &&
		a.Acquisitions == b.Acquisitions &&
		a.FenceGeneration == b.FenceGeneration &&
		a.AcquisitionID == b.AcquisitionID &&
		a.AcquireTime.Equal(b.AcquireTime) &&
		a.RenewTime.Equal(b.RenewTime) &&
		bytes.Equal(a.Data, b.Data) &&
		a.HandedTo == b.HandedTo
}

// Place returns the index of ticket in it's queue, or -1.
func Place(it rows.Item, ticket string) int {
	for i, w := range it.Queue {
		if w.Ticket == ticket {
			return i
		}
	}
	return -1
}

// ReadersAhead returns how many entries of q come before the entry of
// ticket (all of q when ticket is empty or not in it), and whether all of
// them are readers' (Waiter.Shared): a reader's join of a row of readers
// that expects them (rows.Share.Ahead) then jumps no writer.
func ReadersAhead(q []rows.Waiter, ticket string) (ahead int, readers bool) {
	for i, w := range q {
		if ticket != "" && w.Ticket == ticket {
			return i, true
		}
		if !w.Shared {
			return i, false
		}
	}
	return len(q), true
}

// JoinAdmits reports whether a reader's join expecting ahead readers
// queued before its own wait's entry waiter (none: nothing more) admits
// the queue q (see rows.Share.Ahead). Stores without expressions
// (the memory store) use it.
func JoinAdmits(q []rows.Waiter, ahead int, waiter string) bool {
	if len(q) < ahead {
		return false
	}
	for _, w := range q[:ahead] {
		if !w.Shared {
			return false
		}
	}
	if waiter == "" {
		return len(q) == ahead
	}
	return len(q) > ahead && q[ahead].Ticket == waiter
}

// ReaderPlace returns the index of the reader entry of ticket in it's
// readers, and -1 when it has none.
func ReaderPlace(it rows.Item, ticket string) int {
	for i, r := range it.Readers {
		if r.Ticket == ticket {
			return i
		}
	}
	return -1
}

// QueueMatches reports whether q satisfies d: it begins with d's tickets
// and, when d.All, holds nothing else. Stores without expressions (the
// memory store) use it.
func QueueMatches(q []rows.Waiter, d *rows.Dequeue) bool {
	if d == nil {
		return true
	}
	if len(q) < len(d.Tickets) || (d.All && len(q) != len(d.Tickets)) {
		return false
	}
	for i, t := range d.Tickets {
		if q[i].Ticket != t {
			return false
		}
	}
	return true
}

// ExpiresSeconds rounds a TTL up to whole seconds.
func ExpiresSeconds(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s.UTC()
}

// invalid returns an error matching dynalease.ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{dynalease.ErrInvalid}, args...)...)
}
