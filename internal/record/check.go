package record

import (
	"slices"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// CheckKey reports whether k is within DynamoDB's limits on key values: a
// partition value (the lock name) of 1 to MaxNameBytes bytes and a sort
// value of at most MaxSortKeyBytes. It returns an error matching
// dynalease.ErrInvalid that names the limit, or nil. Whether a sort value
// is required depends on the table; every store checks that too.
func CheckKey(k resourcelock.Key) error {
	switch {
	case k.Partition == "":
		return invalid("lock name is empty")
	case len(k.Partition) > MaxNameBytes:
		return invalid("lock name is %d bytes, over the %d-byte limit", len(k.Partition), MaxNameBytes)
	case len(k.Sort) > MaxSortKeyBytes:
		return invalid("sort key value is %d bytes, over DynamoDB's %d-byte limit", len(k.Sort), MaxSortKeyBytes)
	}
	return nil
}

// CheckIdentity reports whether id can name a holder: 1 to
// MaxIdentityBytes bytes. It returns an error matching dynalease.ErrInvalid.
func CheckIdentity(id string) error {
	switch {
	case id == "":
		return invalid("identity is empty")
	case len(id) > MaxIdentityBytes:
		return invalid("identity is %d bytes, over the %d-byte limit", len(id), MaxIdentityBytes)
	case id == rows.ReadersHolder:
		return invalid("identity %q is the one a row held by readers names", id)
	}
	return nil
}

// CheckData returns an error matching dynalease.ErrInvalid when data is
// larger than a record may carry (MaxDataBytes). Callers check data before
// any request with it, and translate the error once.
func CheckData(data []byte) error {
	if len(data) > MaxDataBytes {
		return invalid("data is %d bytes, over the %d-byte limit", len(data), MaxDataBytes)
	}
	return nil
}

// CheckPrecondition reports whether p can condition a write: it names an
// RVN. It returns an error matching dynalease.ErrInvalid.
func CheckPrecondition(p resourcelock.Precondition) error {
	if p.RVN == "" {
		return invalid("precondition has no record version number")
	}
	return nil
}

// CheckWaiter reports whether w can be written into a queue: a ticket, an
// identity within MaxIdentityBytes and a lease within MaxLeaseDuration. It
// returns an error matching dynalease.ErrInvalid.
func CheckWaiter(w rows.Waiter) error {
	if w.Ticket == "" {
		return invalid("waiter has no ticket")
	}
	if err := CheckIdentity(w.Identity); err != nil {
		return err
	}
	if w.Lease <= 0 || w.Lease > MaxLeaseDuration {
		return invalid("waiter lease %v is not within (0, %v]", w.Lease, MaxLeaseDuration)
	}
	return nil
}

// PrepareShare returns w as a store writes it (leases rounded up to whole
// milliseconds, the time at millisecond precision, the TTL at whole
// seconds), or an error matching dynalease.ErrInvalid when it cannot be
// sent (see checkShare).
func PrepareShare(w rows.Share) (rows.Share, error) {
	if err := checkShare(w); err != nil {
		return rows.Share{}, err
	}
	w.Reader.Lease = roundUpToMillisecond(w.Reader.Lease)
	w.SeenLease = roundUpToMillisecond(w.SeenLease)
	w.Time = normalizeTime(w.Time)
	w.Expires = ExpiresSeconds(w.Expires)
	return w, nil
}

// checkShare reports whether w can be sent: a known change, a reader
// with a ticket, an identity within MaxIdentityBytes, a lease and an RVN,
// the row's new RVN, a join's seen lease, an expected RVN
// where the change needs one, a Dequeue only on a take, and times that
// can be stored.
func checkShare(w rows.Share) error {
	r := w.Reader
	op := w.Op
	writes := op != rows.ShareLeave && op != rows.ShareEnd // the entry
	switch {
	case op < rows.ShareBegin || op > rows.ShareEnd:
		return invalid("share change %d is not one of ShareBegin to ShareEnd", op)
	case r.Ticket == "":
		return invalid("reader has no ticket")
	case w.RVN == "":
		return invalid("share without the row's new RVN")
	case op != rows.ShareBegin && op != rows.ShareJoin && w.Expect == "":
		return invalid("share change %d needs the RVN it expects", op)
	case op != rows.ShareTake && len(w.Dequeue) > 0:
		return invalid("only a ShareTake dequeues")
	case op != rows.ShareJoin && (w.Ahead != 0 || w.Waiter != ""):
		return invalid("only a ShareJoin expects readers queued ahead")
	case len(w.Drop) > 0 && (op == rows.ShareBegin || op == rows.ShareTake):
		return invalid("a ShareBegin or ShareTake drops no entry (it replaces them all)")
	case w.DropsUpgrader && len(w.Drop) == 0:
		return invalid("DropsUpgrader without an entry to drop")
	case w.DropsUpgrader && w.Upgradeable:
		return invalid("an upgradeable reader's change drops no upgradeable reader (there is one: itself, or none)")
	case len(w.Drop) > rows.MaxReaders:
		return invalid("drop of %d entries, over the readers' %d", len(w.Drop), rows.MaxReaders)
	case w.Ahead < 0 || w.Ahead > MaxQueueLength:
		return invalid("join expecting %d readers queued ahead, not within [0, %d]", w.Ahead, MaxQueueLength)
	case len(w.Dequeue) > MaxQueueLength:
		return invalid("dequeue of %d tickets, over the queue's %d", len(w.Dequeue), MaxQueueLength)
	case writes && r.RVN == "":
		return invalid("reader entry has no RVN")
	case writes && (r.Lease <= 0 || r.Lease > MaxLeaseDuration):
		return invalid("reader lease %v is not within (0, %v]", r.Lease, MaxLeaseDuration)
	case op == rows.ShareJoin && (w.SeenLease <= 0 || w.SeenLease > MaxLeaseDuration):
		return invalid("join's seen lease %v is not within (0, %v]", w.SeenLease, MaxLeaseDuration)
	case w.SeenLease < 0 || w.SeenLease > MaxLeaseDuration:
		return invalid("seen lease %v is not within [0, %v]", w.SeenLease, MaxLeaseDuration)
	case !w.Expires.IsZero() && (w.Expires.Year() < 1970 || w.Expires.Year() > 9999):
		return invalid("TTL %v is not a plausible epoch time", w.Expires)
	}
	if err := checkTime("Time", w.Time); err != nil {
		return err
	}
	if err := checkDrops(w); err != nil {
		return err
	}
	if !writes {
		return nil
	}
	return CheckIdentity(r.Identity)
}

// checkDrops reports whether the entries w drops can be named: each with
// a ticket and an RVN, none twice, none the writing reader's own.
func checkDrops(w rows.Share) error {
	for i, d := range w.Drop {
		switch {
		case d.Ticket == "" || d.RVN == "":
			return invalid("dropped entry %d has no ticket or RVN", i)
		case d.Ticket == w.Reader.Ticket:
			return invalid("a reader drops its own entry by ShareLeave or ShareEnd, not Drop")
		}
		for _, e := range w.Drop[:i] {
			if e.Ticket == d.Ticket {
				return invalid("entry %q dropped twice", d.Ticket)
			}
		}
	}
	return nil
}

// CheckLeave reports whether a Leave of ticket at index can be sent.
func CheckLeave(ticket string, index int) error {
	if ticket == "" {
		return invalid("leave of an empty ticket")
	}
	if index < 0 || index >= MaxQueueLength {
		return invalid("leave at index %d, outside the queue's [0, %d)", index, MaxQueueLength)
	}
	return nil
}

// CheckMany validates the keys of a GetMany or WriteMany against max, the
// store's limit, before any request: at least one, at most max, each
// valid, none twice.
func CheckMany(keys []resourcelock.Key, max int) error {
	if len(keys) == 0 {
		return invalid("no keys")
	}
	if len(keys) > max {
		return invalid("%d keys, over the %d one request may name", len(keys), max)
	}
	seen := make(map[resourcelock.Key]bool, len(keys))
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return err
		}
		if seen[k] {
			return invalid("key %s named twice", k)
		}
		seen[k] = true
	}
	return nil
}

