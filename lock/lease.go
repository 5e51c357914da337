package lock

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
)

// The leases a client writes through are the store's own, bound to a key
// (keylease.Lease, setlease.Set): a holder's writes carry the
// client's TTL (the client's hold lease, shared by every lock), an
// acquisition's carry its attributes and data choice too.

// observeRequest reports one request to the store to the metrics.
func (c *Client) observeRequest(op string, err error, d time.Duration) {
	c.cfg.metrics.Request(op, metrics.RequestOutcome(err), d)
}

// writeOptions returns the options of a write: the TTL when enabled (the
// lease plus the slack, after the write's wall-clock time), and attrs.
func (c *Client) writeOptions(attrs map[string]any) keylease.Options {
	o := keylease.Options{}
	if len(attrs) > 0 {
		o.Attributes = maps.Clone(attrs)
	}
	if c.cfg.ttlSlack > 0 {
		o.TTL = timing.Add(c.cfg.lease, c.cfg.ttlSlack)
	}
	return o
}

// acquireLease returns the lease an acquisition of t writes through: with
// a's attributes, data choice and OnlyIfExists.
func (c *Client) acquireLease(t target, a *acquireConfig) keylease.Port {
	o := c.writeOptions(a.attributes)
	o.KeepData = !a.replaceData
	o.Numbers, o.Below = a.numbers, a.below
	if t.set != nil {
		return t.set.rows.With(o)
	}
	if t.shared != nil {
		return t.shared.With(o)
	}
	if t.upgrade != nil {
		return t.upgrade.With(o)
	}
	base := c.base // the hold options are an acquisition's without options
	if a.attributes != nil || !a.replaceData || a.onlyIfExists || a.numbers != nil || a.below != nil {
		o.OnlyIfExists = a.onlyIfExists
		base = c.base.WithOptions(o)
	}
	l := base.At(t.key)
	return &l
}

// holdLease returns the lease l's holder writes through: the set's, or the
// key's with the client's hold options (kept in l).
func (l *Lock) holdLease() keylease.Port {
	if set := l.claim.set; set != nil {
		return set.hold
	}
	if l.x != nil && l.x.shared != nil {
		return l.x.shared
	}
	return &l.lease
}

// belowAdmits returns the rule of an acquisition with a ledger's bounds
// (takeLedger): a row whose integer attribute is not below its bound
// cannot be taken, and waiting will not change that.
func belowAdmits(bounds map[string]int64) func(rows.Item, bool) error {
	return func(it rows.Item, missing bool) error {
		if missing {
			return nil
		}
		for name, bound := range bounds {
			if n, ok := it.Numbers[name]; ok && n >= bound {
				return &notBelowError{fmt.Sprintf("%s is %d, the bound %d", name, n, bound), maps.Clone(it.Numbers)}
			}
			if _, ok := it.Numbers[name]; !ok {
				if _, other := it.Attributes[name]; other {
					return &notBelowError{name + " is not an integer", maps.Clone(it.Numbers)}
				}
			}
		}
		return nil
	}
}

// notBelowError is the refusal of an acquisition by a ledger's bound
// (matching ledger.ErrNotBelow), with the row's integer attributes as
// found: the scheduler plans from them without reading the row again.
type notBelowError struct {
	reason  string
	numbers map[string]int64
}

func (e *notBelowError) Error() string { return ledger.ErrNotBelow.Error() + ": " + e.reason }
func (e *notBelowError) Unwrap() error { return ledger.ErrNotBelow }

// refusedNumbers is ledger.Options.Refused.
func refusedNumbers(err error) (map[string]int64, bool) {
	var nb *notBelowError
	if !errors.As(err, &nb) {
		return nil, false
	}
	return nb.numbers, true
}
