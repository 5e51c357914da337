package lock

import (
	"time"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// AcquireOption configures one Acquire or TryAcquire.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	sortKey         string
	data            []byte
	replaceData     bool
	deleteOnRelease bool
	onlyIfExists    bool
	attributes      map[string]any
	failIfLocked    bool
	reentrant       bool
	monitor         *sessionMonitor
	refresh         time.Duration
	additionalWait  time.Duration
	numbers, below  map[string]int64
	upgradeable     bool
}

type sessionMonitor struct {
	safeTime time.Duration
	callback func()
}

// WithSortKeyValue sets the lock's sort key value, for tables with a sort key.
func WithSortKeyValue(value string) AcquireOption {
	return func(a *acquireConfig) { a.sortKey = value }
}

// WithData stores data with the lock when it is acquired.
func WithData(data []byte) AcquireOption { return func(a *acquireConfig) { a.data = data } }

// WithReplaceData(false) keeps the data already stored in the row instead
// of writing WithData's (default true: the acquisition writes its data, or
// removes the row's when it has none).
func WithReplaceData(replace bool) AcquireOption {
	return func(a *acquireConfig) { a.replaceData = replace }
}

// WithDeleteOnRelease makes Release delete the row instead of marking it
// released. An acquisition that fails after its write (its fencing
// request failed) marks the row released; it does not delete it.
func WithDeleteOnRelease() AcquireOption { return func(a *acquireConfig) { a.deleteOnRelease = true } }

// WithAcquireOnlyIfExists makes the acquisition fail with an error matching
// resourcelock.ErrNotFound when the row does not exist, instead of
// creating it.
func WithAcquireOnlyIfExists() AcquireOption { return func(a *acquireConfig) { a.onlyIfExists = true } }

// WithAttributes stores additional attributes in the row, their values of
// the store's own kind (dynamodbstore: types.AttributeValue; the write is
// refused, with an error matching dynalease.ErrInvalid, for a value of
// another kind). Their names may not be the table's key, TTL or lock
// attributes. Attributes of an earlier holder that this acquisition does
// not name stay in the row.
func WithAttributes(attrs map[string]any) AcquireOption {
	return func(a *acquireConfig) { a.attributes = attrs }
}

// ledgerOption names a ledger's option (internal/ledger), for a refusal.
func (a *acquireConfig) ledgerOption() string { return "ledger" }

// WithReentrant lets this acquisition return a lock this client already holds
// on the same key (itself acquired with WithReentrant), raising its hold count;
// it is released when Release has been called as often. Without it, an
// Acquire of a key this client holds waits for that lock's release, in
// process. Go has no thread identity: reentrancy is a promise by the
// caller that the holders are one logical holder.
func WithReentrant() AcquireOption { return func(a *acquireConfig) { a.reentrant = true } }

// WithSessionMonitor calls callback once, in its own goroutine, if the
// time since the lock's last confirmed write passes safeTime: the lock is
// in danger of being lost. safeTime must exceed the heartbeat period and
// stay below the lock's validity (lease − safety margin).
func WithSessionMonitor(safeTime time.Duration, callback func()) AcquireOption {
	return func(a *acquireConfig) { a.monitor = &sessionMonitor{safeTime: safeTime, callback: callback} }
}

// WithRefreshPeriodFor sets how often this Acquire polls a held lock.
func WithRefreshPeriodFor(d time.Duration) AcquireOption {
	return func(a *acquireConfig) { a.refresh = d }
}

// WithAdditionalWait makes Acquire wait this much longer than the holder's
// lease before giving up with ErrLocked (default 0: a lock that is still
// held, and renewed, after one full lease of its holder is not granted).
func WithAdditionalWait(d time.Duration) AcquireOption {
	return func(a *acquireConfig) { a.additionalWait = d }
}

func (c *Client) acquireConfig(key string, opts []AcquireOption) (acquireConfig, resourcelock.Key, error) {
	a := acquireConfig{replaceData: true, refresh: c.cfg.refresh}
	for _, o := range opts {
		o(&a)
	}
	k := resourcelock.Key{Partition: key, Sort: a.sortKey}
	if err := record.CheckKey(k); err != nil {
		return a, k, refused("key", err) // the limits are resourcelock's
	}
	switch {
	case record.CheckData(a.data) != nil:
		return a, k, checkData("WithData", a.data)
	case a.refresh < rvnlease.MinPeriod:
		return a, k, invalid("WithRefreshPeriodFor", "refresh period %v is below %v", a.refresh, rvnlease.MinPeriod)
	case a.additionalWait < 0:
		return a, k, invalid("WithAdditionalWait", "additional wait %v is negative", a.additionalWait)
	}
	for name, v := range a.attributes {
		if name == "" || v == nil {
			return a, k, invalid("WithAttributes", "attribute %q has an empty name or no value (names the store keeps are refused when written)", name)
		}
	}
	if a.numbers != nil && c.cfg.ttlSlack > 0 {
		return a, k, invalid(a.ledgerOption(), "this client sets a TTL on its rows (Config.TTL): DynamoDB would delete the row's integer attributes with it")
	}
	if a.reentrant && (a.numbers != nil || a.below != nil) {
		return a, k, invalid(a.ledgerOption(), "a reentrant acquisition may return a lock held already, without writing or checking its row's integers")
	}
	for _, m := range []map[string]int64{a.numbers, a.below} {
		if _, ok := m[""]; ok {
			return a, k, invalid(a.ledgerOption(), "an integer attribute has an empty name")
		}
	}
	if m := a.monitor; m != nil {
		if m.callback == nil {
			return a, k, invalid("WithSessionMonitor", "session monitor has no callback")
		}
		if m.safeTime <= c.cfg.heartbeat || m.safeTime >= c.cfg.validity() {
			return a, k, invalid("WithSessionMonitor", "session monitor safe time %v must lie in (heartbeat period %v, lease − margin %v)",
				m.safeTime, c.cfg.heartbeat, c.cfg.validity())
		}
	}
	return a, k, nil
}