// Prepare checks a write before a store sends it and returns its record
// and options normalized. It refuses, with an error matching
// dynalease.ErrInvalid, a key outside the limits (CheckKey), a record
// whose holder, RVN, lease, data or times are, an attribute with an empty
// name or no value, and a TTL outside the years 1970 to 9999. It rounds
// the lease up to whole milliseconds, keeps times in UTC at millisecond
// precision, stores empty data as nil and rounds the TTL up to whole
// seconds. Every store writes the normalized form, so that what a write
// returns equals what a later read returns. A store checks its own rules
// (its schema, reserved attribute names, attribute value types) besides.
func Prepare(key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (resourcelock.Record, rows.WriteOptions, error) {
	if err := CheckKey(key); err != nil {
		return resourcelock.Record{}, opts, err
	}
	if err := checkOptions(opts); err != nil {
		return resourcelock.Record{}, opts, err
	}
	opts.Expires = ExpiresSeconds(opts.Expires)
	rec, err := prepareRecord(rec)
	return rec, opts, err
}

// PrepareMany validates writes before any request, as CheckMany and
// Prepare do, and returns them as written.
func PrepareMany(writes []rows.Write, max int) ([]rows.Write, error) {
	keys := make([]resourcelock.Key, len(writes))
	for i, w := range writes {
		keys[i] = w.Key
	}
	if err := CheckMany(keys, max); err != nil {
		return nil, err
	}
	out := slices.Clone(writes)
	for i, w := range out {
		if w.Options.OnlyIfExists {
			return nil, invalid("a write of many rows cannot require an existing row")
		}
		if len(w.Options.Below) > 0 {
			return nil, invalid("a write of many rows cannot require integer attributes (Below)")
		}
		if w.Options.Dequeue != nil && w.Kind == rows.WriteRemove {
			return nil, invalid("a removal cannot dequeue")
		}
		switch w.Kind {
		case rows.WriteCreate:
		case rows.WriteUpdate, rows.WriteRemove:
			if err := CheckPrecondition(w.Expect); err != nil {
				return nil, err
			}
		default:
			return nil, invalid("unknown write kind %d", w.Kind)
		}
		if w.Kind == rows.WriteRemove {
			continue
		}
		rec, opts, err := Prepare(w.Key, w.Record, w.Options)
		if err != nil {
			return nil, err
		}
		out[i].Record, out[i].Options = rec, opts
	}
	return out, nil
}

// Acquiring reports whether w starts a new acquisition of its row: a
// create, or an update that does not name the holder it expects (a
// takeover).
func Acquiring(w rows.Write) bool {
	return w.Kind == rows.WriteCreate || (w.Kind == rows.WriteUpdate && w.Expect.HolderIdentity == "")
}

// prepareRecord checks and normalizes the record of a write (see
// Prepare).
func prepareRecord(rec resourcelock.Record) (resourcelock.Record, error) {
	if err := CheckIdentity(rec.HolderIdentity); err != nil {
		return resourcelock.Record{}, err
	}
	switch {
	case rec.RVN == "":
		return resourcelock.Record{}, invalid("record version number is empty")
	case rec.LeaseDuration <= 0:
		return resourcelock.Record{}, invalid("lease duration %v is not positive", rec.LeaseDuration)
	case rec.LeaseDuration > MaxLeaseDuration:
		return resourcelock.Record{}, invalid("lease duration %v is over the %v limit", rec.LeaseDuration, MaxLeaseDuration)
	}
	if err := CheckData(rec.Data); err != nil {
		return resourcelock.Record{}, err
	}
	if err := checkTime("acquire time", rec.AcquireTime); err != nil {
		return resourcelock.Record{}, err
	}
	if err := checkTime("renew time", rec.RenewTime); err != nil {
		return resourcelock.Record{}, err
	}
	return Normalize(rec), nil
}

// checkOptions reports whether the options can be written by any store
// (see Prepare).
func checkOptions(o rows.WriteOptions) error {
	for name, v := range o.Attributes {
		if name == "" || v == nil {
			return invalid("attribute %q has an empty name or no value", name)
		}
		if _, twice := o.Numbers[name]; twice {
			return invalid("attribute %q is both in Attributes and in Numbers", name)
		}
	}
	for _, m := range []map[string]int64{o.Numbers, o.Below} {
		if _, ok := m[""]; ok {
			return invalid("an integer attribute has an empty name")
		}
	}
	if d := o.Dequeue; d != nil {
		if len(d.Tickets) > MaxQueueLength {
			return invalid("dequeue of %d tickets, over the queue's %d", len(d.Tickets), MaxQueueLength)
		}
		if slices.Contains(d.Tickets, "") {
			return invalid("dequeue of an empty ticket")
		}
	}
	if !o.Expires.IsZero() {
		if y := o.Expires.Year(); y < 1970 || y > 9999 {
			return invalid("TTL %v is not a plausible epoch time", o.Expires)
		}
	}
	return nil
}

// checkTime refuses a time that cannot be stored (see StoredTime).
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return invalid("%s %v is outside the years 1 to 9999", what, t)
	}
	return nil
}
