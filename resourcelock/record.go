package resourcelock

import (
	"bytes"
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
)

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
	// MaxFenceGeneration is the largest generation a fencing token can
	// carry (see Record.FencingToken).
	MaxFenceGeneration = 1<<(63-counterBits) - 1
)

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
	// counter half of the fencing token. It is maintained by the store (see
	// Interface.Create); a row deleted or rewritten by another client
	// starts again at 1, which is why tokens also carry a generation.
	Acquisitions int64
	// FenceGeneration is the generation half of the fencing token, zero
	// when the row has none yet (see Store.Fence).
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

// Equal reports whether r and o hold the same values.
func (r Record) Equal(o Record) bool {
	return r.HolderIdentity == o.HolderIdentity &&
		r.RVN == o.RVN &&
		r.LeaseDuration == o.LeaseDuration &&
		r.Released == o.Released &&
		r.Acquisitions == o.Acquisitions &&
		r.FenceGeneration == o.FenceGeneration &&
		r.AcquisitionID == o.AcquisitionID &&
		r.AcquireTime.Equal(o.AcquireTime) &&
		r.RenewTime.Equal(o.RenewTime) &&
		bytes.Equal(r.Data, o.Data) &&
		r.HandedTo == o.HandedTo
}

// normalized returns rec as a store keeps it: the lease rounded up to whole
// milliseconds, times in UTC at millisecond precision without a monotonic
// reading, empty data as nil. Every implementation stores the normalized
// form, so what a write returns equals what a later Get returns.
func normalized(rec Record) Record {
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

// checkName validates a lock name before any request.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: lock name is empty", dynalease.ErrInvalid)
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("%w: lock name is %d bytes, over the %d-byte limit", dynalease.ErrInvalid, len(name), MaxNameBytes)
	}
	return nil
}

// Check reports whether k is within DynamoDB's limits on key values: a
// partition value (the lock name) of 1 to MaxNameBytes bytes and a sort
// value of at most MaxSortKeyBytes. It returns an error matching
// dynalease.ErrInvalid that names the limit, or nil. Whether a sort value is
// required depends on the table; every store checks that too.
func (k Key) Check() error {
	if err := checkName(k.Partition); err != nil {
		return err
	}
	if len(k.Sort) > MaxSortKeyBytes {
		return fmt.Errorf("%w: sort key value is %d bytes, over DynamoDB's %d-byte limit", dynalease.ErrInvalid, len(k.Sort), MaxSortKeyBytes)
	}
	return nil
}

// checkIdentity reports whether id can name a holder: 1 to
// MaxIdentityBytes bytes. It returns an error matching dynalease.ErrInvalid.
func checkIdentity(id string) error {
	if id == "" {
		return fmt.Errorf("%w: identity is empty", dynalease.ErrInvalid)
	}
	if len(id) > MaxIdentityBytes {
		return fmt.Errorf("%w: identity is %d bytes, over the %d-byte limit", dynalease.ErrInvalid, len(id), MaxIdentityBytes)
	}
	return nil
}

// fillHolder returns rec naming holder id, or an error when it names
// someone else; a holder's own write (handOver) may hand the lease over,
// naming the waiter it goes to (HandedTo).
func fillHolder(id string, rec Record, handOver bool) (Record, error) {
	switch {
	case rec.HolderIdentity == "":
		rec.HolderIdentity = id
	case rec.HolderIdentity == id, handOver && rec.HandedTo != "":
	default:
		return Record{}, fmt.Errorf("%w: record names holder %q but this lock's identity is %q", dynalease.ErrInvalid, rec.HolderIdentity, id)
	}
	return rec, nil
}

// PrepareWrite checks a write before a store sends it and returns its
// record and options normalized. It refuses, with an error matching
// dynalease.ErrInvalid, a key outside the limits (Key.Check), a record whose
// holder, RVN, lease, data or times are, an attribute with an empty name or
// no value, and a TTL outside the years 1970 to 9999. It rounds the lease
// up to whole milliseconds, keeps times in UTC at millisecond precision,
// stores empty data as nil and rounds the TTL up to whole seconds. Every
// store writes the normalized form, so that what a write returns equals
// what a later read returns. A store checks its own rules (its schema,
// reserved attribute names, attribute value types) besides.
func PrepareWrite(key Key, rec Record, opts WriteOptions) (Record, WriteOptions, error) {
	if err := key.Check(); err != nil {
		return Record{}, opts, err
	}
	if err := opts.check(); err != nil {
		return Record{}, opts, err
	}
	if opts.TTL > 0 && opts.Expires.IsZero() {
		opts.Expires = time.Now().Add(opts.TTL)
	}
	opts.Expires = expiresSeconds(opts.Expires)
	rec, err := prepareRecord(rec)
	return rec, opts, err
}

// prepareRecord checks and normalizes the record of a write (see
// PrepareWrite).
func prepareRecord(rec Record) (Record, error) {
	if err := checkIdentity(rec.HolderIdentity); err != nil {
		return Record{}, err
	}
	if rec.RVN == "" {
		return Record{}, fmt.Errorf("%w: record version number is empty", dynalease.ErrInvalid)
	}
	if rec.LeaseDuration <= 0 {
		return Record{}, fmt.Errorf("%w: lease duration %v is not positive", dynalease.ErrInvalid, rec.LeaseDuration)
	}
	if rec.LeaseDuration > MaxLeaseDuration {
		return Record{}, fmt.Errorf("%w: lease duration %v is over the %v limit", dynalease.ErrInvalid, rec.LeaseDuration, MaxLeaseDuration)
	}
	if err := CheckData(rec.Data); err != nil {
		return Record{}, err
	}
	if err := checkTime("acquire time", rec.AcquireTime); err != nil {
		return Record{}, err
	}
	if err := checkTime("renew time", rec.RenewTime); err != nil {
		return Record{}, err
	}
	return normalized(rec), nil
}

// checkTime refuses a time that cannot be stored (see StoredTime).
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("%w: %s %v is outside the years 1 to 9999", dynalease.ErrInvalid, what, t)
	}
	return nil
}

// Check reports whether p can condition a write: it names an
// RVN. It returns an error matching dynalease.ErrInvalid.
func (p Precondition) Check() error {
	if p.RVN == "" {
		return fmt.Errorf("%w: precondition has no record version number", dynalease.ErrInvalid)
	}
	return nil
}

// Fencing tokens pack (generation, counter) into one integer: generation
// in the high 31 bits, counter in the low 32.
const (
	counterBits = 32
	// maxFenceCounter is the largest counter a token can carry; an
	// acquisition that reaches it starts a new generation.
	maxFenceCounter = 1<<counterBits - 1
)

// FencingToken returns the record's fencing token, or 0 when it has none
// (no generation yet, or a counter that needs a new one). Tokens of one key
// compare like the acquisitions that issued them: a later acquisition has
// a larger token. A token is FenceGeneration in its high 31 bits and
// Acquisitions in its low 32.
func (r Record) FencingToken() int64 {
	if r.NeedsFence() {
		return 0
	}
	return r.FenceGeneration<<counterBits | r.Acquisitions
}

// NeedsFence reports whether the row needs a new fencing generation before
// its holder can have a token: it has none, its counter was just started
// (the row is new, or was rewritten without dynalease's attributes), or the
// counter is full.
func (r Record) NeedsFence() bool {
	return r.FenceGeneration <= 0 || r.FenceGeneration > MaxFenceGeneration ||
		r.Acquisitions <= 1 || r.Acquisitions > maxFenceCounter
}

// CheckData returns an error matching dynalease.ErrInvalid when data is
// larger than a record may carry (MaxDataBytes). Callers check data before
// any request with it, and translate the error once.
func CheckData(data []byte) error {
	if len(data) > MaxDataBytes {
		return fmt.Errorf("%w: data is %d bytes, over the %d-byte limit", dynalease.ErrInvalid, len(data), MaxDataBytes)
	}
	return nil
}
